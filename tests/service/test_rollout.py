"""Placements on a real API and Redis: shares, sticky assignment, control searches,
a change of share, fallback to control and the guardrail that pauses an experiment
(docs/operations/rollout.md). The rankers are the session's in-process toy rankers."""

from __future__ import annotations

import secrets
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest

from rollout import assign

USERS = [f"user-{i}" for i in range(5000)]


@pytest.fixture(scope="module")
def rollout_api(service_env):
    """The app at the default guardrail interval (5 s): a failing experiment must trip on
    the search that reaches its threshold, not at the next periodic check."""
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import load_config

    config = load_config(env=service_env)
    server = ThreadedServer(create_app(config))
    yield server
    server.close()


@pytest.fixture(scope="module")
def rc(rollout_api):
    from conftest import ADMIN

    from demo.client import Client

    return Client(rollout_api.url, ADMIN)


def ranker(server, name: str, path: str | None = None) -> dict:
    return {"name": name, "url": f"{server.url}/r/{path or name}", "timeout_ms": 2000}


def placement(rc, server, name: str) -> dict:
    status, body = rc.request("POST", "/placements", {
        "name": name, "control": ranker(server, "prod", "good")}, admin=True)
    assert status == 201, body
    return body


def experiment(rc, server, name, place, traffic, *paths, **extra) -> str:
    status, body = rc.request("POST", "/experiments", {
        "name": name, "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [ranker(server, f"{name}-{i}", p) for i, p in enumerate(paths)],
        "placement": place, "traffic": traffic, "probe": False, **extra}, admin=True)
    assert status == 201, body
    return body["id"]


def search(rc, place: str, user: str | None, q: str = "shoes") -> tuple[int, dict]:
    params = {"placement": place, "q": q, "k": 5}
    if user is not None:
        params["user"] = user
    return rc.request("GET", "/search?" + urlencode(params))


def control_list(server) -> list[str]:
    return [f"d{i:02d}" for i in range(5)]  # the toy ranker "good": d00, d01, ...


@pytest.fixture(scope="module")
def web(rc, ranker_server):
    name = f"web-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    e1 = experiment(rc, ranker_server, "ten", name, 0.1, "mid", "alt")
    e2 = experiment(rc, ranker_server, "thirty", name, 0.3, "bad", "alt")
    return name, e1, e2


def near(count: int, n: int, p: float) -> bool:
    """``count`` of ``n`` users is share ``p`` within 4.5 binomial standard deviations (a
    false alarm about once in 150,000 checks): each placement draws a random salt, so
    its users' split is a fresh draw every run (a fixed 0.015 is 2.3 sd at p = 0.3 and
    failed once, 1,577 of 5,000). A wrong range (0.1 for 0.3) is 20 sd away."""
    return abs(count / n - p) <= 4.5 * (p * (1 - p) / n) ** 0.5


def assignments(rc, name: str) -> dict[str, str | None]:
    status, state = rc.request("GET", f"/placements/{name}", admin=True)
    assert status == 200, state
    return {u: assign(state["ranges"], state["salt"], u) for u in USERS}


def test_shares_sticky_users_and_what_each_side_serves(rc, web, ranker_server):
    name, e1, e2 = web
    where = assignments(rc, name)
    n = len(USERS)
    assert near(sum(v == e1 for v in where.values()), n, 0.1)
    assert near(sum(v == e2 for v in where.values()), n, 0.3)
    # a sample through the full /search, three searches each: the same side every time
    sample = USERS[::10]

    def three(user: str) -> list[tuple[int, dict]]:
        return [search(rc, name, user) for _ in range(3)]

    with ThreadPoolExecutor(8) as pool:
        answers = dict(zip(sample, pool.map(three, sample), strict=True))
    sides = {e1: 0, e2: 0, None: 0}
    duels = 0
    for user, got in answers.items():
        assert all(status == 200 for status, _ in got), got
        seen = {body["experiment"] for _, body in got}
        assert seen == {where[user]}, (user, seen, where[user])  # stable, one side only
        for _, body in got:
            sides[body["experiment"]] += 1
            assert body["placement"] == name
            if body["experiment"] is None:  # control: the list as is, no impression
                assert body["impression_id"] is None and body["token"] is None
                assert body["rankers"] == ["prod"]
                assert [r["id"] for r in body["results"]] == control_list(ranker_server)
            else:
                assert body["impression_id"] and body["token"]
                duels += len(body["rankers"]) == 2
    assert all(sides.values()), sides
    assert duels >= 0.9 * (sides[e1] + sides[e2])  # experiment searches interleave
    # an experiment's state says where it stands
    state = rc.experiment(e2)
    assert state["rollout"]["placement"] == name
    assert state["rollout"]["share"] == pytest.approx(0.3)
    assert state["rollout"]["status"] == "running"


