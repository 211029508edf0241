"""Cross-origin requests from search pages (``RANKDUEL_CORS_ORIGINS``).

Only the front-end routes a page calls — ``/search``, ``/clicks``,
``/impressions/ID/end``, the click redirect ``/r`` and ``/ubi/events`` — take part; the
operator API, ``/metrics`` and the rest never send an ``Access-Control-*`` header, so a
browser refuses every cross-origin call to them.

On a front-end route a request that carries an ``Origin`` header (every cross-origin
fetch, and every POST a browser sends) must come from an allowed origin or from the API's
own: otherwise 403 with a message, *before* anything is recorded — a
``navigator.sendBeacon`` or a ``text/plain`` fetch needs no preflight, so refusing only
preflights would let any page report clicks. Requests without ``Origin`` (servers,
curl) are not affected. A preflight (``OPTIONS`` with ``Access-Control-Request-Method``)
from an allowed origin answers 204 with the methods, ``Content-Type`` and a max-age.

Origins are exact ``scheme://host[:port]`` strings, comma-separated; none by default.
"""

from __future__ import annotations

from flask import Flask, Response, request

from service.errors import Forbidden

#: the endpoints (blueprint.view) a search page calls
FRONTEND = frozenset({"frontend.search", "frontend.clicks", "frontend.end", "frontend.outcomes",
                      "frontend.redirect_click", "ubi.events"})
MAX_AGE_S = 600


def parse_origins(setting: str) -> frozenset[str]:
    """``RANKDUEL_CORS_ORIGINS`` as a set of origins (trailing slashes dropped).

    >>> sorted(parse_origins("https://shop.example, http://localhost:3000/"))
    ['http://localhost:3000', 'https://shop.example']
    """
    return frozenset(o.strip().rstrip("/") for o in setting.split(",") if o.strip())


def install(app: Flask, origins: frozenset[str]) -> None:
    """Answer preflights and add the CORS headers on the front-end routes of ``app``."""

    def allowed(origin: str) -> bool:
        return origin in origins or origin == request.host_url.rstrip("/")

    @app.before_request
    def check_origin():
        if request.endpoint not in FRONTEND:
            return None
        origin = request.headers.get("Origin")
        if origin is None:
            return None
        if not allowed(origin):
            raise Forbidden(f"origin {origin[:100]!r} is not allowed to call this API "
                            "(RANKDUEL_CORS_ORIGINS)")
        if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
            resp = Response(status=204)
            resp.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
            resp.headers["Access-Control-Allow-Headers"] = "Content-Type"
            resp.headers["Access-Control-Max-Age"] = str(MAX_AGE_S)
            return resp
        return None

    @app.after_request
    def add_headers(resp: Response) -> Response:
        if request.endpoint in FRONTEND:
            resp.headers.add("Vary", "Origin")
            origin = request.headers.get("Origin")
            if origin is not None and allowed(origin):
                resp.headers["Access-Control-Allow-Origin"] = origin
        return resp
