"""Judging campaigns through the live service (issue 14): the real API on a loopback
port, the session's real Redis and Celery worker, simulated assessors — some careless —
and the judging page in a real headless Chromium.

The pools are generated here: items ``q<k>-<n>`` of a planted total order (item 0 best),
plus an exact duplicate of one item (§5.2: merged before judging); each query has test
pairs (its best item against an off-topic text).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import requests
from conftest import ADMIN

from demo.client import Client
from demo.stack import wait_until

N_ITEMS = 6


def pools(n_queries: int = 2, n_items: int = N_ITEMS) -> list[dict]:
    out = []
    for k in range(n_queries):
        items = [{"id": f"q{k}-{n}", "text": f"answer {n} to question {k}"}
                 for n in range(n_items)]
        items.append({"id": f"q{k}-dup", "text": f"answer {n_items - 1} to question {k}"})
        tests = [{"better": {"id": f"q{k}-0", "text": f"answer 0 to question {k}"},
                  "worse": {"id": f"off-{k}-{t}", "text": f"a recipe for soup #{t}"}}
                 for t in range(4)]
        out.append({"id": f"Q{k}", "text": f"question {k}", "items": items,
                    "test_pairs": tests})
    return out


def rank_of(item: dict) -> int:
    """The planted order: the number in the item's text (0 best); off-topic last."""
    text = item.get("text") or ""
    return int(text.split()[1]) if text.startswith("answer") else 99


@pytest.fixture
def campaign(client):
    status, body = client.request("POST", "/judging/campaigns", {
        "name": "planted", "queries": pools(), "seed": 3,
        "params": {"budget": 400, "max_per_pair": 5}}, admin=True)
    assert status == 201, body
    return body["id"]


def assessor(client, cid: str, name: str | None = None) -> str:
    status, body = client.request("POST", f"/judging/campaigns/{cid}/assessors",
                                  {"id": name} if name else {}, admin=True)
    assert status == 201, body
    return body["assessor"]


def answer(task: dict, rng: np.random.Generator, careless: bool, *,
           lie: bool = False, fail_tests: bool = False) -> list[dict]:
    """A careless assessor's answers (at random), or a good one's; ``lie`` turns the good
    one's target pairs round, ``fail_tests`` the test pairs."""
    out = []
    for p in task["pairs"]:
        if careless:
            choice = "left" if rng.random() < 0.5 else "right"
        else:  # a good assessor: never fooled by an off-topic item, else right 90 %
            better_left = rank_of(p["left"]) < rank_of(p["right"])
            off_topic = 99 in (rank_of(p["left"]), rank_of(p["right"]))
            correct = off_topic or rng.random() < 0.9
            if (fail_tests and off_topic) or (lie and not off_topic):
                correct = not correct
            choice = "left" if better_left == correct else "right"
        out.append({"pair": p["pair"], "choice": choice})
    return out


