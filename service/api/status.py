"""Health, readiness, metrics and the OpenAPI document."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify, request

from service import metrics
from service.api.auth import require_bearer
from service.api.openapi import openapi_document
from service.errors import Unavailable
from service.runtime import runtime

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    """The process is up (no dependency checked)."""
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    """Ready to serve: Redis answers."""
    rt = runtime()
    try:
        rt.store.r.ping()
    except Exception as exc:  # any failure to reach Redis means not ready
        raise Unavailable(f"redis unreachable: {type(exc).__name__}") from None
    return jsonify({"status": "ready"})


@bp.get("/metrics")
def metrics_endpoint():
    from service.collector import StateCollector

    rt = runtime()
    # the metrics name every experiment: the scraper's token, or the operator's
    require_bearer(request.headers.get("Authorization", ""),
                   [rt.config.metrics_token, rt.config.admin_token], what="metrics token")
    body, content_type = metrics.render([StateCollector(rt.store, broker=rt.queue.broker())])
    return Response(body, content_type=content_type)


@bp.get("/openapi.json")
def openapi():
    config = runtime().config
    return jsonify(openapi_document(config.default_k, config.max_k))
