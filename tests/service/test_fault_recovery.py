"""Recovery from faults, the parts that need no platform (issue: crediting never stalls
after a fault, quarantined rankers stop eating the traffic).

1. Drain leases on a real Redis: a lease whose drain never runs lapses within
   ``drain_lease_s`` and the sweep queues a new drain; a drain that works longer than its
   lease keeps it (the heartbeat) and releases it at the end; a drain that cannot be
   queued gives its lease back.
2. A ranker quarantined ``ranker_retire_after`` times in a row is retired, with an audit
   entry that says the service did it and why.

Selection with unavailable (quarantined) arms needs no Redis:
``tests/unit/test_select_available.py``. The same under load, on the whole platform at
the default settings, is ``tests/service/test_fault_recovery_load.py``.
"""

from __future__ import annotations

import secrets
import threading
import time

import pytest

import bandits
from bandits.base import RETIRED
from demo.stack import wait_until


# ------------------------------------------------------------------ leases on Redis
@pytest.fixture(scope="module")
def own_redis_url(tmp_path_factory):
    """A Redis of this module's own (the session's has a worker sweeping it)."""
    from demo.stack import Stack

    with Stack(tmp_path_factory.mktemp("fault-recovery")) as stack:
        yield stack.start_redis()


@pytest.fixture
def store(own_redis_url):
    from service.store import Store
    from service.store.client import connect

    return Store(connect(own_redis_url))


class Queue:
    """A task queue that records what it is asked to publish; ``up`` False: the broker
    is away (publishing fails)."""

    def __init__(self) -> None:
        self.drains: list[tuple[str, str]] = []
        self.later: list[tuple[str, float]] = []
        self.up = True

    def drain(self, exp_id: str, token: str) -> bool:
        if self.up:
            self.drains.append((exp_id, token))
        return self.up

    def judging_apply(self, campaign_id: str) -> bool:
        return True

    def drain_later(self, exp_id: str, delay_s: float) -> bool:
        self.later.append((exp_id, delay_s))
        return self.up


def experiment(store, name: str = "uniform", k: int = 3) -> str:
    exp_id = secrets.token_hex(6)
    b = bandits.make_bandit(name, k, seed=1)
    meta = {"id": exp_id, "name": "t", "algorithm": name, "params": {},
            "interleaving": "team_draft", "seed": 1, "created_at": time.time()}
    from service.store.records import Ranker

    rankers = [Ranker(name=f"r{a}", url="http://x", timeout_ms=1, arm=a, added_at=0.0)
               for a in range(k)]
    store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b, truth=None,
                                        audit="{}")
    return exp_id


def impression(store, exp_id: str, inactivity_s: float = 0.0) -> str:
    """An impression of arms 0 and 1, due after ``inactivity_s``."""
    from service.store.keys import new_impression_id

    imp_id = new_impression_id(exp_id)
    store.impressions.save_impression(
        imp_id, exp_id=exp_id, t=1, arms=[0, 1], shown=["a", "b"], record=None, duel=False,
        forfeits=[], token_expires=2**31, ttl_s=600, inactivity_s=inactivity_s,
        counters={"impressions": 1})
    store.drains.mark_due(exp_id, time.time())
    return imp_id


def crediting(store, queue, lease_s: float = 1.0, follow_s: float = 0.0):
    from service.credit.drains import Crediting

    return Crediting(store, queue, batch=50, lease_s=lease_s, parallelism=2, cache_size=8,
                     full_sweep_s=60, follow_s=follow_s)


def test_a_lease_without_a_drain_lapses_and_the_sweep_queues_one(store):
    """``/end`` took the lease but its drain was never published (the broker away), and
    giving the lease back failed too: the experiment is blocked only until the lease
    lapses (``drain_lease_s``), not for ``credit_retry_s``."""
    queue = Queue()
    c = crediting(store, queue, lease_s=1.0)
    exp_id = experiment(store)
    impression(store, exp_id)
    assert store.drains.take_drain(exp_id, 1.0) is not None  # a lease nobody renews
    c.sweep()
    assert queue.drains == []  # held: the sweep skips it
    t0 = time.monotonic()
    wait_until(lambda: c.sweep() == 1, 30, "the sweep queues a drain once the lease lapsed")
    assert queue.drains and queue.drains[0][0] == exp_id
    assert time.monotonic() - t0 < 10
    assert c.drain(*queue.drains[0]) == 1
    assert store.drains.pending_count(exp_id) == 0 and store.drains.drains(exp_id) == 0