def test_a_campaign_finds_the_planted_best_items(client, campaign, worker, api):
    worker.ensure()
    good = [assessor(client, campaign) for _ in range(8)]  # each pair: 5 assessors at most
    careless = [assessor(client, campaign, f"careless-{campaign}-{n}") for n in range(3)]
    # a turncoat: every target pair the wrong way, the test pairs right in their first
    # task and wrong after: excluded by their second task, when the judgments of their
    # first are in a judge already (the query is rebuilt without them)
    turncoat = assessor(client, campaign, f"turncoat-{campaign}")
    rng = np.random.default_rng(7)
    everyone = [*careless, turncoat, *good]
    submitted = {a: 0 for a in everyone}
    targets = {a: 0 for a in everyone}  # target pairs submitted
    for _round in range(200):
        active = 0
        # the careless and the turncoat ask first: last in a round, one got a task only
        # if the worker had applied the others' tasks by then (none at all in some runs)
        for a in everyone:
            st, task = client.request("GET", f"/judging/tasks/next?assessor={a}")
            if st == 403:  # excluded
                continue
            if st == 204:
                continue
            assert st == 200, task
            active += 1
            assert len(task["pairs"]) <= 13
            sent = answer(task, rng, a in careless, lie=a == turncoat,
                          fail_tests=a == turncoat and submitted[a] >= 1)
            st, out = client.request("POST", f"/judging/tasks/{task['task_id']}/judgments",
                                     {"assessor": a, "judgments": sent})
            assert st == 202, out
            submitted[a] += 1
            targets[a] += len(task["pairs"]) - 3  # three test pairs in each
            # a retried POST (the reply lost) answers as before and records nothing twice
            st, again = client.request("POST", f"/judging/tasks/{task['task_id']}/judgments",
                                       {"assessor": a, "judgments": sent})
            assert st == 200 and again["replay"] and again["task_id"] == task["task_id"]
        state = client.request("GET", f"/judging/campaigns/{campaign}", admin=True)[1]
        if state["done"] or not active:
            wait_until(lambda: client.request("GET", f"/judging/campaigns/{campaign}",
                                              admin=True)[1]["tasks"].get("submitted", 0) == 0,
                       60, "every submitted task applied by the worker")
            state = client.request("GET", f"/judging/campaigns/{campaign}", admin=True)[1]
            if state["done"]:
                break
    assert state["done"], json.dumps([state["queries"], state["tasks"], state["assessors"]])
    for k in range(2):
        q = state["queries"][f"Q{k}"]
        # the planted best is found (the set may keep a near item the budget could not
        # separate: the assessors err 10 % of the time, and the order in which the worker
        # applies tasks varies from run to run)
        assert f"q{k}-0" in q["best"] and len(q["best"]) <= 2, json.dumps(q)
        assert q["distinct_items"] == N_ITEMS and q["merged_duplicates"] == 1
        assert q["pool"] == N_ITEMS + 1
        assert q["judgments"] <= 400
    # careless assessors are found out by the test pairs and their work dropped: one
    # answering at random passes a task's three test pairs with probability 1/8, so with
    # the fixed seed at least two of three are caught (expected: 2.6 of 3)
    records = state["assessors"]
    excluded = {a for a, r in records.items() if r["excluded"]}
    assert excluded == {a for a, r in records.items()
                        if r["correct"] < 0.75 * r["answered"]}  # the 75 % rule, exactly
    assert len(excluded & set(careless)) >= 2, {a: records[a] for a in careless}
    assert not excluded & set(good)
    assert turncoat in excluded and records[turncoat]["answered"] == 6, records[turncoat]
    for a in excluded:  # all their judgments dropped, earlier tasks' too (§5.1)
        r = records[a]
        assert r["judgments"] == r["banked"] == 0 and r["dropped"] == targets[a], r
    assert all(records[a]["dropped"] == 0 for a in good)
    # the turncoat's first task was kept, then dropped with the rest: its queries rebuilt
    assert sum(q["rebuilds"] for q in state["queries"].values()) >= 1
    total = sum(q["judgments"] for q in state["queries"].values())
    assert total == sum(state["assessors"][a]["judgments"] for a in everyone)
    assert sum(q["banked"] for q in state["queries"].values()) == sum(
        state["assessors"][a]["banked"] for a in everyone)
    # exports
    qrels = requests.get(f"{api.url}/judging/campaigns/{campaign}/qrels",
                         headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10).text
    lines = qrels.splitlines()
    assert {"Q0 0 q0-0 1", "Q1 0 q1-0 1"} <= set(lines)
    assert len(lines) == sum(len(q["best"]) for q in state["queries"].values())
    graph = client.request("GET", f"/judging/campaigns/{campaign}/graph", admin=True)[1]
    edges = graph["queries"]["Q0"]["edges"]
    assert edges and all(e["judgments"] <= 5 for e in edges)  # the per-pair cap
    # the graph is the judges' counts: the excluded assessors' judgments are not in it
    assert total == sum(e["judgments"] for q in graph["queries"].values() for e in q["edges"])


