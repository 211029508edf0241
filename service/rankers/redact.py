"""Secrets out of what rankduel says about a ranker: an engine's answer quoted in a 422,
a ranker failure in the API's log. Pure: no I/O.

Redacted: the values of the ranker's own header secrets (``env:NAME``, as read in this
process), credentials in URLs (``https://user:pass@host``), ``Bearer``/``Basic``
credentials, and the values of keys that name a secret (``password``, ``token``,
``api_key``, ``secret``, ``authorization``, ...) in JSON or ``key=value`` text.

>>> redact('{"error": "bad token", "token": "abc123"} https://u:pw@es:9200/x', ["zz"])
'{"error": "bad token", "token": "[redacted]"} https://[redacted]@es:9200/x'
>>> redact("Authorization: Bearer eyJhbGciOi.x.y denied", [])
'Authorization: Bearer [redacted] denied'
>>> redact("key s3cr3t-v4lue refused", ["s3cr3t-v4lue"])
'key [redacted] refused'
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from service.rankers.template import env_name

MARK = "[redacted]"
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
_SCHEME_CREDENTIALS = re.compile(r"(?i)\b(bearer|basic|token|apikey)\s+[A-Za-z0-9._~+/=-]{4,}")
_SECRET_KEY = (r"[A-Za-z0-9_-]*(?:passw(?:or)?d|secret|token|api[_-]?key|apikey|"
               r"authorization|credential|access[_-]?key|private[_-]?key|session)"
               r"[A-Za-z0-9_-]*")
_QUOTED_VALUE = re.compile(r'(?i)("' + _SECRET_KEY + r'"\s*:\s*)"(?:[^"\\]|\\.)*"')
_PLAIN_VALUE = re.compile(r"(?i)(\b" + _SECRET_KEY + r"\s*[=:]\s*)"
                          r"(?![\s\"\[{]|(?:bearer|basic|token|apikey)\s)[^\s,&;}\"]+")
#: a secret shorter than this is not searched for (it would blot out ordinary words)
MIN_SECRET_CHARS = 4


def header_secrets(request: Mapping[str, Any] | None,
                   environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of a ranker's ``env:NAME`` headers, as set in this process."""
    environ = os.environ if environ is None else environ
    out = []
    for value in ((request or {}).get("headers") or {}).values():
        var = env_name(value)
        if var is not None and environ.get(var):
            out.append(environ[var])
    return out


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the secrets above replaced by ``[redacted]``."""
    for secret in sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len,
                         reverse=True):
        text = text.replace(secret, MARK)
    text = _URL_CREDENTIALS.sub(lambda m: m.group(1) + MARK + "@", text)
    text = _SCHEME_CREDENTIALS.sub(lambda m: f"{m.group(1)} {MARK}", text)
    text = _QUOTED_VALUE.sub(lambda m: f'{m.group(1)}"{MARK}"', text)
    return _PLAIN_VALUE.sub(lambda m: m.group(1) + MARK, text)


def excerpt(body: bytes, secrets: Iterable[str] = (), limit: int = 300) -> str:
    """The first ``limit`` characters of an answer's body, as text, one line, redacted
    (the redaction runs on a longer prefix, so that a secret cut at the edge is caught)."""
    text = body[: 4 * limit].decode("utf-8", "replace")
    text = redact(" ".join(text.split()), secrets)
    return text if len(text) <= limit else text[:limit] + "…"
