"""The signature of a delivery, Stripe's scheme: ``X-Rankduel-Signature: t=<unix
seconds>,v1=<hex HMAC-SHA256(secret, f"{t}.{body}")>``. The receiver recomputes the HMAC
over the timestamp and the raw body it received, compares in constant time, and refuses
an old timestamp (a replay): :func:`verify`, the snippet of docs/webhooks.md.

>>> header = sign("s3cret-0123456789", b'{"a":1}', t=1700000000)
>>> header[:13]
't=1700000000,'
>>> verify("s3cret-0123456789", b'{"a":1}', header, now=1700000100)
True
>>> verify("s3cret-0123456789", b'{"a":2}', header, now=1700000100)
False
>>> verify("s3cret-0123456789", b'{"a":1}', header, now=1700001000)  # too old
False
"""

from __future__ import annotations

import hashlib
import hmac
import time

HEADER = "X-Rankduel-Signature"
#: how old a signature's timestamp :func:`verify` accepts by default (seconds)
TOLERANCE_S = 300


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def signature(secret: str, body: bytes | str, t: int) -> str:
    """The hex HMAC-SHA256 of ``f"{t}.{body}"`` under ``secret``."""
    return hmac.new(_bytes(secret), str(int(t)).encode() + b"." + _bytes(body),
                    hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes | str, t: int | None = None) -> str:
    """The ``X-Rankduel-Signature`` header value of ``body`` sent at ``t`` (now)."""
    t = int(time.time()) if t is None else int(t)
    return f"t={t},v1={signature(secret, body, t)}"


def verify(secret: str, body: bytes | str, header: str, *,
           tolerance_s: float = TOLERANCE_S, now: float | None = None) -> bool:
    """Whether ``header`` signs ``body`` under ``secret`` with a timestamp at most
    ``tolerance_s`` old (any ``v1`` of the header may match)."""
    parts = [p.partition("=") for p in header.split(",")]
    stamps = [v for k, _, v in parts if k.strip() == "t"]
    sigs = [v.strip() for k, _, v in parts if k.strip() == "v1"]
    if len(stamps) != 1 or not stamps[0].strip().isdigit() or not sigs:
        return False
    t = int(stamps[0])
    now = time.time() if now is None else now
    if abs(now - t) > tolerance_s:
        return False
    expected = signature(secret, body, t)
    return any(hmac.compare_digest(expected, s) for s in sigs)