def test_bad_input_gets_a_4xx(client, campaign):
    a = assessor(client, campaign)
    assert client.request("POST", f"/judging/campaigns/{campaign}/assessors", {"id": a},
                          admin=True)[0] == 409
    assert client.request("GET", "/judging/tasks/next?assessor=nobody")[0] == 403
    assert client.request("GET", "/judging/campaigns/nope", admin=True)[0] == 404
    assert client.request("GET", f"/judging/campaigns/{campaign}")[0] == 401
    st, task = client.request("GET", f"/judging/tasks/next?assessor={a}")
    assert st == 200 and len(task["pairs"]) == 13  # 10 target + 3 test pairs
    url = f"/judging/tasks/{task['task_id']}/judgments"
    some = [{"pair": p["pair"], "choice": "left"} for p in task["pairs"]]
    assert client.request("POST", url, {"assessor": a, "judgments": some[:-1]})[0] == 422
    extra = [*some, {"pair": 99, "choice": "left"}]
    assert client.request("POST", url, {"assessor": a, "judgments": extra})[0] == 422
    assert client.request("POST", url, {"assessor": a, "judgments": [
        {"pair": 0, "choice": "up"}]})[0] == 422
    other = assessor(client, campaign)
    assert client.request("POST", url, {"assessor": other, "judgments": some})[0] == 403
    assert client.request("POST", "/judging/tasks/nope.1/judgments",
                          {"assessor": a, "judgments": some})[0] == 404
    assert client.request("POST", "/judging/campaigns", {"name": "x", "queries": [
        {"id": "Q", "text": "q", "items": [{"id": "a", "text": "same"},
                                           {"id": "b", "text": "same"}]}]},
        admin=True)[0] == 422  # one distinct item: nothing to judge


def test_the_judging_page_with_keyboard_shortcuts(client, campaign, api, worker):
    from demo.browser import chromium

    worker.ensure()
    a = assessor(client, campaign)
    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{api.url}/judging/assess?assessor={a}")
        page.wait_for_function("document.getElementById('query').textContent.length > 0")
        assert page.inner_text("#left") and page.inner_text("#right")
        for n in range(13):
            page.keyboard.press("ArrowLeft" if n % 2 else "2")
            page.wait_for_function(f"window.judged >= {n + 1}")
        page.wait_for_function("window.submitted === 1")
    state = Client(api.url, ADMIN).request("GET", f"/judging/campaigns/{campaign}",
                                           admin=True)[1]
    assert sum(state["tasks"].values()) >= 1
    wait_until(lambda: client.request("GET", f"/judging/campaigns/{campaign}", admin=True)[1]
               ["assessors"][a]["answered"] == 3, 60, "the page's task applied")



