"""Health, readiness and metrics (the OpenAPI document: :mod:`service.api.openapi`)."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from service import metrics
from service import schemas as s
from service.api.spec import (
    Operations,
)
from service.errors import Unavailable
from service.runtime import runtime

bp = Blueprint("health", __name__)
OPS = Operations(bp)


@OPS.get("/healthz", "healthz", "Liveness (no dependency checked)",
    responses={200: s.Healthy})
def healthz():
    """The process is up (no dependency checked)."""
    return jsonify({"status": "ok"})


@OPS.get("/readyz", "readyz", "Readiness (Redis reachable)",
    responses={200: s.Ready, 503: None})
def readyz():
    """Ready to serve: Redis answers."""
    rt = runtime()
    try:
        rt.store.r.ping()
    except Exception as exc:  # any failure to reach Redis means not ready
        raise Unavailable(f"redis unreachable: {type(exc).__name__}") from None
    return jsonify({"status": "ready"})


@OPS.get("/metrics", "metrics",
    "Prometheus metrics (a key with the metrics scope: the metrics token, or the admin "
    "token)", operator=True, scope="metrics", responses={200: "text/plain", 401: None, 503: None})
def metrics_endpoint():
    from service.experiments.collector import StateCollector
    from service.placements.collector import RolloutCollector
    from service.reports.metric_collector import MetricsCollector

    rt = runtime()
    body, content_type = metrics.render([StateCollector(rt.store, broker=rt.queue.broker()),
                                         RolloutCollector(rt.store),
                                         MetricsCollector(rt.store)])
    return Response(body, content_type=content_type)
