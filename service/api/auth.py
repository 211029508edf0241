"""Bearer-token checks of the operator API and of ``/metrics`` (the API's and a worker's)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from service.errors import Unauthorized


def bearer_token(header: str) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; :class:`Unauthorized`
    saying what is wrong with any other."""
    scheme, _, token = header.partition(" ")
    if not header:
        raise Unauthorized("missing Authorization: Bearer token")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Authorization must be 'Bearer <token>'")
    return token.strip()


def require_bearer(header: str, accepted: Iterable[str], *, what: str) -> None:
    """Pass when ``header`` carries one of the non-empty ``accepted`` tokens (compared in
    constant time); :class:`Unauthorized` otherwise. With no token configured nothing
    passes: a forgotten setting closes the door rather than opening it.

    >>> require_bearer("Bearer s3cret", ["", "s3cret"], what="metrics token")
    >>> require_bearer("Bearer nope", ["s3cret"], what="admin token")
    Traceback (most recent call last):
    ...
    service.errors.Unauthorized: invalid admin token
    """
    given = bearer_token(header).encode()
    ok = False
    for token in accepted:
        if token:
            ok |= hmac.compare_digest(given, token.encode())
    if not ok:
        raise Unauthorized(f"invalid {what}")