def test_a_working_drain_keeps_its_lease_and_claims(store, monkeypatch):
    """A batch that takes several lease lifetimes: the heartbeat keeps the lease and the
    batch's claims, so the sweep queues no second drain and no other drain claims them;
    once done the lease is given back."""
    from service.credit import protocol as mod

    queue = Queue()
    c = crediting(store, queue, lease_s=1.0)
    exp_id = experiment(store)
    impression(store, exp_id)
    started, go = threading.Event(), threading.Event()
    real = mod.credit_batch

    def slow(*args, **kw):
        started.set()
        go.wait(30)
        return real(*args, **kw)

    monkeypatch.setattr(mod, "credit_batch", slow)
    done: list[int] = []
    th = threading.Thread(target=lambda: done.append(c.drain(exp_id)))
    th.start()
    try:
        assert started.wait(30)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3.5:  # three lease lifetimes: what is checked
            assert store.drains.drains(exp_id) == 1
            assert store.drains.due(exp_id, 10) == []  # still claimed
            assert c.sweep() == 0
            go.wait(0.2)
    finally:
        go.set()
        th.join(30)
    assert done == [1]
    assert store.drains.drains(exp_id) == 0 and store.drains.pending_count(exp_id) == 0


def test_a_drain_that_cannot_be_queued_gives_its_lease_back(store):
    queue = Queue()
    queue.up = False
    c = crediting(store, queue, lease_s=30.0)
    exp_id = experiment(store)
    impression(store, exp_id)
    assert c.sweep() == 0
    assert store.drains.drains(exp_id) == 0  # not held for 30 s: the next sweep tries again
    queue.up = True
    assert c.sweep() == 1


def test_a_late_drain_beyond_the_parallelism_returns_at_once(store):
    """A drain that waited in the broker past its lease, while the allowed number of
    drains hold one, does nothing (and takes no lease)."""
    c = crediting(store, Queue(), lease_s=30.0)
    exp_id = experiment(store)
    impression(store, exp_id)
    held = [store.drains.take_drain(exp_id, 30.0, limit=2) for _ in range(2)]
    assert all(held)
    assert c.drain(exp_id, "expired-token") == 0
    assert store.drains.drains(exp_id) == 2 and store.drains.pending_count(exp_id) == 1
    # the holder of a live lease renews it whatever the limit
    assert store.drains.take_drain(exp_id, 30.0, limit=1, token=held[0]) == held[0]


def test_a_drain_schedules_the_next_for_an_impression_due_soon(store):
    """Nothing due when the drain ends, but an idle impression due in 2 s: one drain is
    scheduled for then (not left for the next sweep); one per experiment at a time, and
    none for an impression due after ``follow_s``."""
    queue = Queue()
    c = crediting(store, queue, lease_s=5.0, follow_s=5.0)
    exp_id = experiment(store)
    impression(store, exp_id, inactivity_s=2.0)
    assert c.drain(exp_id) == 0
    assert len(queue.later) == 1 and queue.later[0][0] == exp_id
    assert 1.0 < queue.later[0][1] <= 2.1
    assert c.drain(exp_id) == 0 and len(queue.later) == 1  # already scheduled
    other = experiment(store)
    impression(store, other, inactivity_s=60.0)
    assert c.drain(other) == 0 and len(queue.later) == 1  # beyond follow_s: the sweep's


def _claim_misses_once(store, monkeypatch):
    """The drain's first claim finds nothing: the impression falls due right after it
    (idle impressions fall due all the time under load)."""
    real, calls = store.drains.claim, []

    def claim(*args, **kw):
        calls.append(1)
        return (1, []) if len(calls) == 1 else real(*args, **kw)

    monkeypatch.setattr(store.drains, "claim", claim)


def test_an_impression_due_after_the_last_claim_is_drained_at_once(store, monkeypatch):
    """The race that left idle impressions to the next sweep (5 s): one fell due between
    a drain's last claim and its end. The drain takes its lease back and credits it."""
    queue = Queue()
    c = crediting(store, queue, lease_s=5.0, follow_s=5.0)
    exp_id = experiment(store)
    impression(store, exp_id, inactivity_s=0.0)
    _claim_misses_once(store, monkeypatch)
    assert c.drain(exp_id) == 1
    assert store.drains.pending_count(exp_id) == 0 and queue.later == []


