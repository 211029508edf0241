"""A key's secret: ``rdk_<id>_<43 characters>``, 32 random bytes after its id. Only its
SHA-256 is stored; the visible prefix ``rdk_<id>`` names it in lists and logs.

>>> key_id, key = new_key()
>>> split(key) == key_id, prefix(key_id) == key[:len(prefix(key_id))]
(True, True)
>>> split("rdk_nothex_x"), split("Bearer"), split("rdk_" + "a" * 12)
(None, None, None)
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets as random

_KEY = re.compile(r"rdk_(k[0-9a-f]{12})_[A-Za-z0-9_-]{43}")


def new_key() -> tuple[str, str]:
    """A new key: ``(id, secret)``."""
    key_id = "k" + random.token_hex(6)
    return key_id, f"rdk_{key_id}_{random.token_urlsafe(32)}"


def prefix(key_id: str) -> str:
    """The visible part of key ``key_id``'s secret."""
    return f"rdk_{key_id}"


def split(key: str) -> str | None:
    """The id of a well-formed key, else None."""
    m = _KEY.fullmatch(key)
    return m.group(1) if m else None


def digest(key: str) -> str:
    """The stored form of a secret (SHA-256, hex)."""
    return hashlib.sha256(key.encode()).hexdigest()


def same(key: str, stored_digest: str) -> bool:
    """Whether ``key`` is the secret of ``stored_digest``, compared in constant time."""
    return hmac.compare_digest(digest(key).encode(), stored_digest.encode())
