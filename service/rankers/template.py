"""Templated rankers: calling a search engine in its own shape (pure logic, no I/O).

A ranker may carry a ``request`` template and a ``response`` mapping (see
``docs/integrating-rankers.md``); without them it is called as ``GET URL?q=TEXT&k=K`` and
answers ``{"results": [{"id": ...}, ...]}``. This module holds what a template means:

* **placeholders** ``{q}``, ``{k}``, ``{user}`` and ``{offset}`` in the string values of
  ``params``, ``headers`` and ``body`` (:func:`substitute`). Substitution is one pass, so
  the user's text is inserted verbatim (a query ``"{k}"`` stays ``"{k}"``). A string that
  is exactly ``"{k}"`` (or ``"{offset}"``) becomes the integer. ``{user}`` is empty when
  the search has no user. On page ``N`` of ``k`` results (:mod:`service.search.paging`) ``{k}``
  is ``N·k``, the depth the ranker must return from its top, and ``{offset}`` is
  ``(N-1)·k``, the results already shown (0 on the first page): information for the
  engine (a cache key, a log), not where its results should start;
* **header secrets**: a header value ``env:NAME`` is read from the process environment
  when the request is built (:func:`request_headers`); only ``env:NAME`` is stored;
* **response paths**: dot-separated keys, an integer segment indexing a list
  (:func:`lookup`); :func:`map_results` turns an engine's answer into rankduel's result
  dicts ``{"id", "url"?, "title"?, <fields>...}``;
* **validation** at creation (:func:`check_request`, :func:`check_response`): each
  problem as ``(field path, message)``.

Examples
--------
>>> substitute({"size": "{k}", "q": {"match": {"t": "{q}"}}}, q="{k} shoes", k=5)
{'size': 5, 'q': {'match': {'t': '{k} shoes'}}}
>>> lookup({"hits": {"hits": [{"_id": "a"}]}}, "hits.hits.0._id")
'a'
>>> map_results({"response": {"docs": [{"id": "d1", "t": "x"}]}},
...             {"results": "response.docs", "id": "id", "title": "t"})
[{'id': 'd1', 'title': 'x'}]
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

#: the placeholders a template may use
PLACEHOLDERS = ("q", "k", "user", "offset")
#: placeholders that, as a whole string, become an integer
INTEGER_PLACEHOLDERS = ("k", "offset")
_PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
_ENV = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_SEGMENT = re.compile(r"^[^.]+$")
#: names a result has already (a ``fields`` entry of that name is not passed through)
RESERVED_FIELDS = frozenset({"id", "rank", "url", "title"})
MAX_PATH_CHARS = 256


class MappingError(ValueError):
    """An engine's answer that does not fit the ranker's ``response`` mapping."""


class MissingSecret(ValueError):
    """A header's ``env:NAME`` whose variable is not set in this process."""


# ---------------------------------------------------------------------- placeholders
def _values(q: str, k: int, user: str | None, offset: int) -> dict[str, str]:
    return {"q": q, "k": str(int(k)), "user": user or "", "offset": str(int(offset))}