def test_a_search_without_user_is_drawn_per_search(rc, web):
    name, _e1, e2 = web
    got = [search(rc, name, None)[1]["experiment"] for _ in range(200)]
    assert {None, e2} <= set(got)  # 60 % control, 30 %: both seen in 200 draws


def test_growing_a_share_keeps_its_users(rc, web):
    name, e1, e2 = web
    before = assignments(rc, name)
    status, body = rc.request("PATCH", f"/experiments/{e1}", {"traffic": 0.2}, admin=True)
    assert status == 200, body
    assert body["rollout"]["share"] == pytest.approx(0.2)
    after = assignments(rc, name)
    was = [u for u, e in before.items() if e == e1]
    kept = sum(after[u] == e1 for u in was) / len(was)
    assert kept >= 0.85
    assert near(sum(v == e1 for v in after.values()), len(USERS), 0.2)
    assert all(after[u] == e2 for u, e in before.items() if e == e2)  # others untouched
    for user in was[:50]:  # the live searches agree
        assert search(rc, name, user)[1]["experiment"] == e1
    audit = rc.request("GET", f"/experiments/{e1}/audit", admin=True)[1]["audit"]
    assert any(a["action"] == "traffic_changed" and a["share_to"] == 0.2 for a in audit)


def test_shares_over_one_are_refused(rc, web, ranker_server):
    name, e1, _e2 = web
    status, body = rc.request("PATCH", f"/experiments/{e1}", {"traffic": 0.8}, admin=True)
    assert status == 409
    assert "add up to" in body["error"]
    status, body = rc.request("POST", "/experiments", {
        "name": "too-much", "algorithm": "uniform", "interleaving": "team_draft",
        "rankers": [ranker(ranker_server, "a", "good"), ranker(ranker_server, "b", "mid")],
        "placement": name, "traffic": 0.9, "probe": False}, admin=True)
    assert status == 409, body
    assert "lower one, or pause or stop" in body["error"]


def test_pause_sends_the_share_to_control_at_once(rc, ranker_server):
    name = f"pause-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exp = experiment(rc, ranker_server, "all", name, 1.0, "mid", "alt")
    assert search(rc, name, "u1")[1]["experiment"] == exp
    assert rc.request("POST", f"/experiments/{exp}/pause", admin=True)[0] == 200
    assert search(rc, name, "u1")[1]["experiment"] is None
    assert rc.request("POST", f"/experiments/{exp}/resume", admin=True)[0] == 200
    assert search(rc, name, "u1")[1]["experiment"] == exp


def test_a_pause_cut_short_is_finished_by_the_next_one(rc, ranker_server, rd):
    # the one pause (operator, guardrail): lifecycle first, then the placement. A pause
    # that stopped between the two writes leaves the experiment paused and its buckets
    # still routed to it; the next pause (here the operator's, a 409) finishes it
    from service.experiments import operations as experiments
    from service.store import Store

    name = f"cut-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exp = experiment(rc, ranker_server, "cut", name, 1.0, "mid", "alt")
    store = Store(rd)
    experiments.set_lifecycle(store, exp, "pause")  # the first write only
    status = rc.request("GET", f"/placements/{name}", admin=True)[1]["experiments"][0]["status"]
    assert status == "running"
    code, body = rc.request("POST", f"/experiments/{exp}/pause", admin=True)
    assert code == 409 and "it is paused" in body["error"]
    status = rc.request("GET", f"/placements/{name}", admin=True)[1]["experiments"][0]["status"]
    assert status == "paused" and search(rc, name, "u1")[1]["experiment"] is None
    # a second refused pause writes nothing more on the placement
    version = rc.request("GET", f"/placements/{name}", admin=True)[1]["version"]
    assert rc.request("POST", f"/experiments/{exp}/pause", admin=True)[0] == 409
    assert rc.request("GET", f"/placements/{name}", admin=True)[1]["version"] == version


