"""``GET /search`` without Flask's request machinery: the path every search takes.

Routing a request, building its request object and context, running the app's
before/after hooks and building a response object cost about as much CPU as everything
a placement's control search does itself. So :func:`wrap` puts a plain WSGI function in
front of the Flask app that serves the common search directly:

* ``GET /search`` with no ``Origin`` header (a server-side front end: cross-origin calls
  from a browser take Flask's path, with its CORS checks and headers);
* a first page whose query :func:`~service.api.search_query.parse_search_query` accepts
  on its fast path (the parameters of the common case, each within its bounds).

Everything else, and anything the fast parse cannot take, goes to Flask untouched,
before anything is done. What the fast path does is what Flask's route does
(:func:`service.api.frontend.search`): the same front-end key check, the same search,
the same JSON bytes and headers (``Content-Type``, ``Content-Length``, ``Vary: Origin``,
``Server-Timing``), the same metrics (``rankduel_http_requests_total``,
``rankduel_http_request_duration_seconds``, ``rankduel_search_overhead_seconds``). An
error raised by the search is answered by the app's own error handlers, in a request
context made for it, so error answers are Flask's too (``tests/service`` compares both
paths).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl

from flask import Flask, g
from werkzeug.datastructures import ImmutableMultiDict

from service import metrics
from service.api.auth import frontend_key
from service.api.json_response import json_bytes
from service.api.search_query import parse_search_query
from service.errors import Forbidden
from service.placements import search as placement_search
from service.runtime import EXTENSION
from service.search import outage
from service.search.ranker_health import SearchTiming

#: the route and status label the Flask path gives a search's metrics
ENDPOINT = "/search"


def wrap(app: Flask, flask_wsgi: Callable) -> Callable:
    """The WSGI application: the fast path for the common search, ``flask_wsgi`` (the
    app's own WSGI callable) for every other request."""
    rt = app.extensions[EXTENSION]
    config = rt.config
    placement_search.cache(rt)  # every placement's view, kept for an outage's searches
    ok_requests = metrics.labelled(metrics.HTTP_REQUESTS, ENDPOINT, "GET", "200")
    ok_latency = metrics.labelled(metrics.HTTP_LATENCY, ENDPOINT, "200")

    def application(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        t0 = environ["rankduel.t0"] = time.perf_counter()
        if (environ.get("PATH_INFO") != "/search" or environ.get("REQUEST_METHOD") != "GET"
                or "HTTP_ORIGIN" in environ):
            return flask_wsgi(environ, start_response)
        qs = environ.get("QUERY_STRING", "")
        if not qs.isascii():
            return flask_wsgi(environ, start_response)
        # request.args, exactly as werkzeug builds it
        args = ImmutableMultiDict(parse_qsl(qs, keep_blank_values=True,
                                            errors="werkzeug.url_quote"))
        try:  # a next page's parameters are not the fast parse's: Flask's route
            parsed = parse_search_query(args, config.default_k, config.max_k,
                                        fast_only=True)
        except Exception:  # e.g. a bad segment: Flask's path answers it
            parsed = None
        if parsed is None:  # not the common case: the schema's path says what is wrong
            return flask_wsgi(environ, start_response)
        timing = SearchTiming()
        keyed = False
        try:
            try:
                keyed = frontend_key(rt, environ.get("HTTP_AUTHORIZATION"))
            except Forbidden:  # Flask's path refuses it, and records the refusal
                return flask_wsgi(environ, start_response)
            if parsed.placement is not None:
                out = placement_search.search(rt, parsed.placement, parsed.q, parsed.k,
                                              parsed.user or None, timing, parsed.segments)
            else:
                out = outage.search_experiment(rt, parsed.experiment, parsed.q, parsed.k,
                                               parsed.user or None, timing, parsed.segments)
        except Exception as exc:
            return _error(app, environ, start_response, exc, t0, timing, keyed)
        body = json_bytes(out)
        total = time.perf_counter() - t0
        rankers = min(timing.rankers_s, total)
        ours = total - rankers
        start_response("200 OK", [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Server-Timing", f"rankers;dur={rankers * 1e3:.2f}, "
                              f"rankduel;dur={ours * 1e3:.2f}"),
            ("Vary", "Origin"),
        ])
        metrics.SEARCH_OVERHEAD.observe(ours)
        ok_requests.inc()
        ok_latency.observe(time.perf_counter() - t0)
        return [body]

    return application


def _error(app: Flask, environ: dict[str, Any], start_response: Callable, exc: Exception,
           t0: float, timing: SearchTiming, keyed: bool) -> Iterable[bytes]:
    """Answer ``exc`` as Flask's route would: the app's error handlers and after-request
    hooks, in a request context made for it."""
    with app.request_context(environ):
        g.t0, g.search_timing, g.frontend_keyed = t0, timing, keyed
        try:
            rv = app.handle_user_exception(exc)
        except Exception as unhandled:  # as Flask does: its 500 answer
            rv = app.handle_exception(unhandled)
        response = app.finalize_request(rv)
        return response(environ, start_response)