def test_a_due_impression_gets_a_drain_at_once_when_the_lease_is_taken(store, monkeypatch):
    """The same race while another drain holds a lease (so ours cannot be taken back):
    a follow-up drain is scheduled at once, not for the next sweep (the other lease may
    be one that will lapse: a drain that died)."""
    from service.credit.drains import FOLLOW_LAG_S

    queue = Queue()
    c = crediting(store, queue, lease_s=5.0, follow_s=5.0)
    exp_id = experiment(store)
    impression(store, exp_id, inactivity_s=0.0)
    assert store.drains.take_drain(exp_id, 5.0, limit=2) is not None  # another drain's lease
    _claim_misses_once(store, monkeypatch)
    assert c.drain(exp_id) == 0
    assert queue.later == [(exp_id, FOLLOW_LAG_S)]
    assert c.drain(exp_id) == 1  # what that follow-up drain does when it runs
    assert store.drains.pending_count(exp_id) == 0


# ------------------------------------------------------------------ retirement
def test_a_ranker_that_keeps_failing_is_retired_with_an_audit_entry(store):
    from service.experiments.operations import retire_if_failing

    exp_id = experiment(store, k=3)
    now = [1000.0]
    store.clock = lambda: now[0]  # the quarantines' time, moved by hand
    after = 3
    opened = 0
    for _ in range(50):
        _, now_open = store.ranker_health.ranker_failed(exp_id, 2, threshold=2, quarantine_s=30)
        if now_open:
            opened += 1
            retired = retire_if_failing(store, exp_id, 2, "r2", after=after)
            assert retired == (opened == after)
            if retired:
                break
            now[0] += 31  # the quarantine over: the next failure is a failed probe
    assert opened == after
    snap = store.experiments.snapshot(exp_id)
    assert snap.bandit.status[2] == RETIRED
    entry = store.experiments.audit(exp_id, -1, -1)[-1]
    assert entry["action"] == "ranker_retired" and entry["actor"] == "service"
    assert entry["ranker"] == "r2" and entry["quarantines"] == after
    # a success resets the count
    store.ranker_health.ranker_failed(exp_id, 1, threshold=1, quarantine_s=30)
    assert store.ranker_health.quarantines(exp_id, 1) == 1
    store.ranker_health.ranker_recovered(exp_id, 1)
    assert store.ranker_health.quarantines(exp_id, 1) == 0


def test_a_ranker_being_probed_is_out_of_selection_until_its_probe_answers(store):
    """While one search probes a ranker back from quarantine, selection leaves it out:
    every other search that chose it would be served by its opponent alone for the whole
    probe (a hanging ranker's timeout; this made 115 of 1,586 searches of the quarantine
    load test fallbacks, 4 with it). A success ends it at once; a lapsed right too."""
    from service.experiments.controller import quarantined

    exp_id = experiment(store, k=3)
    now = [1000.0]
    store.clock = lambda: now[0]
    health = store.ranker_health
    health.ranker_failed(exp_id, 1, threshold=1, quarantine_s=30)
    now[0] += 31  # the quarantine over: half-open
    assert 1 not in quarantined(health.ranker_health(exp_id), now[0])
    assert health.take_probe(exp_id, 1, ttl_s=2.0)
    assert not health.take_probe(exp_id, 1, ttl_s=2.0)  # one probe at a time
    probing = health.ranker_health(exp_id)
    assert probing[1]["probing_until"] == 1033.0
    assert quarantined(probing, now[0]) == {1}
    assert 1 not in quarantined(probing, 1033.5)  # the prober died: it lapses
    health.ranker_recovered(exp_id, 1)
    assert quarantined(health.ranker_health(exp_id), now[0]) == frozenset()
    # a failed probe opens a new quarantine, which outlasts the probe's mark
    health.ranker_failed(exp_id, 2, threshold=1, quarantine_s=30)
    now[0] += 31
    assert health.take_probe(exp_id, 2, ttl_s=2.0)
    health.ranker_failed(exp_id, 2, threshold=1, quarantine_s=30)
    assert health.ranker_health(exp_id)[2]["quarantined_until"] == now[0] + 30