def _fill(text: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def substitute(template: Any, *, q: str, k: int, user: str | None = None,
               offset: int = 0) -> Any:
    """``template`` (any JSON value) with the placeholders of its string values filled
    in, in one pass (inserted text is never expanded again)."""
    values = _values(q, k, user, offset)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            for name in INTEGER_PLACEHOLDERS:
                if node == "{" + name + "}":
                    return int(values[name])
            return _fill(node, values)
        if isinstance(node, dict):
            return {key: walk(v) for key, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(template)


def unknown_placeholders(template: Any) -> list[str]:
    """The ``{name}`` placeholders of ``template``'s strings that are not known."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            found.extend(m for m in _PLACEHOLDER.findall(node) if m not in PLACEHOLDERS)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(template)
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------------- requests
def env_name(value: str) -> str | None:
    """``NAME`` when ``value`` is ``env:NAME``, else None."""
    m = _ENV.match(value)
    return m.group(1) if m else None


def request_headers(request: Mapping[str, Any], *, q: str, k: int, user: str | None = None,
                    offset: int = 0, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The template's headers, filled in: ``env:NAME`` read from ``environ`` (the
    process environment by default), line breaks of inserted text turned to spaces."""
    environ = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name, value in (request.get("headers") or {}).items():
        var = env_name(value)
        if var is not None:
            if var not in environ:
                raise MissingSecret(f"header {name}: environment variable {var} is not set")
            out[name] = environ[var]
            continue
        filled = substitute(value, q=q.replace("\r", " ").replace("\n", " "), k=k,
                            user=(user or "").replace("\r", " ").replace("\n", " "),
                            offset=offset)
        out[name] = str(filled)
    return out


def request_target(path: str, query: str, request: Mapping[str, Any], *, q: str, k: int,
                   user: str | None = None, offset: int = 0) -> str:
    """The request target: the URL's path and query string, then the template's
    ``params`` filled in (``q`` and ``k`` are not appended)."""
    params = substitute(request.get("params") or {}, q=q, k=k, user=user, offset=offset)
    extra = urlencode([(name, _param(v)) for name, v in params.items()])
    query = "&".join(p for p in (query, extra) if p)
    return f"{path or '/'}?{query}" if query else (path or "/")


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def request_body(request: Mapping[str, Any], *, q: str, k: int, user: str | None = None,
                 offset: int = 0) -> bytes | None:
    """The template's body as JSON bytes (None without a body)."""
    if "body" not in request or request.get("body") is None:
        return None
    body = substitute(request["body"], q=q, k=k, user=user, offset=offset)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# ---------------------------------------------------------------------- responses
def _split(path: str) -> list[str | int]:
    return [int(s) if s.isdigit() else s for s in path.split(".")]


def lookup(data: Any, path: str, *, default: Any = KeyError) -> Any:
    """The value at dot path ``path`` in ``data``; an integer segment indexes a list.
    ``default`` when a key or an index is absent (:class:`MappingError` when no default
    is given, or when the path goes through a value it cannot enter)."""
    node = data
    walked: list[str] = []
    for seg in _split(path):
        walked.append(str(seg))
        if isinstance(node, dict):
            key = str(seg)
            if key not in node:
                if default is KeyError:
                    raise MappingError(f"no value at path {'.'.join(walked)!r}")
                return default
            node = node[key]
        elif isinstance(node, list) and isinstance(seg, int):
            if seg >= len(node):
                if default is KeyError:
                    raise MappingError(f"no value at path {'.'.join(walked)!r}")
                return default
            node = node[seg]
        else:
            kind = "a list" if isinstance(node, list) else type(node).__name__
            raise MappingError(f"path {path!r} cannot go through {kind} at "
                               f"{'.'.join(walked[:-1]) or 'the top'!r}")
    return node


def map_results(data: Any, response: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An engine's decoded answer as rankduel results, by the ``response`` mapping.

    An absent ``results`` path is no results; one that is not a list, or a result
    without its ``id``, is a :class:`MappingError` naming the path."""
    items = lookup(data, response["results"], default=None)
    if items is None:
        return []
    if not isinstance(items, list):
        raise MappingError(f"results path {response['results']!r} is not a list")
    out = []
    for n, item in enumerate(items):
        doc_id = lookup(item, response["id"], default=None)
        if doc_id is None:
            raise MappingError(f"result {n} at {response['results']!r} has no id at path "
                               f"{response['id']!r}")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            raise MappingError(f"result {n}: the id at path {response['id']!r} is not a "
                               "string or an integer")
        mapped: dict[str, Any] = {}
        for name, path in (response.get("fields") or {}).items():
            if name not in RESERVED_FIELDS:  # the mapping's own names are its own
                value = lookup(item, path, default=None)
                if value is not None:
                    mapped[name] = value
        mapped["id"] = doc_id
        for name in ("url", "title"):
            if response.get(name):
                value = lookup(item, response[name], default=None)
                if value is not None:
                    mapped[name] = value
        out.append(mapped)
    return out


# ---------------------------------------------------------------------- validation
def check_path(path: str) -> str | None:
    """Why ``path`` is not a response path (None when it is one)."""
    if not path or len(path) > MAX_PATH_CHARS:
        return f"must be a dot path of 1-{MAX_PATH_CHARS} characters"
    if any(not _SEGMENT.match(s) for s in path.split(".")):
        return f"{path!r} has an empty segment (write keys separated by single dots)"
    return None


def check_request(request: Mapping[str, Any], *,
                  environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Problems of a ``request`` template as ``(field path under it, message)``."""
    environ = os.environ if environ is None else environ
    problems: list[tuple[str, str]] = []
    for where in ("params", "headers", "body"):
        for name in unknown_placeholders(request.get(where)):
            problems.append((where, f"unknown placeholder {{{name}}}; known: "
                                    f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}"))
    for name, value in (request.get("headers") or {}).items():
        if not _HEADER_NAME.match(name):
            problems.append((f"headers.{name}", "is not a valid header name"))
        if "\r" in value or "\n" in value:
            problems.append((f"headers.{name}", "must be one line"))
        var = env_name(value)
        if var is not None and var not in environ:
            problems.append((f"headers.{name}", f"environment variable {var} is not set in "
                                                "the API process"))
        elif value.startswith("env:") and var is None:
            problems.append((f"headers.{name}", "env:NAME needs a variable name (letters, "
                                                "digits, '_')"))
    return problems


def check_response(response: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Problems of a ``response`` mapping as ``(field path under it, message)``."""
    problems: list[tuple[str, str]] = []
    for name in ("results", "id", "url", "title"):
        path = response.get(name)
        if path is None:
            continue
        why = check_path(path)
        if why:
            problems.append((name, why))
    for name, path in (response.get("fields") or {}).items():
        why = check_path(path)
        if why:
            problems.append((f"fields.{name}", why))
    return problems
