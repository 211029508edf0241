"""The Flask application factory.

``create_app(config)`` builds one process's runtime (Redis client, store, controller cache,
ranker client, task queue), registers the blueprints and installs the single
JSON error handler: every error leaves as ``{"error": "<what was wrong>"}`` with its status.

Run it with ``rankduel serve`` (gunicorn), or ``gunicorn 'service.app:create_app()'``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from functools import partial
from typing import Any

from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException

from service import metrics
from service.api import cors, search_wsgi
from service.config import Config, load_config
from service.errors import ApiError
from service.experiments.controller import Controller
from service.queue import TaskQueue
from service.rankers.allow_list import RankerPolicy
from service.rankers.client import RankerClient
from service.runtime import EXTENSION, Runtime, runtime
from service.search import outage
from service.store import Contention, ImpressionClosed, ImpressionMissing, Store, TooManyClicks
from service.store.client import STORE_ERRORS, UNREACHABLE, connect_state
from service.store.snapshot import ExperimentMissing, RankerMissing

log = logging.getLogger("rankduel.api")


def create_app(config: Config | Mapping[str, Any] | None = None) -> Flask:
    """Build the API application.

    Parameters
    ----------
    config
        A :class:`~service.config.Config`, or a mapping of settings (defaults for the
        rest; the environment is not read), or None to resolve the configuration from the
        environment (what ``gunicorn 'service.app:create_app()'`` does).
    """
    if config is None:
        config = load_config()
    elif not isinstance(config, Config):
        config = Config(**config)
    missing = [n for n in ("admin_token", "secret_key") if not getattr(config, n)]
    if missing:
        raise ValueError(
            "refusing to start without " + " and ".join(
                {"admin_token": "RANKDUEL_ADMIN_TOKEN", "secret_key": "RANKDUEL_SECRET_KEY"}[n]
                for n in missing))
    app = Flask("rankduel")
    app.json.sort_keys = False
    app.config["MAX_CONTENT_LENGTH"] = 1 << 20  # bodies are small JSON; 413 beyond 1 MiB
    timeout = config.redis_timeout_ms / 1000.0
    client = connect_state(config, socket_timeout=timeout, socket_connect_timeout=timeout,
                           health_check_interval=30)
    store = Store(client)
    from service.access.gate import Gate

    app.extensions[EXTENSION] = Runtime(
        gate=Gate(config, store.access),
        config=config,
        store=store,
        controller=Controller(store, max_age_ms=config.state_max_age_ms,
                              max_entries=config.state_cache_size),
        rankers=RankerClient(policy=RankerPolicy(config.ranker_allow)),
        queue=TaskQueue(config),
    )

    from service.api import campaigns, frontend, openapi, operator, ui
    from service.api import status as status_api

    app.register_blueprint(frontend.bp)
    app.register_blueprint(operator.bp)
    app.register_blueprint(status_api.bp)
    app.register_blueprint(campaigns.bp)
    from service.api import placements as placements_api

    app.register_blueprint(placements_api.bp)
    from service.api import webhooks as webhooks_api

    app.register_blueprint(webhooks_api.bp)

    from service.api import agreements as agreements_api

    app.register_blueprint(agreements_api.bp)
    app.register_blueprint(openapi.bp)
    app.register_blueprint(ui.bp)
    from service.api import ubi as ubi_api

    app.register_blueprint(ubi_api.bp)
    app.register_blueprint(ubi_api.admin_bp)
    from service.api import access as access_api
    from service.api import keys as keys_api

    app.register_blueprint(keys_api.bp)
    # every operation's scope, checked in one place (before any handler)
    access_api.install(app, openapi.operations(config.default_k, config.max_k))

    cors.install(app, cors.parse_origins(config.cors_origins))
    # the common search without Flask's request machinery; Server-Timing counts from here
    app.wsgi_app = search_wsgi.wrap(app, app.wsgi_app)
    app.before_request(_start_timer)
    app.after_request(_observe)
    app.register_error_handler(ApiError, _api_error)
    for exc_type, status in STORAGE_ERRORS.items():
        app.register_error_handler(exc_type, partial(_storage_error, status=status))
    app.register_error_handler(HTTPException, _http_error)
    for error in STORE_ERRORS:  # a cluster's RedisClusterException is no RedisError
        app.register_error_handler(error, _redis_error)
    app.register_error_handler(Exception, _internal_error)
    return app


#: storage errors (raised below the API) -> HTTP status; the message is the exception's
STORAGE_ERRORS: dict[type[Exception], int] = {
    ExperimentMissing: 404,
    RankerMissing: 404,
    ImpressionMissing: 404,
    ImpressionClosed: 409,
    TooManyClicks: 429,
    Contention: 503,
}


def _start_timer() -> None:
    g.t0 = time.perf_counter()


def _observe(response):
    endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
    status = str(response.status_code)
    metrics.labelled(metrics.HTTP_REQUESTS, endpoint, request.method, status).inc()
    if "t0" in g:
        metrics.labelled(metrics.HTTP_LATENCY, endpoint, status).observe(
            time.perf_counter() - g.t0)
    return response


def _api_error(exc: ApiError):
    body: dict[str, Any] = {"error": exc.message}
    if exc.errors:
        body["errors"] = exc.errors
    return jsonify(body), exc.status, exc.headers


def _storage_error(exc: Exception, *, status: int):
    return jsonify({"error": str(exc)}), status


def _http_error(exc: HTTPException):
    message = {404: "no such endpoint", 405: f"method {request.method} not allowed here"}.get(
        exc.code or 500, exc.description or exc.name)
    headers = {"Allow": exc.response.headers["Allow"]} if (
        exc.response is not None and "Allow" in exc.response.headers) else {}
    if exc.code == 405 and hasattr(exc, "valid_methods") and exc.valid_methods:
        headers["Allow"] = ", ".join(exc.valid_methods)
    return jsonify({"error": message}), exc.code or 500, headers


def _redis_error(exc: Exception):
    endpoint = request.url_rule.rule if request.url_rule is not None else "unmatched"
    log.error("redis error on %s %s: %s: %s", request.method, endpoint, type(exc).__name__,
              exc)
    if isinstance(exc, UNREACHABLE):
        outage.watch(runtime()).failed(exc)  # searches answer without the store
    # clicks, ends and outcomes are sent again (rankduel.js) within the token's life
    return (jsonify({"error": f"state store unavailable ({type(exc).__name__}); retry"}),
            503, {"Retry-After": str(outage.RETRY_AFTER_S)})


def _internal_error(exc: Exception):
    log.exception("unhandled error")
    return jsonify({"error": "internal error"}), 500
