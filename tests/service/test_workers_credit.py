"""Crediting through the real Celery worker: nothing lost, nothing counted twice.

The invariant checked throughout: for a pairwise policy every decisive impression adds
exactly 1 to ``W.sum()`` (a win adds 1 to one side, a tie ½ to each), so after every
impression is credited ``W.sum()`` must equal the number of impressions whose recorded
interleaving and clicks yield an outcome — recomputed here from what Redis stored, with
``interleaving.credit`` — whatever duplicates, replays and crashes happened on the way.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers.api import all_credited, rankers_for
from helpers.wait import wait_for

import interleaving
from service.store.keys import clicks_key, drains_key, imp_key
from service.store.keys import experiment_of as exp_of


def ikey(imp_id: str) -> str:
    """The key of an impression (its id names its experiment)."""
    return imp_key(exp_of(imp_id), imp_id)


def expected_decisive(rd, imp_ids):
    """Recompute each impression's outcome from its stored record and clicks."""
    n = 0
    for imp in imp_ids:
        raw = rd.hgetall(ikey(imp))
        if json.loads(raw.get(b"forfeits", b"[]")):  # a ranker failed (e.g. timed out
            n += 1  # under load): its forfeit is the outcome, whatever the clicks
            continue
        if raw[b"duel"] != b"1":
            continue
        record = json.loads(raw[b"record"])
        clicks = sorted(int(x) for x in rd.smembers(clicks_key(exp_of(imp), imp)))
        outcome = interleaving.credit(record, clicks)
        stored = json.loads(raw.get(b"credited", b"null"))
        if stored is not None and stored["status"] in ("credited", "no_clicks"):
            # what the worker decided agrees with a recomputation from the stored record
            assert bool(outcome) == (stored["status"] == "credited"), (imp, stored)
        n += bool(outcome)
    return n


def drive(client, exp_id, n, rng, *, dup_clicks=False, end=True, names=None):
    """``n`` searches with random clicks; returns the impression ids."""
    ids = []
    for _ in range(n):
        page = client.search(exp_id, "some query", k=6)
        if names is not None:
            names.append(page["rankers"])
        ids.append(page["impression_id"])
        res = page["results"]
        picks = [p for p in range(len(res)) if rng.random() < 0.3]
        if picks:
            docs = [(res[p]["id"], p + 1) for p in picks]
            client.click(page, docs)
            if dup_clicks:  # a beacon retried: same clicks again, and one by one
                client.click(page, docs)
                for d in docs:
                    client.click(page, [d])
        if end:
            client.end(page)
            if dup_clicks:
                client.end(page)
    return ids


def test_duplicates_and_replays_change_w_once(client, ranker_server, worker, rd, api):
    worker.ensure()
    exp = client.create_experiment(name="dups", rankers=rankers_for(ranker_server, "good", "bad",
                                                                      "mid"),
                                   algorithm="uniform", interleaving="team_draft", seed=11)
    rng = np.random.default_rng(5)
    ids = drive(client, exp["id"], 60, rng, dup_clicks=True)
    state = wait_for(all_credited(client, exp["id"]), what="first credit")
    decisive = expected_decisive(rd, ids)
    assert decisive > 20  # the test means something: many impressions had clicks
    W = np.array(state["W"])
    assert W.sum() == decisive == state["counters"]["decisive"] == state["comparisons"]

    # replay every credit task (a broker redelivering, an operator re-queueing)
    queue = api.server.app.extensions["rankduel"].queue
    for imp in ids:
        queue.credit_impression(imp)
        queue.credit_impression(imp)
    marker = client.search(exp["id"], "marker", k=2)  # queued after the replays
    client.end(marker)
    wait_for(all_credited(client, exp["id"]), what="replays drained")
    state = client.experiment(exp["id"])
    assert np.array(state["W"]).sum() == decisive + expected_decisive(
        rd, [marker["impression_id"]])
    assert state["counters"]["credited"] == 61


def test_inactive_impressions_are_credited_by_the_sweep(client, ranker_server, worker, rd):
    worker.ensure()
    exp = client.create_experiment(name="idle", rankers=rankers_for(ranker_server, "good", "bad"),
                                   algorithm="uniform", interleaving="team_draft", seed=2)
    page = client.search(exp["id"], "q", k=4)
    client.click(page, [(page["results"][0]["id"], 1)])  # never ended
    state = wait_for(all_credited(client, exp["id"]), timeout=30, what="sweep")
    assert np.array(state["W"]).sum() == 1.0
    assert rd.hget(ikey(page['impression_id']), "closed") == b"1"