def test_every_ranker_down_serves_control_and_the_guardrail_pauses(rc, ranker_server):
    name = f"down-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exp = experiment(rc, ranker_server, "dead", name, 1.0, "broken", "broken",
                     guardrails={"min_calls": 20})
    statuses, lists, sides = [], [], []
    for i in range(120):
        status, body = search(rc, name, f"u{i}")
        statuses.append(status)
        lists.append([r["id"] for r in body.get("results", [])])
        sides.append(body.get("experiment"))
    assert statuses.count(200) == len(statuses), statuses
    assert all(ids == control_list(ranker_server) for ids in lists)
    assert set(sides) == {None}
    state = rc.experiment(exp)
    assert state["comparisons"] == 0 and state["counters"].get("impressions", 0) == 0
    assert state["lifecycle"] == "paused"
    tripped = state["rollout"]["guardrail"]
    assert tripped["rule"] == "failures" and "max_failure_rate" in tripped["reason"]
    assert state["rollout"]["share"] == 0.0
    audit = rc.request("GET", f"/experiments/{exp}/audit", admin=True)[1]["audit"]
    trips = [a for a in audit if a["action"] == "guardrail_tripped"]
    assert len(trips) == 1 and trips[0]["rule"] == "failures"
    report = rc.request("GET", f"/experiments/{exp}/report", admin=True)[1]
    assert report["rollout"]["guardrail"]["reason"] == tripped["reason"]
    status, text = rc.request("GET", "/metrics", admin=True)
    assert status == 200
    assert (f'rankduel_guardrail_tripped{{experiment="{exp}",placement="{name}",'
            f'rule="failures"}} 1.0') in text
    assert f'rankduel_placement_share{{experiment="control",placement="{name}"}} 1.0' in text
    # resumed, it takes its traffic again and counts afresh
    assert rc.request("POST", f"/experiments/{exp}/resume", admin=True)[0] == 200
    state = rc.experiment(exp)
    assert state["rollout"]["guardrail"] is None and state["rollout"]["share"] == 1.0


def test_a_placement_search_needs_a_known_placement(rc):
    status, body = search(rc, "nowhere", "u1")
    assert status == 404 and "POST /placements" in body["error"]
    status, body = rc.request("GET", "/search?" + urlencode(
        {"placement": "x", "experiment": "y", "q": "q"}))
    assert status == 400 and "one of the two" in body["error"]


def test_a_ramp_moves_its_share_on_schedule(rc, ranker_server):
    import time

    name = f"ramp-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exp = experiment(rc, ranker_server, "ramp", name,
                     [{"after": "0m", "share": 0.1}, {"after": "1s", "share": 0.5}],
                     "mid", "alt")
    assert rc.experiment(exp)["rollout"]["share"] == pytest.approx(0.1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        search(rc, name, "someone")  # a search's view reallocates when a step is due
        if rc.request("GET", f"/placements/{name}", admin=True)[1]["ranges"].get(exp) \
                == [[0, 5000]]:
            break
        time.sleep(0.05)
    state = rc.request("GET", f"/placements/{name}", admin=True)[1]
    assert state["ranges"][exp] == [[0, 5000]] and state["next_change"] is None
    audit = rc.request("GET", f"/experiments/{exp}/audit", admin=True)[1]["audit"]
    steps = [a for a in audit if a["action"] == "traffic_step"]
    assert len(steps) == 1 and steps[0]["share_to"] == 0.5  # one process wrote it


def test_concurrent_changes_never_overlap(rc, ranker_server):
    """Eight threads (two API processes would do the same: one WATCH per change) change
    the shares of three experiments at once: the ranges stay disjoint and match."""
    from rollout import check_ranges

    name = f"race-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exps = [experiment(rc, ranker_server, f"r{i}", name, 0.1, "mid", "alt")
            for i in range(3)]
    shares = [0.05, 0.2, 0.3, 0.1, 0.25, 0.15, 0.3, 0.2]

    def patch(i: int) -> int:
        return rc.request("PATCH", f"/experiments/{exps[i % 3]}",
                          {"traffic": shares[i]}, admin=True)[0]

    with ThreadPoolExecutor(8) as pool:
        assert set(pool.map(patch, range(8))) == {200}
    state = rc.request("GET", f"/placements/{name}", admin=True)[1]
    ranges = check_ranges(state["ranges"])  # disjoint, or a ValueError
    for e in state["experiments"]:
        held = sum(b - a for a, b in ranges.get(e["experiment"], []))
        assert held == round(e["share"] * 10_000)


