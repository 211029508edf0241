"""A worker's ``/metrics`` exporter checks keys as the API does (issue 48): a stored key
with ``metrics`` (or ``admin``) is accepted, one without is 403, a revoked or wrong one
401, as are the bootstrap tokens' rules (the metrics token, the admin token)."""

from __future__ import annotations

import time

from conftest import ADMIN
from prometheus_client import CollectorRegistry, Counter
from werkzeug.test import Client as WsgiClient

from demo.client import Client
from demo.stack import wait_until
from service.config import load_config
from workers.monitoring import exporter_app


def test_the_worker_exporter_takes_metrics_keys(api, service_env):
    admin = Client(api.url, ADMIN)
    made = {}
    for name, scopes in [("scrape", ["metrics"]), ("look", ["read"]), ("gone", ["metrics"])]:
        status, body = admin.request("POST", "/keys", {"name": f"exporter-{name}",
                                                       "scopes": scopes}, admin=True)
        assert status == 201, body
        made[name] = body
    registry = CollectorRegistry()
    Counter("rankduel_exporter_probe", "a metric to find", registry=registry).inc()
    config = load_config(env=dict(service_env, RANKDUEL_METRICS_TOKEN="scrape-0123456789"))
    wsgi = WsgiClient(exporter_app(registry, config))

    def get(key: str | None):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        r = wsgi.get("/metrics", headers=headers)
        return r.status_code, r.get_data(as_text=True)

    for key in (made["scrape"]["key"], "scrape-0123456789", ADMIN):
        status, text = get(key)
        assert status == 200 and "rankduel_exporter_probe_total 1.0" in text, (status, text)
    status, text = get(made["look"]["key"])
    assert status == 403 and "needs scope 'metrics'" in text, text
    assert get(made["gone"]["key"])[0] == 200  # cached by this exporter
    assert admin.request("DELETE", f"/keys/{made['gone']['id']}", admin=True)[0] == 200
    revoked_at = time.monotonic()
    wait_until(lambda: get(made["gone"]["key"])[0] == 401, 5, "the revocation seen")
    assert time.monotonic() - revoked_at < 2.0  # as every API process
    answers = [get(k) for k in (made["gone"]["key"], None, "wrong")]
    assert [s for s, _ in answers] == [401, 401, 401]
    assert len({t for _, t in answers}) == 1  # the same answer for each
