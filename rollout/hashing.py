"""Sticky buckets: a user (or session) id and a placement's salt hashed into one of
:data:`BUCKETS` buckets.

The hash is GrowthBook's "version 2" hash (GrowthBook SDKs, ``growthbook/core.py``,
``gbhash(seed, value, 2)``): 32-bit FNV-1a of ``salt + id``, hashed again as its decimal
text, modulo 10,000. FNV-1a is tiny, has no dependency, and is written the same way in
any language the service may need (Python here, Lua in Redis); the second round removes
the bias the first one shows on ids that differ only in their last characters. The same
id and salt give the same bucket in every process, on every machine, forever: that is
what keeps a user in the same experiment.

Pure: no I/O.

Examples
--------
>>> fnv1a32("")
2166136261
>>> fnv1a32("a")
3826002220
>>> bucket("user-1", "web") == bucket("user-1", "web")
True
>>> 0 <= bucket("user-1", "web") < BUCKETS
True
"""

from __future__ import annotations

#: buckets of a placement: a share is a whole number of buckets (steps of 0.01 %)
BUCKETS = 10_000

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193
_MASK = 0xFFFFFFFF


def fnv1a32(text: str) -> int:
    """32-bit FNV-1a of ``text``'s UTF-8 bytes (Fowler, Noll and Vo)."""
    h = _FNV_OFFSET
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def bucket(user: str, salt: str) -> int:
    """The bucket, in ``[0, BUCKETS)``, of ``user`` on the placement salted ``salt``
    (GrowthBook's hash version 2 times :data:`BUCKETS`)."""
    return fnv1a32(str(fnv1a32(salt + user))) % BUCKETS


__all__ = ["BUCKETS", "bucket", "fnv1a32"]