def test_worker_killed_mid_task_loses_and_doubles_nothing(client, ranker_server, worker, rd):
    # a slow worker (a credit transaction sleeps 100 ms per impression before EXEC, so the
    # 40 impressions take at least 4 s to credit) is killed with SIGKILL while it works
    # through them, then replaced by a normal one. It credits 5 impressions a batch: the
    # searches may all be closed before its first drain, which would take all 40 at once
    worker.restart(delay_ms=100, settings={"RANKDUEL_CREDIT_BATCH": "5"})
    exp = client.create_experiment(name="crash", rankers=rankers_for(ranker_server, "good", "bad",
                                                                       "mid", "alt"),
                                   algorithm="uniform", interleaving="team_draft", seed=4)
    rng = np.random.default_rng(9)
    ids = drive(client, exp["id"], 40, rng)
    wait_for(lambda: client.experiment(exp["id"])["counters"].get("credited", 0) >= 1,
             what="the first batch credited before the kill")
    worker.kill9()
    partial = client.experiment(exp["id"])["counters"].get("credited", 0)
    assert partial < 40  # killed with work left: the backlog really was interrupted
    assert rd.zcard(drains_key(exp["id"])) >= 1  # ... while a drain held its lease
    worker.restart(delay_ms=0)
    state = wait_for(all_credited(client, exp["id"]), timeout=60, what="recovery")
    decisive = expected_decisive(rd, ids)
    assert decisive > 10
    assert np.array(state["W"]).sum() == decisive == state["counters"]["decisive"]
    assert state["counters"]["credited"] == 40


def test_add_and_retire_rankers_mid_run(client, ranker_server, worker, rd):
    worker.ensure()
    exp = client.create_experiment(name="churn", rankers=rankers_for(ranker_server, "good",
                                                                       "bad", "mid"),
                                   algorithm="uniform", interleaving="team_draft", seed=8)
    e = exp["id"]
    rng = np.random.default_rng(3)
    ids = drive(client, e, 30, rng)
    added = client.add_ranker(e, "alt", f"{ranker_server.url}/r/alt", timeout_ms=800)
    assert added["arm"] == 3 and added["status"] == "active"
    seen = []
    ids += drive(client, e, 40, rng, names=seen)
    assert any("alt" in pair for pair in seen)  # the new ranker is in play
    wait_for(all_credited(client, e), what="credits before the retirement")
    before = np.array(client.experiment(e)["W"])
    # impressions shown before the retirement but credited after it: their duels with
    # the retired ranker are dropped (counted as stale), never half-applied
    pending = drive(client, e, 20, rng, end=False)
    client.retire_ranker(e, "bad")
    for imp in pending:
        client.request("POST", f"/impressions/{imp}/end")
    seen = []
    ids += pending + drive(client, e, 30, rng, names=seen)
    assert not any("bad" in pair for pair in seen)
    state = wait_for(all_credited(client, e), what="credits after the retirement")
    W = np.array(state["W"])
    bad = {r["name"]: r for r in state["rankers"]}["bad"]
    assert bad["status"] == "retired" and bad["retired_at"] is not None
    assert np.array_equal(W[bad["arm"]], before[bad["arm"]])  # frozen since retirement
    assert np.array_equal(W[:, bad["arm"]], before[:, bad["arm"]])
    c = state["counters"]
    assert c.get("stale", 0) > 0  # some credits really arrived after the retirement
    assert W.sum() == c["decisive"] == expected_decisive(rd, ids) - c["stale"]
    actions = [a["action"] for a in client.audit(e)]
    assert actions == ["created", "ranker_added", "ranker_retired"]


@pytest.mark.parametrize("method", ["probabilistic", "balanced"])
def test_other_pairwise_methods_credit_once(client, ranker_server, worker, rd, method):
    # marginalized probabilistic credit is fractional: W's total still grows by 1 per
    # decisive impression (s and 1 - s)
    worker.ensure()
    exp = client.create_experiment(name=method, rankers=rankers_for(ranker_server, "good",
                                                                      "bad"),
                                   algorithm="uniform", interleaving=method, seed=1)
    ids = drive(client, exp["id"], 25, np.random.default_rng(2))
    state = wait_for(all_credited(client, exp["id"]), what=method)
    decisive = expected_decisive(rd, ids)
    assert decisive > 5
    assert np.isclose(np.array(state["W"]).sum(), decisive)


def test_multileaved_mdb_comparisons_are_credited_once(client, ranker_server, worker, rd):
    # MDB selects sets of rankers; every decisive multileaved impression adds one to W's
    # total per pair of participants (s and 1 - s), counted once
    worker.ensure()
    exp = client.create_experiment(name="mdb", rankers=rankers_for(ranker_server, "good", "bad",
                                                                     "mid", "alt"),
                                   algorithm="mdb", interleaving="team_draft_multileave",
                                   seed=6)
    seen: list = []
    ids = drive(client, exp["id"], 30, np.random.default_rng(4), names=seen)
    assert max(len(n) for n in seen) > 2  # some impressions really multileaved > 2 rankers
    state = wait_for(all_credited(client, exp["id"]), what="mdb credits")
    pairs = 0
    for imp in ids:
        stored = json.loads(rd.hget(ikey(imp), "credited"))
        pairs += len(stored.get("outcomes", []))
    assert pairs > 10
    assert np.isclose(np.array(state["W"]).sum(), pairs)
    assert state["comparisons"] == state["counters"]["decisive"]


