"""API keys, scopes and the audit trail (issue 48; docs/operations/security.md), on the
live API of the session (``api``) and real Redis.

* every operation of ``/openapi.json`` walked with a key of each scope: an allowed call
  gets past authorisation, a refused one answers 403 naming the scope, and the state read
  before and after the refused calls is the same;
* 401 alike for no, a wrong, a revoked and an expired key; 422 naming the field for a bad
  key body, with nothing created;
* every change made here has its audit entry, naming the key, written in the same
  transaction as the change (``same_write`` never false); refused calls are recorded;
  the trail filters, pages and exports as NDJSON; the CLI reads it.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from conftest import ADMIN
from helpers.wait import wait_for

from demo.client import Client
from service.access import scopes as scope_rules

ROOT = Path(__file__).resolve().parents[2]
SCOPE_KEYS = ("admin", "write", "placement", "read", "frontend", "metrics")
NEEDS_SCOPE = "needs scope"


def ranker(server, name: str, path: str = "good") -> dict:
    return {"name": name, "url": f"{server.url}/r/{path}", "timeout_ms": 2000}


def make_key(admin: Client, name: str, scopes: list[str], **extra) -> dict:
    status, body = admin.request("POST", "/keys", {"name": name, "scopes": scopes, **extra},
                                 admin=True)
    assert status == 201, body
    assert body["key"].startswith(body["prefix"]) and body["state"] == "active"
    return body


def as_key(api, key: str | None) -> Client:
    """A client that sends ``key`` as its bearer (None: no Authorization header)."""
    return Client(api.url, key)


def call(api, key: str | None, method: str, path: str, body=None) -> tuple[int, object]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    return Client(api.url).request(method, path, body, headers=headers)


@pytest.fixture(scope="module")
def world(api, ranker_server):
    """A placement with an experiment on it, a webhook, a campaign, and a key of each
    scope (``placement``: ``write:placement:<the placement>``)."""
    admin = Client(api.url, ADMIN)
    place = f"acc-{secrets.token_hex(3)}"
    status, body = admin.request("POST", "/placements", {
        "name": place, "control": ranker(ranker_server, "prod")}, admin=True)
    assert status == 201, body

    def experiment(name: str, on_placement: bool = True) -> str:
        extra = {"placement": place, "traffic": 0.01} if on_placement else {}
        status, body = admin.request("POST", "/experiments", {
            "name": name, "algorithm": "uniform", "interleaving": "team_draft",
            "rankers": [ranker(ranker_server, "a", "good"), ranker(ranker_server, "b", "mid"),
                        ranker(ranker_server, "c", "alt")],
            "probe": False, **extra}, admin=True)
        assert status == 201, body
        return body["id"]

    status, hook = admin.request("POST", "/webhooks", {
        "url": f"{ranker_server.url}/hook", "events": ["verdict_certified"],
        "secret": "s" * 20}, admin=True)
    assert status == 201, hook
    status, campaign = admin.request("POST", "/judging/campaigns", {
        "name": "acc", "queries": [{"id": "Q", "text": "q", "items": [
            {"id": i, "text": f"item {i}"} for i in "abcd"]}]}, admin=True)
    assert status == 201, campaign
    scopes = {"admin": ["admin"], "write": ["write"], "placement": [f"write:placement:{place}"],
              "read": ["read"], "frontend": ["frontend"], "metrics": ["metrics"]}
    keys = {name: make_key(admin, f"test-{name}", s) for name, s in scopes.items()}
    return {"admin": admin, "place": place, "exp": experiment("walked"),
            "experiment": experiment, "hook": hook["id"], "campaign": campaign["id"],
            "keys": keys, "scopes": scopes}


# ---------------------------------------------------------------------- the walk
def _state(api, world) -> dict:
    """What the operator API says of everything (keys without their last use, which a
    refused call's authentication may update; the trail, which records refusals;
    webhooks without their delivery state, which the worker updates in the background
    as other tests' experiments send events, and no API call sets)."""
    admin = world["admin"]
    out = {}
    for path in ["/experiments", "/placements", "/webhooks", "/judging/campaigns",
                 f"/experiments/{world['exp']}", f"/placements/{world['place']}",
                 f"/webhooks/{world['hook']}", f"/judging/campaigns/{world['campaign']}",
                 f"/experiments/{world['exp']}/audit", "/agreements"]:
        status, body = admin.request("GET", path, admin=True)
        assert status == 200, (path, body)
        out[path] = body
    out["/webhooks"] = [_set_by_callers(h) for h in out["/webhooks"]["webhooks"]]
    out[f"/webhooks/{world['hook']}"] = _set_by_callers(out[f"/webhooks/{world['hook']}"])
    status, body = admin.request("GET", "/keys", admin=True)
    out["/keys"] = [{k: v for k, v in key.items() if k != "last_used"} for key in body["keys"]]
    return out


#: a webhook's fields that only its deliveries change
DELIVERY_STATE = ("failures_in_a_row", "disabled", "disabled_reason", "disabled_at")


def _set_by_callers(hook: dict) -> dict:
    return {k: v for k, v in hook.items() if k not in DELIVERY_STATE}


def _instances(doc: dict) -> list[tuple[str, str, dict]]:
    return [(path, method, op) for path, ops in doc["paths"].items()
            for method, op in ops.items()]


def _request_of(world, path: str, method: str, op: dict, victim: dict) -> tuple[str, object]:
    """A concrete request of an operation: its path filled in (changes that would
    destroy the walked objects act on ``victim`` ones), a body that fails validation
    after authorisation (``{}``), the query parameters it requires."""
    destroys = method == "delete" or (method == "post" and "requestBody" not in op)
    values = {"exp_id": victim["exp"] if destroys else world["exp"],
              "name": world["place"] if path.startswith("/placements") else "a",
              "action": "pause", "hook_id": victim["hook"] if destroys else world["hook"],
              "cid": world["campaign"], "task_id": f"{world['campaign']}.x",
              "key_id": victim["key"], "imp_id": "nothing.here"}
    filled = path
    for name, value in values.items():
        filled = filled.replace("{" + name + "}", value)
    query = {"/search": {"experiment": "no-such-experiment", "q": "q"},
             "/r": {"i": "x.y", "t": "1.ab", "d": "d", "p": "1", "u": "https://e.com/"},
             "/judging/tasks/next": {"assessor": "nobody"}}.get(path)
    if query:
        filled += "?" + urlencode(query)
    body = {} if "requestBody" in op else None
    return filled, body


def test_every_operation_with_a_key_of_each_scope(api, world, ranker_server):
    admin = world["admin"]
    doc = admin.request("GET", "/openapi.json")[1]
    walked = {"allowed": 0, "refused": 0}
    refused_calls, changes = [], []
    for path, method, op in _instances(doc):
        security = op.get("security")
        for name in SCOPE_KEYS:
            # None: open to anyone; an empty scope list: any valid key
            needed = None if security is None else (security[0]["bearer"] or ["key"])[0]
            placement = None
            if path.startswith("/placements/") or "{exp_id}" in path:
                placement = world["place"]
            elif (path == "/experiments" and method == "post") or (path == "/placements" and (
                    method == "post")):
                placement = None  # the body ({}) names none
            allowed = scope_rules.allows(world["scopes"][name], needed, placement)
            if not allowed:
                refused_calls.append((path, method, op, name))
                continue
            destroys = method == "delete" or (method == "post" and "requestBody" not in op)
            victim = {"exp": world["experiment"]("victim"),
                      "hook": admin.request("POST", "/webhooks", {
                          "url": f"{ranker_server.url}/hook", "events": ["verdict_certified"],
                          "secret": "s" * 20}, admin=True)[1]["id"],
                      "key": make_key(admin, "victim", ["read"])["id"]
                      } if destroys else {
                          "exp": world["exp"], "hook": world["hook"], "key": "k000000000000"}
            target, body = _request_of(world, path, method, op, victim)
            status, out = call(api, world["keys"][name]["key"], method.upper(), target, body)
            assert status != 401, (name, method, target, out)
            assert not (status == 403 and NEEDS_SCOPE in str(out)), (name, method, target, out)
            walked["allowed"] += 1
            if method != "get" and needed in ("write", "admin"):
                changes.append((name, op["operationId"], status))
    # every call that may change something is in the trail, naming its key, with its
    # result: "ok" in the same write as the change, or the status of its failure
    for name in ("admin", "write", "placement"):
        key = world["keys"][name]
        page = admin.request("GET", f"/audit?key={key['id']}&limit=1000", admin=True)[1]
        got = [(e["op"], e["result"]) for e in page["entries"]]
        assert all(e["who"] == {"key": key["id"], "name": key["name"]}
                   for e in page["entries"])
        # a change's entry was written in its own transaction, never after the answer
        assert not [e for e in page["entries"] if e["change"].get("same_write") is False]
        for who, op_id, status in changes:
            if who != name:
                continue
            want = "ok" if status < 400 else f"{status}:"
            assert any(o == op_id and r.startswith(want) for o, r in got), (
                name, op_id, status, got)
    assert len(changes) >= 35, changes
    before = _state(api, world)
    victim = {"exp": world["exp"], "hook": world["hook"], "key": world["keys"]["read"]["id"]}
    for path, method, op, name in refused_calls:
        target, body = _request_of(world, path, method, op, victim)
        status, out = call(api, world["keys"][name]["key"], method.upper(), target, body)
        assert status == 403 and NEEDS_SCOPE in out["error"], (name, method, target, out)
        assert world["keys"][name]["id"] in out["error"]
        walked["refused"] += 1
    assert _state(api, world) == before
    # every operation of the document was walked; each scope both allowed and refused
    assert walked["allowed"] >= len(_instances(doc)) and walked["refused"] > 30, walked
    refused_by = {name for *_, name in refused_calls}
    assert refused_by == set(SCOPE_KEYS) - {"admin"}
    # the refusals are in the trail, naming the key
    status, page = admin.request("GET", "/audit?" + urlencode(
        {"key": world["keys"]["read"]["id"], "limit": 1000}), admin=True)
    assert status == 200, page
    refused = [e for e in page["entries"] if e["result"].startswith("403")]
    assert len(refused) == sum(1 for *_, n in refused_calls if n == "read")
    assert all(e["who"] == {"key": world["keys"]["read"]["id"], "name": "test-read"}
               for e in refused)


def test_every_route_is_an_operation_with_its_scope_and_head_is_a_get(api):
    # a route outside the table would be served without any check
    from service.api.openapi import operations
    from service.app import create_app

    app = create_app(api.config)
    declared = {(op.endpoint, op.method.upper()) for op in operations(10, 100)}
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":  # Flask's own static folder
            continue
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (rule.endpoint, method) in declared, (rule.rule, method)
    for path in ("/experiments", "/keys", "/audit", "/metrics"):
        assert Client(api.url).request("HEAD", path)[0] == 401, path


def test_openapi_states_each_operations_scope(api):
    doc = Client(api.url).request("GET", "/openapi.json")[1]
    ops = {op["operationId"]: op for _, _, op in _instances(doc)}
    assert ops["createExperiment"]["security"] == [{"bearer": ["write"]}]
    assert ops["getReport"]["security"] == [{"bearer": ["read"]}]
    assert ops["createKey"]["security"] == [{"bearer": ["admin"]}]
    assert ops["metrics"]["security"] == [{"bearer": ["metrics"]}]
    assert ops["getAuditTrail"]["security"] == [{"bearer": ["read"]}]
    for browser in ("search", "recordClicks", "endImpression", "clickRedirect",
                    "recordOutcome", "receiveUbiEvents"):
        assert ops[browser]["security"] == [{"bearer": ["frontend"]}, {}], browser
    assert "security" not in ops["healthz"]


# ---------------------------------------------------------------------- 401 and 422
def test_no_wrong_revoked_or_expired_key_answer_the_same_401(api, world):
    admin = world["admin"]
    revoked = make_key(admin, "to-revoke", ["read"])
    expiring = make_key(admin, "expiring", ["read"], expires_at=int(time.time()) + 2)
    assert call(api, revoked["key"], "GET", "/experiments")[0] == 200
    assert call(api, expiring["key"], "GET", "/experiments")[0] == 200
    status, out = admin.request("DELETE", f"/keys/{revoked['id']}", admin=True)
    assert status == 200 and out["state"] == "revoked" and "key" not in out
    wrong_secret = revoked["key"][:-4] + ("AAAA" if not revoked["key"].endswith("AAAA")
                                          else "BBBB")
    live = make_key(admin, "live", ["read"])
    forged = live["key"][:-1] + ("x" if live["key"][-1] != "x" else "y")
    wait_for(lambda: call(api, expiring["key"], "GET", "/experiments")[0] != 200,
             timeout=10, what="the expired key refused")
    answers = [call(api, key, "GET", "/experiments") for key in
               [None, "wrong", "Bearer", "", revoked["key"], wrong_secret, forged,
                expiring["key"]]]
    answers.append(Client(api.url).request("GET", "/experiments",
                                           headers={"Authorization": "Basic abc"}))
    assert all(status == 401 for status, _ in answers), answers
    assert len({json.dumps(body) for _, body in answers}) == 1, answers
    status, listed = admin.request("GET", "/keys", admin=True)
    states = {k["id"]: k["state"] for k in listed["keys"]}
    assert states[revoked["id"]] == "revoked" and states[expiring["id"]] == "expired"
    assert all("key" not in k and "hash" not in k for k in listed["keys"])


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "scopes": ["root"]}, "scopes"),
    ({"name": "x", "scopes": []}, "scopes"),
    ({"name": "", "scopes": ["read"]}, "name"),
    ({"name": "   ", "scopes": ["read"]}, "name"),
    ({"name": "x" * 81, "scopes": ["read"]}, "name"),
    ({"name": "x", "scopes": "read"}, "scopes"),
    ({"name": "x", "scopes": ["read"], "expires_at": 1_000_000}, "expires_at"),
    ({"name": "x", "scopes": ["write:placement:"]}, "scopes"),
    ({"scopes": ["read"]}, "name"),
])
def test_a_bad_key_body_is_422_naming_the_field_with_nothing_created(api, body, field):
    admin = Client(api.url, ADMIN)
    before = admin.request("GET", "/keys", admin=True)[1]["keys"]
    status, out = admin.request("POST", "/keys", body, admin=True)
    assert status == 422 and field in out["error"], out
    assert admin.request("GET", "/keys", admin=True)[1]["keys"] == before


