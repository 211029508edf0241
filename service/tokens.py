"""Tokens: click tokens, an HMAC that ties clicks to the impression ``/search`` issued (the
API's keys are :mod:`service.access`).

``token = expiry "." hex(HMAC-SHA256(secret, impression_id | experiment_id | expiry))``.
The expiry travels in clear so the server can check it before the MAC; the MAC covers it,
so it cannot be extended. Comparison is constant-time (``hmac.compare_digest``).

Examples
--------
>>> tok = issue_token(b"k", "imp1", "exp1", expires_at=2_000_000_000)
>>> verify_token(b"k", tok, "imp1", "exp1", now=1_900_000_000)
>>> verify_token(b"k", tok, "imp2", "exp1", now=1_900_000_000)
Traceback (most recent call last):
...
service.errors.Forbidden: invalid token for this impression
>>> verify_token(b"k", "²." + "0" * 64, "imp1", "exp1", now=0)
Traceback (most recent call last):
...
service.errors.Forbidden: malformed token: the expiry must be 1 to 12 ASCII digits
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re

from service.errors import Forbidden

#: unix seconds, ASCII digits only (``str.isdigit`` also takes '²' or '٣', which ``int``
#: refuses or reads differently); 12 digits reach the year 33658
_EXPIRY = re.compile(r"[0-9]{1,12}")
_MAC = re.compile(r"[0-9a-f]{64}")


@functools.lru_cache(maxsize=4)
def _keyed(secret: bytes) -> hmac.HMAC:
    """The HMAC state after the key (its inner and outer pads), computed once per secret;
    each token copies it."""
    return hmac.new(secret, digestmod=hashlib.sha256)


def _mac(secret: bytes, impression_id: str, experiment_id: str, expires_at: int) -> str:
    mac = _keyed(secret).copy()
    mac.update(f"{impression_id}|{experiment_id}|{expires_at}".encode())
    return mac.hexdigest()


def issue_token(secret: bytes, impression_id: str, experiment_id: str, expires_at: int) -> str:
    """The token for one impression, valid until ``expires_at`` (unix seconds)."""
    return f"{int(expires_at)}.{_mac(secret, impression_id, experiment_id, int(expires_at))}"


def verify_token(
    secret: bytes, token: object, impression_id: str, experiment_id: str, *, now: float
) -> None:
    """Raise :class:`Forbidden` unless ``token`` is valid and unexpired for the impression."""
    if not isinstance(token, str) or not token:
        raise Forbidden("missing token")
    expiry, sep, mac = token.partition(".")
    if not sep or not _MAC.fullmatch(mac):
        raise Forbidden("malformed token: expected EXPIRY.HMAC (64 hex digits)")
    if not _EXPIRY.fullmatch(expiry):
        raise Forbidden("malformed token: the expiry must be 1 to 12 ASCII digits")
    expected = _mac(secret, impression_id, experiment_id, int(expiry))
    if not hmac.compare_digest(expected, mac):
        raise Forbidden("invalid token for this impression")
    if now > int(expiry):
        raise Forbidden("token expired")


def user_hash(secret: bytes, exp_id: str, user: str | None) -> str | None:
    """What rankduel keeps of a user (the event log, the attribution index of
    :mod:`service.outcomes`): a keyed hash (the service's secret, the experiment),
    stable within the experiment, never the user id."""
    if not user:
        return None
    return hashlib.blake2b(f"{exp_id}:{user}".encode(), key=secret[:64],
                           digest_size=12).hexdigest()