# ------------------------------------------------------------------ probes nobody chose
@pytest.fixture
def never_chosen(monkeypatch):
    """Selection that never chooses arm 2 (as a policy may stop choosing a ranker, say
    one MergeDTS has left behind in an earlier batch), in this process."""
    from bandits.base import DuelingBandit

    real = DuelingBandit.select_available

    def select_available(self, t, rng, unavailable=()):
        return real(self, t, rng, {*unavailable, 2})

    monkeypatch.setattr(DuelingBandit, "select_available", select_available)


@pytest.fixture
def in_process_api(own_redis_url, ranker_server):
    """The API in this process (so :func:`never_chosen` applies), quarantines of 0.3 s,
    a ranker quarantined after one failure and retired at its third quarantine."""
    from demo.client import Client
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import Config

    config = Config(redis_url=own_redis_url, admin_token="a" * 20, secret_key="s" * 20,
                    ranker_allow="127.0.0.1,localhost", clicks_per_client_per_minute=0,
                    ranker_failure_threshold=1, ranker_quarantine_s=0.3,
                    ranker_retire_after=3, state_max_age_ms=0)
    server = ThreadedServer(create_app(config))
    try:
        yield Client(server.url, "a" * 20), ranker_server.url
    finally:
        server.close()


def test_a_failing_ranker_selection_never_chooses_is_probed_and_retired(
        in_process_api, never_chosen, own_redis_url):
    """A ranker whose quarantine ended but which selection never chooses was never
    probed, so never retired: it stayed undecided in the experiment for good. Now the
    next search probes it beside its own comparison (the probe's answer is not shown);
    each failed probe is a new quarantine, and the third retires it with an audit
    entry. Every search meanwhile is a duel of the healthy rankers."""
    from service.store import Store
    from service.store.client import connect

    client, url = in_process_api
    e = client.create_experiment(name="unchosen", algorithm="uniform",
                                 interleaving="team_draft", seed=1, rankers=[
                                     {"name": n, "url": f"{url}/r/{n}", "timeout_ms": 1000}
                                     for n in ("good", "mid")])["id"]
    client._ok("POST", f"/experiments/{e}/rankers",
               {"name": "broken", "url": f"{url}/r/broken", "probe": False}, admin=True)
    store = Store(connect(own_redis_url))
    # it failed once: quarantined
    store.ranker_health.ranker_failed(e, 2, threshold=1, quarantine_s=0.3)
    served: list[list[str]] = []

    def retired() -> bool:
        page = client.search(e, f"q{len(served)}", k=5)
        served.append(page["rankers"])
        status = {r["name"]: r["status"] for r in client.experiment(e)["rankers"]}
        return status["broken"] == "retired"

    wait_until(retired, 60, "the unchosen failing ranker retired")
    assert all(sorted(r) == ["good", "mid"] for r in served), served
    entry = [a for a in client.audit(e) if a["action"] == "ranker_retired"]
    assert len(entry) == 1 and entry[0]["ranker"] == "broken", entry
    assert entry[0]["actor"] == "service" and entry[0]["quarantines"] == 3


def test_a_recovered_ranker_selection_never_chooses_is_brought_back(
        in_process_api, never_chosen, own_redis_url):
    """The same with a ranker that answers again: the first probe after its quarantine
    closes it (health cleared, a ``ranker_recovered`` audit entry)."""
    from service.store import Store
    from service.store.client import connect

    client, url = in_process_api
    e = client.create_experiment(name="unchosen-ok", algorithm="uniform",
                                 interleaving="team_draft", seed=1, rankers=[
                                     {"name": n, "url": f"{url}/r/{n}", "timeout_ms": 1000}
                                     for n in ("good", "mid", "alt")])["id"]
    store = Store(connect(own_redis_url))
    store.ranker_health.ranker_failed(e, 2, threshold=1, quarantine_s=0.3)

    def recovered() -> bool:
        client.search(e, "q", k=5)
        return any(a["action"] == "ranker_recovered" and a["ranker"] == "alt"
                   for a in client.audit(e))

    wait_until(recovered, 60, "the unchosen ranker probed and brought back")
    alt = next(r for r in client.experiment(e)["rankers"] if r["name"] == "alt")
    assert alt["status"] == "active" and alt["health"]["quarantined_until"] is None

