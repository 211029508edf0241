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
from service.store.server_checks import EvictionCollector, evicted_keys

bp = Blueprint("health", __name__)
OPS = Operations(bp)


@OPS.get("/healthz", "healthz", "Liveness (no dependency checked)",
    responses={200: s.Healthy})
def healthz():
    """The process is up (no dependency checked)."""
    return jsonify({"status": "ok"})


@OPS.get("/readyz", "readyz", "Readiness (Redis reachable, no key evicted)",
    responses={200: s.Ready, 503: None})
def readyz():
    """Ready to serve: Redis answers and has evicted no key (an evicting Redis loses
    rankduel's state silently: :mod:`service.store.server_checks`)."""
    rt = runtime()
    try:
        evicted = evicted_keys(rt.store.r)
    except Exception as exc:  # any failure to reach Redis means not ready
        raise Unavailable(f"redis unreachable: {type(exc).__name__}") from None
    if evicted:
        raise Unavailable(f"Redis has evicted {evicted} keys: rankduel's state may be lost; "
                          f"set maxmemory-policy noeviction (docs/operations/outages.md)")
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
                                         MetricsCollector(rt.store),
                                         EvictionCollector(rt.store.r)])
    return Response(body, content_type=content_type)
