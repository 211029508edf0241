"""The credit path's protocol through the real Lua script on a real Redis
(:func:`service.credit.protocol.credit_batch`), checked on policies of each kind: the
script's additions and the held outcomes decided with ``update()`` yield the state of the
serial run of ``update()`` (eliminations audited at the same steps, ties counted once),
and batches of one experiment credited by four threads at once count each impression
once. The claims in pure Python: tests/unit/test_credit_path.py.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from credit_workloads import PARAMS, K, apply_outcomes, comparable, tie_counts, workload

import bandits
from service.store.keys import t_key
from service.store.snapshot import decode_bandit


@pytest.fixture
def store(own_redis_url):
    from service.store import Store
    from service.store.client import connect

    return Store(connect(own_redis_url))


@pytest.fixture(scope="module")
def own_redis_url(tmp_path_factory):
    """A Redis of this module's own: the session's has a Celery worker sweeping it, which
    would credit these impressions (due at once) with the real credit function."""
    from demo.stack import Stack

    with Stack(tmp_path_factory.mktemp("credit-path")) as stack:
        yield stack.start_redis()


def make_experiment(store, name: str, seed: int) -> str:
    import secrets
    import time

    b = bandits.make_bandit(name, K, seed=seed, **PARAMS.get(name, {}))
    exp_id = secrets.token_hex(6)
    meta = {"id": exp_id, "name": "t", "algorithm": name, "params": PARAMS.get(name, {}),
            "interleaving": "team_draft", "seed": seed, "created_at": time.time()}
    from service.store.records import Ranker

    rankers = [Ranker(name=f"r{a}", url="http://x", timeout_ms=1, arm=a) for a in range(K)]
    store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b, truth=None,
                                        audit="{}")
    return exp_id


def save(store, exp_id: str, outcomes) -> str:
    """An impression whose credit yields ``outcomes`` (see ``fake_credit``)."""
    from service.store.keys import new_impression_id

    imp_id = new_impression_id(exp_id)
    arms = sorted({a for i, j, _ in outcomes for a in (i, j)})
    store.impressions.save_impression(imp_id, exp_id=exp_id, t=0, arms=arms, shown=["d"],
                                      record={"outcomes": outcomes}, duel=True, forfeits=[],
                                      token_expires=2**31, ttl_s=600, inactivity_s=0.0,
                                      counters={"impressions": 1})
    return imp_id


def fake_credit(record, clicked):
    """Outcomes in the impression's arm positions, as interleaving.credit returns them."""
    arms = sorted({a for i, j, _ in record["outcomes"] for a in (i, j)})
    return [(arms.index(i), arms.index(j), s) for i, j, s in record["outcomes"]]


@pytest.mark.parametrize("name", ["mergedts", "mergeguard", "mergemed", "mdb", "rucb",
                                  "rmed1"])
def test_script_and_holds_on_redis_equal_the_serial_run(store, monkeypatch, name):
    import interleaving
    from service.credit.protocol import credit_batch

    monkeypatch.setattr(interleaving, "credit", fake_credit)
    exp_id = make_experiment(store, name, seed=5)
    ref = bandits.make_bandit(name, K, seed=5, **PARAMS.get(name, {}))
    work = workload(name, 800, 5)
    for start in range(0, len(work), 9):
        chunk = work[start:start + 9]
        t = chunk[-1][0]  # the batch is credited at the t read when it was claimed
        for _, outcomes in chunk:
            apply_outcomes(ref, t, outcomes)
        batch = [save(store, exp_id, [list(o) for o in outcomes]) for _, outcomes in chunk]
        store.r.set(t_key(exp_id), t)
        results = credit_batch(store, exp_id, batch, t)
        assert set(results) == set(batch)
    snap = store.experiments.snapshot(exp_id, full=True)
    got = decode_bandit(snap.w_bytes, snap.state_json, snap.n_updates, ref.t)
    assert comparable(got) == comparable(ref)
    assert snap.counters["credited"] == len(work) and store.drains.pending_count(exp_id) == 0
    # the per-pair tie counts (the report's vs_champion.ties), by the script and the holds
    assert store.credits.ties(exp_id) == tie_counts(work)
    if name in PARAMS:
        assert len(ref.eliminated) >= 2 and got.eliminated == ref.eliminated
        audit = [a for a in store.experiments.audit(exp_id) if a.get("action") == "eliminated"]
        assert sorted(a["step"] for a in audit) == sorted(
            v["step"] for v in ref.eliminated.values())


def test_concurrent_batches_on_one_experiment_count_each_impression_once(store, monkeypatch):
    """Four threads credit overlapping batches of one experiment (each impression offered
    to two of them): W's total is the number of comparisons, each counted once, and the
    eliminations were decided (audited) once each."""
    import interleaving
    from service.credit.protocol import credit_batch

    monkeypatch.setattr(interleaving, "credit", fake_credit)
    exp_id = make_experiment(store, "mergedts", seed=6)
    work = workload("mergedts", 800, 6)
    ids = [save(store, exp_id, [list(o) for o in outcomes]) for _, outcomes in work]
    store.r.set(t_key(exp_id), work[-1][0])
    rng = np.random.default_rng(1)
    chunks = [ids[k:k + 25] for k in range(0, len(ids), 25)]
    plans = [[c for n, c in enumerate(chunks) if n % 4 in (w, (w + 1) % 4)]
             for w in range(4)]
    for p in plans:
        rng.shuffle(p)
    errors: list[BaseException] = []

    def run(plan):
        try:
            for chunk in plan:
                credit_batch(store, exp_id, list(chunk), work[-1][0])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(p,)) for p in plans]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    snap = store.experiments.snapshot(exp_id, full=True)
    b = snap.bandit
    assert b.W.sum() == len(work) == b.n_updates == snap.counters["decisive"]
    assert tie_counts(work) and store.credits.ties(exp_id) == tie_counts(work)  # each tie once
    assert snap.counters["credited"] == len(work) and store.drains.pending_count(exp_id) == 0
    audit = [a for a in store.experiments.audit(exp_id) if a.get("action") == "eliminated"]
    assert len(audit) == len(b.eliminated) >= 1
