"""Typed errors of the service. One Flask handler turns each into ``{"error": message}``.

Core functions raise these; request handlers never build error responses themselves.

Examples
--------
>>> err = NotFound("no experiment 'x'")
>>> err.status, err.message
(404, "no experiment 'x'")
"""

from __future__ import annotations


class ApiError(Exception):
    """An error that reaches the client with ``status`` and ``message``."""

    status: int = 500

    def __init__(self, message: str, *, headers: dict[str, str] | None = None,
                 errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}
        #: every problem found, when there were several (the body's ``errors`` list)
        self.errors = errors


class BadRequest(ApiError):
    """Malformed request: not JSON, a missing or mistyped parameter."""

    status = 400


class Unauthorized(ApiError):
    """Operator endpoint without a valid bearer token."""

    status = 401

    def __init__(self, message: str) -> None:
        super().__init__(message, headers={"WWW-Authenticate": 'Bearer realm="rankduel"'})


class Forbidden(ApiError):
    """Missing, forged or expired impression token."""

    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    """The request is well formed but the resource's state forbids it."""

    status = 409


class Unprocessable(ApiError):
    """Well-formed JSON whose content is invalid (unknown algorithm, document not shown, ...)."""

    status = 422


class UnsupportedMediaType(ApiError):
    """A request body in an encoding the endpoint does not read."""

    status = 415


class TooManyRequests(ApiError):
    """A client over its request limit; ``Retry-After`` says when to try again."""

    status = 429

    def __init__(self, message: str, *, retry_after_s: float) -> None:
        super().__init__(message, headers={"Retry-After": str(max(1, round(retry_after_s)))})


class BadGateway(ApiError):
    """Every ranker of the comparison failed."""

    status = 502


class Unavailable(ApiError):
    """Redis is unreachable."""

    status = 503