def test_a_malformed_body_is_400_before_the_scope_check(api, world):
    # the enforcement reads a placement key's body with the project's parsing
    key = world["keys"]["placement"]["key"]
    for raw in (b"{", b"[" * 5000 + b"]" * 5000, b'{"placement": NaN}'):
        status, out = Client(api.url).request(
            "POST", "/experiments", raw=raw,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        assert status == 400, (raw[:20], status, out)


def test_only_admin_manages_keys(api, world):
    for name in ("write", "read", "placement"):
        status, out = call(api, world["keys"][name]["key"], "POST", "/keys",
                           {"name": "escalate", "scopes": ["admin"]})
        assert status == 403 and "needs scope 'admin'" in out["error"], out


# ---------------------------------------------------------------------- placement keys
def test_a_placement_key_changes_its_placement_and_its_experiments_only(
        api, world, ranker_server):
    key = world["keys"]["placement"]["key"]
    other = f"other-{secrets.token_hex(3)}"
    status, out = call(api, key, "POST", "/placements",
                       {"name": other, "control": ranker(ranker_server, "prod")})
    assert status == 403 and f"'write:placement:{other}'" in out["error"], out
    status, out = call(api, key, "POST", "/experiments", {
        "name": "mine", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [ranker(ranker_server, "a"), ranker(ranker_server, "b", "mid")],
        "probe": False, "placement": world["place"], "traffic": 0.05})
    assert status == 201, out
    mine = out["id"]
    assert call(api, key, "POST", f"/experiments/{mine}/pause")[0] == 200
    assert call(api, key, "GET", f"/experiments/{mine}/report")[0] == 200
    off = world["experiment"]("off-placement", on_placement=False)
    status, out = call(api, key, "POST", f"/experiments/{off}/pause")
    assert status == 403 and "'write'" in out["error"], out
    assert call(api, key, "GET", "/experiments")[0] == 403


# ---------------------------------------------------------------------- the trail
def test_every_change_has_its_entry_naming_the_key_in_the_same_write(
        api, world, ranker_server, rd):
    admin = world["admin"]
    writer = make_key(admin, "trail-writer", ["write"])
    w = writer["key"]
    since = int(time.time()) - 1
    place = f"trail-{secrets.token_hex(3)}"
    changes = [
        ("POST", "/placements", {"name": place, "control": ranker(ranker_server, "prod")}),
        ("PATCH", f"/placements/{place}", {"salt": "new-salt"}),
        ("POST", "/experiments", {
            "name": "traced", "algorithm": "uniform", "interleaving": "team_draft",
            "rankers": [ranker(ranker_server, "a"), ranker(ranker_server, "b", "mid"),
                        ranker(ranker_server, "c", "alt")],
            "probe": False, "placement": place, "traffic": 0.1}),
    ]
    done = []
    for method, path, body in changes:
        status, out = call(api, w, method, path, body)
        assert status in (200, 201), (path, out)
        done.append(out)
    exp_id = done[-1]["id"]
    more = [
        ("PATCH", f"/experiments/{exp_id}", {"name": "traced-2"}),
        ("POST", f"/experiments/{exp_id}/rankers", {**ranker(ranker_server, "d", "d"),
                                                     "probe": False}),
        ("DELETE", f"/experiments/{exp_id}/rankers/d", None),
        ("POST", f"/experiments/{exp_id}/pause", None),
        ("POST", f"/experiments/{exp_id}/resume", None),
        ("PATCH", f"/experiments/{exp_id}", {"traffic": 0.2}),
        ("POST", "/webhooks", {"url": f"{ranker_server.url}/hook", "events": ["verdict_certified"],
                               "secret": "t" * 20}),
        ("POST", "/judging/campaigns", {"name": "traced", "queries": [
            {"id": "Q", "text": "q", "items": [{"id": i, "text": f"item {i}"}
                                               for i in "abc"]}]}),
    ]
    for method, path, body in more:
        status, out = call(api, w, method, path, body)
        assert status in (200, 201), (path, out)
        done.append(out)
    hook_id, cid = done[-2]["id"], done[-1]["id"]
    for method, path, body in [("POST", f"/judging/campaigns/{cid}/assessors", None),
                               ("DELETE", f"/webhooks/{hook_id}", None),
                               ("POST", f"/experiments/{exp_id}/stop", None),
                               ("DELETE", f"/experiments/{exp_id}", None)]:
        status, out = call(api, w, method, path, body)
        assert status in (200, 201), (path, out)
    status, page = admin.request("GET", "/audit?" + urlencode(
        {"key": "trail-writer", "since": since, "limit": 1000}), admin=True)
    assert status == 200, page
    entries = page["entries"]
    ops = [e["op"] for e in entries]
    for op in ("createPlacement", "updatePlacement", "createExperiment", "renameExperiment",
               "addRanker", "retireRanker", "changeLifecycle", "createWebhook",
               "createCampaign", "addAssessor", "deleteWebhook", "deleteExperiment"):
        assert op in ops, (op, ops)
    assert all(e["who"] == {"key": writer["id"], "name": "trail-writer"} for e in entries)
    assert all(e["result"] == "ok" and "same_write" not in e["change"] for e in entries)
    assert all(e["addr"] == "127.0.0.1" for e in entries)
    # the experiment's entries survive its deletion; the placement filter finds them
    by_exp = admin.request("GET", f"/audit?experiment={exp_id}&limit=1000", admin=True)[1]
    assert {e["action"] for e in by_exp["entries"]} >= {
        "created", "renamed", "ranker_added", "ranker_retired", "pause", "resume", "deleted"}
    by_place = admin.request("GET", f"/audit?placement={place}&limit=1000", admin=True)[1]
    assert {e["op"] for e in by_place["entries"]} >= {
        "createPlacement", "updatePlacement", "createExperiment", "changeLifecycle"}
    # the experiment's own audit list named the key too (the report's timeline)
    assert not rd.exists(f"rd:{{{exp_id}}}:audit")  # deleted with it; the trail stays
    assert rd.exists(f"rd:trail:{{{exp_id}}}")


def test_the_trail_pages_exports_ndjson_and_the_cli_reads_it(api, world, ranker_server):
    admin = world["admin"]
    writer = make_key(admin, f"pager-{secrets.token_hex(2)}", ["write"])
    ids = []
    for n in range(5):
        status, out = call(api, writer["key"], "POST", "/webhooks", {
            "url": f"{ranker_server.url}/hook", "events": ["verdict_certified"], "secret": "p" * 20,
            "description": f"n{n}"})
        assert status == 201, out
        ids.append(out["id"])
    seen, after = [], None
    while True:
        q = {"key": writer["name"], "limit": 2, **({"after": after} if after else {})}
        page = admin.request("GET", "/audit?" + urlencode(q), admin=True)[1]
        seen += page["entries"]
        if len(page["entries"]) < 2:
            break
        after = page["next"]
    assert [e["target"]["webhook"] for e in seen] == ids
    status, text = admin.request("GET", "/audit/export?" + urlencode(
        {"key": writer["id"]}), admin=True)
    assert status == 200
    lines = [json.loads(x) for x in text.splitlines()]
    assert [e["id"] for e in lines] == [e["id"] for e in seen]
    assert admin.request("GET", "/audit?after=nonsense", admin=True)[0] == 400
    proc = subprocess.run([sys.executable, "-m", "cli.main", "audit", "--api", api.url,
                           "--key", writer["id"], "--ndjson"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env={
                              "RANKDUEL_ADMIN_TOKEN": ADMIN, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["id"] for x in proc.stdout.splitlines()] == [e["id"] for e in seen]
    proc = subprocess.run([sys.executable, "-m", "cli.main", "audit", "--api", api.url,
                           "--key", writer["id"]], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={"RANKDUEL_ADMIN_TOKEN": ADMIN,
                                                      "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and writer["name"] in proc.stdout, proc.stdout
    assert proc.stdout.count("createWebhook") == 5
