"""A ranker's answer as a result list: the ``{"results": [...]}`` shape, or an engine's own
answer mapped by the ranker's ``response`` (:mod:`service.rankers.template`), each result
checked; and the check of a ranker's URL. Pure: no I/O."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from service.id_limits import MAX_DOC_ID_CHARS
from service.rankers import template as ranker_template


def validate_url(url: object) -> str:
    """Return ``url`` if it is an absolute http(s) URL, else raise ``ValueError``."""
    if not isinstance(url, str) or not url:
        raise ValueError("url must be a non-empty string")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be an absolute http(s) URL, got {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"url has an invalid port: {url!r}") from None
    return url



def parse_results(body: bytes, max_results: int = 1000,
                  response: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The ranker's result list (its first ``max_results`` entries), each a dict with a
    string-able ``id`` of at most :data:`MAX_DOC_ID_CHARS` characters; with ``response``,
    the engine's answer mapped by it (:func:`service.rankers.template.map_results`)."""
    data = json.loads(body)
    if response is not None:
        items = ranker_template.map_results(data, response)
    elif not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError('response is not {"results": [...]}')
    else:
        items = data["results"]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for item in items[:max_results]:  # on every search: kept to plain, cheap checks
        doc = item.get("id") if isinstance(item, dict) else None
        if type(doc) is str:
            key = doc
        elif isinstance(doc, str | int) and not isinstance(doc, bool):
            key = str(doc)
        else:
            raise ValueError("every result needs an id (string or integer)")
        if len(key) > MAX_DOC_ID_CHARS:
            raise ValueError(f"a result id is longer than {MAX_DOC_ID_CHARS} characters")
        if key in seen:  # a ranker listing a document twice: keep the first
            continue
        seen.add(key)
        out.append(item)
    return out

