"""Segments (service.segments.dimensions): declared at creation (422 for a bad
declaration), named by the search, stored with the impression, and counted per
(dimension, value) beside the total W by the same exactly-once credit step, through a
worker killed mid-task, replayed tasks, and held outcomes (a policy whose every outcome is
decided by its own update()).

The invariants: the total W is what it would be without segments (its sum equals the
decisive impressions); each dimension's W sums to the total W, exactly; and each value's
W equals the sum of the outcomes recorded in the credited marks of its impressions.
"""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers.api import all_credited, rankers_for, serve_api
from helpers.wait import wait_for

from demo.client import ApiResponseError, Client
from service.store.keys import experiment_of as exp_of
from service.store.keys import imp_key, pending_key
from tests.conftest import ADMIN
from tests.service.test_workers_credit import expected_decisive

SEGMENTS = {"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]}
#: what the searches send, in turn: declared values, an undeclared one, none at all
SENT = [{"device": "mobile", "market": "de"}, {"device": "desktop", "market": "us"},
        {"device": "tablet", "market": "fr"}, {"market": "jp"}, {}]


@pytest.fixture
def patient_client(service_env):
    """A client of an API of its own (same Redis, same worker) whose impressions do not
    fall idle within a test: inactivity 60 s, not the session's 1.5 s. The killed-worker
    tests need the backlog to be exactly the impressions they end: with 1.5 s, searches
    slowed by a busy machine (four xdist processes at load 20) left each impression idle
    before its end, and the slow worker credited them all before the kill."""
    server = serve_api({**service_env, "RANKDUEL_INACTIVITY_S": "60"})
    yield Client(server.url, ADMIN)
    server.close()


def ikey(imp_id: str) -> str:
    return imp_key(exp_of(imp_id), imp_id)


def drive(client, exp_id, n, rng, *, rd=None, worker=None):
    """``n`` searches with random clicks, then every impression ended. With ``rd``: the
    first is ended and credited alone, then the rest, and this returns once a drain has
    claimed a batch of them (due times pushed past now) and credited none: a worker
    killed then is killed mid-batch."""
    pages = []
    for s in range(n):
        page = client.search(exp_id, "some query", k=6, segments=SENT[s % len(SENT)])
        pages.append(page)
        res = page["results"]
        picks = [p for p in range(len(res)) if rng.random() < 0.3]
        if picks:
            client.click(page, [(res[p]["id"], p + 1) for p in picks])
    if rd is not None:
        client.end(pages[0])
        wait_for(lambda: client.experiment(exp_id)["counters"].get("credited", 0) >= 1,
                 what="the first impression credited")
        pages_left = pages[1:]
    else:
        pages_left = pages
    if worker is not None:  # the rest all due before the slow worker claims any: one
        delay = worker.delay_ms  # backlog, whatever the machine's pace (not one by one)
        worker.stop()
    for page in pages_left:
        client.end(page)
    if worker is not None:
        worker.restart(delay_ms=delay)
    if rd is not None:
        def claimed():
            now = time.time()
            due = rd.zrange(pending_key(exp_id), 0, -1, withscores=True)
            return any(score > now for _, score in due)
        try:
            wait_for(claimed, what="the backlog claimed")
        except AssertionError as exc:  # say what the worker did instead
            due = rd.zrange(pending_key(exp_id), 0, -1, withscores=True)
            raise AssertionError(f"{exc}: now {time.time():.3f}, pending {due[:5]} "
                                 f"({len(due)}), counters "
                                 f"{client.experiment(exp_id)['counters']}, worker log:\n"
                                 f"{worker.log_tail(30)}") from None
    return [page["impression_id"] for page in pages]


def expected_by_label(rd, ids, k):
    """Each label's W recomputed from the credited marks of its impressions."""
    out: dict[str, np.ndarray] = {}
    for imp in ids:
        raw = rd.hgetall(ikey(imp))
        mark = json.loads(raw[b"credited"])
        for label in raw[b"seg"].decode().split(","):
            w = out.setdefault(label, np.zeros((k, k)))
            for i, j, s in mark.get("outcomes", ()):
                w[i, j] += s
                w[j, i] += 1 - s
    return out


def check_sums(state, rd, ids):
    W = np.array(state["W"])
    assert state["segments"] == {"device": ["mobile", "desktop", "other"],
                                 "market": ["de", "fr", "us", "other"]}
    expected = expected_by_label(rd, ids, W.shape[0])
    for dim, by_value in state["segment_W"].items():
        total = sum(np.array(w) for w in by_value.values())
        assert np.array_equal(total, W), dim  # exactly: halves and ones add exactly
        for value, w in by_value.items():
            assert np.array_equal(np.array(w), expected.get(f"{dim}={value}", 0 * W)), (
                dim, value)
    return W


def test_declared_undeclared_and_absent_values_are_stored(client, ranker_server, rd):
    exp = client.create_experiment(name="seg", rankers=rankers_for(ranker_server, "good", "bad"),
                                   algorithm="uniform", interleaving="team_draft", seed=1,
                                   segments=SEGMENTS)
    stored = [rd.hget(ikey(client.search(exp["id"], "q", k=4, segments=s)["impression_id"]),
                      "seg").decode() for s in SENT]
    assert stored == ["device=mobile,market=de", "device=desktop,market=us",
                      "device=other,market=fr", "device=other,market=other",
                      "device=other,market=other"]
    plain = client.create_experiment(name="plain", rankers=rankers_for(ranker_server, "a", "b"),
                                     algorithm="uniform", interleaving="team_draft")
    page = client.search(plain["id"], "q", k=4, segments={"device": "mobile"})
    assert rd.hget(ikey(page["impression_id"]), "seg") is None  # no segments declared
    state = client.experiment(plain["id"])
    assert state["segments"] is None and state["segment_W"] is None


@pytest.mark.parametrize("segments, words", [
    ({"a": ["x"], "b": ["x"], "c": ["x"], "d": ["x"]}, "at most 3"),
    ({"device": [f"v{i}" for i in range(17)]}, "16"),
    ({"device": []}, "at least 1"),
    ({"device": ["mobile", "mobile"]}, "'mobile' is declared twice"),
    ({"device": ["other"]}, "'other' is reserved"),
    ({"Device": ["mobile"]}, "^[a-z][a-z0-9_]{0,31}$"),
    ({"device": ["mo,bile"]}, "^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$"),
])
def test_bad_declarations_are_422_saying_what_is_wrong(client, ranker_server, segments, words):
    with pytest.raises(ApiResponseError) as err:
        client.create_experiment(name="bad", rankers=rankers_for(ranker_server, "a", "b"),
                                 algorithm="uniform", interleaving="team_draft",
                                 segments=segments)
    assert err.value.status == 422
    assert "segments" in json.dumps(err.value.body)
    assert words in json.dumps(err.value.body)


def test_segment_w_sums_hold_through_a_killed_worker_and_replays(patient_client, ranker_server,
                                                                 worker, rd, api):
    client = patient_client
    # the slow worker (300 ms per impression in a credit transaction) is killed with
    # SIGKILL while it works through the backlog, then replaced (as
    # test_workers_credit.test_worker_killed_mid_task_loses_and_doubles_nothing)
    # (300 ms an impression: the claimed batch stays visible for 12 s, which a test
    # process starved on a busy machine still sees)
    worker.restart(delay_ms=300)
    exp = client.create_experiment(name="seg-crash", rankers=rankers_for(
        ranker_server, "good", "bad", "mid", "alt"), algorithm="uniform",
        interleaving="team_draft", seed=4, segments=SEGMENTS)
    ids = drive(client, exp["id"], 40, np.random.default_rng(9), rd=rd, worker=worker)
    worker.kill9()
    assert client.experiment(exp["id"])["counters"].get("credited", 0) < 40
    worker.restart(delay_ms=0)
    state = wait_for(all_credited(client, exp["id"]), timeout=60, what="recovery")
    decisive = expected_decisive(rd, ids)
    assert decisive > 10
    W = check_sums(state, rd, ids)
    assert W.sum() == decisive == state["counters"]["decisive"]

    # replay every credit task: nothing moves, in the total or in any segment
    queue = api.server.app.extensions["rankduel"].queue
    for imp in ids:
        queue.credit_impression(imp)
    marker = client.search(exp["id"], "marker", k=2, segments=SENT[0])
    client.end(marker)
    state = wait_for(all_credited(client, exp["id"]), what="replays drained")
    ids.append(marker["impression_id"])
    W = check_sums(state, rd, ids)
    assert W.sum() == expected_decisive(rd, ids)


def test_held_outcomes_count_per_segment_too(client, ranker_server, worker, rd):
    # RUCB's every outcome is held and decided by its own update() in the hold's
    # transaction (service.credit.protocol.resolve_hold): the segments are written there
    worker.ensure()
    exp = client.create_experiment(name="seg-held", rankers=rankers_for(
        ranker_server, "good", "bad", "mid"), algorithm="rucb",
        interleaving="team_draft", seed=3, segments=SEGMENTS)
    ids = drive(client, exp["id"], 30, np.random.default_rng(2))
    state = wait_for(all_credited(client, exp["id"]), timeout=60, what="credit")
    decisive = expected_decisive(rd, ids)
    assert decisive > 5
    W = check_sums(state, rd, ids)
    assert W.sum() == decisive