def test_the_command_line(rollout_api, rc, ranker_server, capsys):
    from conftest import ADMIN

    from cli.main import main

    name = f"cli-{secrets.token_hex(3)}"
    common = ["--api", rollout_api.url, "--token", ADMIN]
    assert main(["placement", "create", name, "--control-url",
                 f"{ranker_server.url}/r/good", "--control-name", "prod", *common]) == 0
    assert f"{name}: control prod" in capsys.readouterr().out
    exp = experiment(rc, ranker_server, "cli", name, 0.1, "mid", "alt")
    assert main(["placement", "set-traffic", exp, "0.25", *common]) == 0
    assert f"{exp}: 25.00 % now, running" in capsys.readouterr().out
    assert main(["placement", "show", name, "--json", *common]) == 0
    assert '"control_share": 0.75' in capsys.readouterr().out
    assert main(["placement", "set-traffic", exp, "0.9", *common]) == 0  # alone: fits
    assert main(["placement", "create", name, "--control-url",
                 f"{ranker_server.url}/r/good", *common]) == 2  # exists
    assert "409" in capsys.readouterr().err


def test_a_control_ranker_down_is_a_502_that_names_it(rc, ranker_server):
    name = f"ctl-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    status, body = search(rc, name, "u1")
    assert status == 200 and body["rankers"] == ["prod"]
    # a control that does not answer the test query is refused, naming it and why
    status, body = rc.request("PATCH", f"/placements/{name}",
                              {"control": ranker(ranker_server, "prod2", "broken")},
                              admin=True)
    assert status == 422, body
    assert body["error"].startswith("field 'control': the control ranker did not answer")
    assert "prod2" in body["error"] and '"probe": false' in body["error"]
    assert rc.request("GET", f"/placements/{name}", admin=True)[1]["control"]["name"] == "prod"
    # the operator may insist (probe: false); every control search is then a 502
    status, body = rc.request("PATCH", f"/placements/{name}", {
        "control": ranker(ranker_server, "prod2", "broken"), "probe": False}, admin=True)
    assert status == 200 and body["control"]["name"] == "prod2"
    assert body["control_health"] == {"calls": 0, "failures": 0, "empty": 0,
                                      "failure_rate": None}  # a new control starts afresh
    for user in ("u1", "u2", "u3"):
        status, body = search(rc, name, user)
        assert status == 502
    assert f"control ranker 'prod2' of placement '{name}'" in body["error"]
    assert "rankduel itself is up" in body["error"]

    # ... and is counted in the placement's health and metrics (each process writes its
    # counts on the first search a second after its last write)
    def health():
        search(rc, name, "u4")
        h = rc.request("GET", f"/placements/{name}", admin=True)[1]["control_health"]
        return h if h["calls"] >= 3 else None

    from helpers.wait import wait_for

    h = wait_for(health, what="the control's calls written")
    assert h["failures"] == h["calls"] and h["failure_rate"] == 1.0 and h["empty"] == 0
    text = rc.request("GET", "/metrics", admin=True)[1]
    assert f'rankduel_placement_control_failures_total{{placement="{name}"}} {h["calls"]}' in text


def test_a_new_placement_probes_its_control(rc, ranker_server):
    name = f"probe-{secrets.token_hex(3)}"
    status, body = rc.request("POST", "/placements", {
        "name": name, "control": ranker(ranker_server, "prod", "garbage")}, admin=True)
    assert status == 422 and "field 'control'" in body["error"] and "prod" in body["error"]
    assert rc.request("GET", f"/placements/{name}", admin=True)[0] == 404  # nothing made
    status, body = rc.request("POST", "/placements", {
        "name": name, "control": ranker(ranker_server, "prod", "garbage"), "probe": False},
        admin=True)
    assert status == 201 and body["control_health"]["calls"] == 0


def test_the_workers_sweep_checks_placements_nobody_searches(rc, ranker_server, rd, worker):
    """Counts past a threshold and no search: the worker's sweep pauses the experiment."""
    import time

    from service.store.keys import counters_key

    name = f"sweep-{secrets.token_hex(3)}"
    placement(rc, ranker_server, name)
    exp = experiment(rc, ranker_server, "swept", name, 0.5, "mid", "alt")
    rd.hset(counters_key(exp), mapping={"g:swept-0:calls": 300, "g:swept-0:failures": 300})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and rc.experiment(exp)["lifecycle"] != "paused":
        time.sleep(0.2)
    state = rc.experiment(exp)
    assert state["lifecycle"] == "paused"
    assert state["rollout"]["guardrail"]["ranker"] == "swept-0"