def test_pairwise_policy_rejects_a_multileaving_method(client, ranker_server):
    status, body = client.request("POST", "/experiments", {
        "name": "x", "rankers": rankers_for(ranker_server, "good", "bad"),
        "algorithm": "mergedts", "interleaving": "team_draft_multileave"}, admin=True)
    assert status == 422 and "pairwise" in body["error"]
    status, body = client.request("POST", "/experiments", {
        "name": "x", "rankers": rankers_for(ranker_server, "good", "bad"),
        "algorithm": "mdb", "interleaving": "team_draft"}, admin=True)
    assert status == 422 and "multileaving" in body["error"]


@pytest.mark.parametrize("algorithm", ["mergedts", "mergemed", "recommended"])
def test_eliminations_are_recorded_exactly_once(client, ranker_server, worker, algorithm):
    # users always click the document with the lowest id: "good" (d00, d01, ...) wins its
    # duels, so MergeDTS (small C to converge within the test) eliminates the others; so
    # do MergeMED and recommended (the Sparring Certifier), whose credits take the same
    # parallel path
    worker.ensure()
    params = {"alpha": 0.5, "c": 10} | ({} if algorithm == "recommended" else {"batch_size": 4})
    exp = client.create_experiment(
        name="elim", rankers=rankers_for(ranker_server, "good", "bad", "mid", "alt"),
        algorithm=algorithm, params=params, interleaving="team_draft", seed=3)
    e = exp["id"]
    for n in range(250):
        page = client.search(e, f"q{n}", k=6)
        res = page["results"]
        p = min(range(len(res)), key=lambda i: res[i]["id"])
        client.click(page, [(res[p]["id"], p + 1)])
        client.end(page)
    state = wait_for(all_credited(client, e), what="credits")
    out = {r["name"]: r for r in state["rankers"] if r["status"] == "eliminated"}
    assert len(out) >= 2 and state["champion"] == "good"
    if algorithm != "recommended":  # no batches: one field of active rankers
        # the batches and the stage are shown with ranker names; eliminated rankers left
        in_batches = {n for b in state["batches"] for n in b}
        assert "good" in in_batches and not in_batches & set(out)
        assert state["stage"] >= 1
    logged = [a for a in client.audit(e) if a["action"] == "eliminated"]
    assert sorted(a["ranker"] for a in logged) == sorted(out)  # once each, no more
    for a in logged:
        assert a["by"] == out[a["ranker"]]["eliminated"]["by"]
        assert a["step"] == out[a["ranker"]]["eliminated"]["step"]


def test_an_uncreditable_impression_does_not_block_the_rest(client, ranker_server, worker, rd):
    # a corrupted record (say, written by an incompatible version) is closed as an error
    # and counted; the other impressions of the batch are credited normally
    worker.ensure()
    exp = client.create_experiment(name="poison", rankers=rankers_for(ranker_server, "good",
                                                                        "bad"),
                                   algorithm="uniform", interleaving="team_draft", seed=5)
    pages = []
    for _ in range(5):
        page = client.search(exp["id"], "q", k=4)
        client.click(page, [(page["results"][0]["id"], 1)])
        pages.append(page)
    rd.hset(ikey(pages[2]['impression_id']), "record", '{"method": "no-such-method"}')
    for page in pages:
        client.end(page)
    state = wait_for(all_credited(client, exp["id"]), what="credits")
    assert state["counters"]["credit_errors"] == 1
    assert state["counters"]["decisive"] == 4 == np.array(state["W"]).sum()


def test_concurrent_workers_contending_for_one_experiment(client, ranker_server, worker, rd,
                                                         api):
    # two pool processes run per-impression tasks and a drain for the same experiment at
    # the same time: their transactions conflict (WATCH) and retry, and W still counts
    # every decisive impression exactly once
    worker.ensure(concurrency=2)
    exp = client.create_experiment(name="race", rankers=rankers_for(ranker_server, "good", "bad",
                                                                      "mid"),
                                   algorithm="uniform", interleaving="team_draft", seed=12)
    ids = drive(client, exp["id"], 60, np.random.default_rng(8), end=False)
    queue = api.server.app.extensions["rankduel"].queue
    for imp in ids:
        queue.credit_impression(imp)
        client.request("POST", f"/impressions/{imp}/end")
    state = wait_for(all_credited(client, exp["id"]), what="contended credits")
    decisive = expected_decisive(rd, ids)
    assert decisive > 20
    assert np.array(state["W"]).sum() == decisive == state["counters"]["decisive"]
    assert state["counters"]["credited"] == 60
    print("credit transactions retried after a conflict:",
          state["counters"].get("credit_conflicts", 0))
    worker.ensure(concurrency=1)