def test_each_task_applied_once_and_redis_round_trips_change_nothing(rd):
    """Exactly once, and a restart anywhere: the campaign driven through
    ``service.campaigns.operations.Campaigns`` on the real Redis (state through JSON at every
    call, every
    submission sent twice, every applied task queued again as a retried worker would)
    ends in exactly the state of the same calls on a state kept in memory. On the way a
    turncoat (every target pair the wrong way; the test pairs right in two tasks, wrong in
    the third) is excluded, which rebuilds the judges, while another assessor's task made
    before that is still out; the campaign then runs to its end."""
    from judging import campaign as logic
    from service.campaigns.operations import Campaigns
    from service.store import Store
    from service.store.keys import campaign_submitted_key as _submitted

    camps = Campaigns(Store(rd))
    spec = {"name": "lockstep", "queries": pools(n_items=16), "algorithm": "recommended",
            "seed": 9, "params": {"budget": 400, "max_per_pair": 5}, "task_ttl_s": 86_400}
    cid = camps.create(spec)
    mem = logic.new_campaign(spec["queries"], algorithm="recommended", params=spec["params"],
                             seed=9)
    turncoat, good = f"turn-{cid}", [f"g{n}-{cid}" for n in range(5)]
    judged: dict[str, set[str]] = {}
    for a in [turncoat, *good]:
        camps.add_assessor(cid, a)
        mem["assessors"][a] = logic.new_assessor()
        judged[a] = set()
    rng = np.random.default_rng(5)
    tasks: dict[str, tuple[dict, dict]] = {}  # task id -> (task in memory, answers)
    results: dict[str, dict] = {}

    def same() -> None:
        assert json.dumps(camps.export(cid), sort_keys=True) == json.dumps(mem, sort_keys=True)

    def fetch(a: str, *, lie: bool = False, fail_tests: bool = False) -> str | None:
        task = camps.next_task(cid, a)
        mine = logic.make_task(mem, a, judged[a],
                               np.random.default_rng([mem["seed"], mem["task_seq"]]))
        same()
        if task is None:
            assert mine is None
            return None
        assert logic.present(mem, mine) == task["pairs"]
        sent = answer(task, rng, careless=False)
        for j, p in zip(sent, task["pairs"], strict=True):
            test = 99 in (rank_of(p["left"]), rank_of(p["right"]))
            if (test and fail_tests) or (not test and lie):
                j["choice"] = "left" if j["choice"] == "right" else "right"
        tasks[task["task_id"]] = (mine, {j["pair"]: {"choice": j["choice"],
                                                     "no_difference": False} for j in sent})
        return task["task_id"]

    def submit_and_apply(tid: str) -> dict:
        mine, ans = tasks[tid]
        for attempt in range(2):  # the reply lost: the same POST again
            reply, new = camps.submit(cid, tid, mine["assessor"], ans)
            assert new == (attempt == 0) and reply["replay"] == (attempt == 1)
        judged[mine["assessor"]] |= {f"{p['query']}:{p['i']}:{p['j']}"
                                     for p in mine["pairs"] if not p["test"]}
        camps.apply_submitted(cid)  # (the session's worker, if running, may be first)
        results[tid] = logic.apply_task(mem, mine, ans)
        assert json.loads(rd.hget(f"rd:{{jc-{cid}}}:tasks", tid))["result"] == results[tid]
        same()
        rd.rpush(_submitted(cid), tid)  # a retried worker: the task once more
        camps.apply_submitted(cid)
        same()
        return results[tid]

    submit_and_apply(fetch(turncoat, lie=True))
    held = fetch(good[0])  # stays out while the turncoat is exposed
    assert submit_and_apply(fetch(turncoat, lie=True))["status"] == "kept"
    assert mem["assessors"][turncoat]["judgments"] == 20
    exposed = submit_and_apply(fetch(turncoat, lie=True, fail_tests=True))
    # (a task takes its pairs from the first query with pairs to ask: all of Q0's so far)
    assert exposed["status"] == "excluded" and exposed["rebuilt"] == ["Q0"]
    assert exposed["dropped"] == 30 and mem["assessors"][turncoat]["judgments"] == 0
    out = submit_and_apply(held)  # made before the rebuild: banked, nothing recorded
    assert out["status"] == "kept" and out["recorded"] == 0 and out["banked"] == 10
    for _round in range(60):
        got = [fetch(a) for a in good]
        for tid in got:
            if tid:
                submit_and_apply(tid)
        if not any(got):
            break
    state = camps.state(cid)
    assert state["done"], state["queries"]
    assert state["tasks"] == {"applied": len(results)}
    t = state["assessors"][turncoat]
    assert t["excluded"] and t["judgments"] == t["banked"] == 0 and t["dropped"] == 30, t
    # the held task's judgments were used when the rebuilt judges asked for their pairs
    assert state["assessors"][good[0]]["banked"] < 10
