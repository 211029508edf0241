"""The credit path's claims (service/credit/, service/store/), checked on every policy.

1. The guard fires on every ``update()`` that changes a policy's structure (all that the
   credit script does not write), so committing the other outcomes as plain additions to
   ``W`` loses nothing; policies without a guard change nothing but ``W``, ``n_updates``
   and what is rebuilt from ``W``.
2. A policy loaded from the stored parts (structure written at its last change, current
   ``W`` and ``n``) selects exactly like the policy that ran every ``update()``.
3. The protocol (additions; hold at a guarded outcome; decide it with ``update()``)
   yields the state of the serial run of ``update()``, eliminations at the same
   comparisons: in pure Python, then through the real Lua script on a real Redis.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import bandits
from bandits.base import DuelingBandit
from service.credit.guard import Guard
from service.store.keys import t_key
from service.store.snapshot import W_DERIVED, decode_bandit, encode_w, structure_state

#: parameters that make the Merge policies eliminate within a few hundred comparisons
PARAMS = {"mergedts": {"alpha": 0.5, "c": 1.0, "batch_size": 3},
          "mergerucb": {"alpha": 0.5, "c": 1.0, "batch_size": 3},
          # the periodic non-Condorcet check every 50 comparisons, so a workload holds some
          "mergeguard": {"alpha": 0.5, "c": 1.0, "batch_size": 3, "check_every": 50},
          "mergemed": {"alpha": 0.5, "c": 1.0, "batch_size": 3, "check_every": 50},
          "recommended": {"alpha": 0.5, "c": 1.0, "check_every": 50},
          "sparring_certifier": {"alpha": 0.5, "c": 1.0, "check_every": 50}}
#: policies with a structure that the credit path updates in parallel
MERGE = sorted(PARAMS)
K = 7


def preferences(k: int, seed: int) -> np.ndarray:
    """A Bradley–Terry matrix with arm 0 clearly best."""
    strength = np.linspace(3.0, -3.0, k) + np.random.default_rng(seed).normal(0, 0.2, k)
    return 1.0 / (1.0 + np.exp(strength[None, :] - strength[:, None]))


def workload(name: str, n: int, seed: int) -> list[tuple[int, list[tuple[int, int, float]]]]:
    """``n`` comparisons chosen by a simulator copy of the policy (so they fall where the
    policy plays), with outcomes drawn from :func:`preferences` and some ties; each with
    the global ``t`` at its credit (selections run ahead of feedback)."""
    P = preferences(K, seed)
    sim = bandits.make_bandit(name, K, seed=seed, **PARAMS.get(name, {}))
    rng = np.random.default_rng(seed + 100)
    out, t = [], 0
    for _ in range(n):
        arms = sim.select()
        t = max(t, sim.t + int(rng.integers(0, 4)))  # feedback a few steps late
        if sim.multi:
            pairs = [(a, b, float(rng.random() < P[a, b])) for n_, a in enumerate(arms)
                     for b in arms[n_ + 1:]]
            if pairs:  # one ranker alone is no comparison
                sim.update_many(pairs)
                out.append((t, pairs))
            continue
        i, j = arms
        if i == j:
            continue
        s = 0.5 if rng.random() < 0.05 else float(rng.random() < P[i, j])
        sim.update(i, j, s)
        out.append((t, [(i, j, s)]))
    return out


def tie_counts(work) -> dict[tuple[int, int], int]:
    """Outcomes of exactly ½ per pair ``(i < j)`` in a :func:`workload`."""
    out: dict[tuple[int, int], int] = {}
    for _, outcomes in work:
        for i, j, s in outcomes:
            if s == 0.5 and i != j:
                pair = (min(i, j), max(i, j))
                out[pair] = out.get(pair, 0) + 1
    return out


def apply_outcomes(b: DuelingBandit, t: int, outcomes) -> None:
    b.sync_step(t)
    if b.multi:
        b.update_many(outcomes)
    else:
        b.update(*outcomes[0])


def comparable(b: DuelingBandit) -> dict:
    """The state to compare between runs (the generator excluded: nothing draws in
    ``update()``, checked by equality of the rest)."""
    state = structure_state(b)
    return {"W": b.W.tolist(), "n": b.n_updates, **state}


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_guard_fires_on_every_structural_change(name):
    changes = fired = steps = 0
    for seed in (1, 2):
        b = bandits.make_bandit(name, K, seed=seed, **PARAMS.get(name, {}))
        for t, outcomes in workload(name, 800, seed):
            guard = Guard.of(b, t)
            trips = guard is not None and (guard.periodic(b.n_updates + 1) or any(
                guard.watches(i, j) and guard.trips(b.W[i, j] + s, b.W[j, i] + 1 - s,
                                                    guard.watches(i, j))
                for i, j, s in outcomes))
            before = json.dumps(structure_state(b))
            apply_outcomes(b, t, outcomes)
            changed = json.dumps(structure_state(b)) != before
            assert not changed or trips, (name, t, outcomes)  # never missed
            changes += changed
            fired += trips
            steps += 1
    if name in PARAMS:
        assert changes >= 4  # the workload really eliminates
        periodic = 2 * (800 // PARAMS[name].get("check_every", 10**9) + 1)
        assert fired <= 3 * changes + 10 + periodic, (fired, changes)  # the guard is tight
    elif b.serial_updates:
        assert fired == steps  # state advanced at every step: every outcome is held
    else:
        assert changes == fired == 0  # baselines: update() changes no structure


@pytest.mark.parametrize("name", sorted(bandits.ALGORITHMS))
def test_policy_from_stored_parts_selects_like_the_full_state(name):
    b = bandits.make_bandit(name, K, seed=3, **PARAMS.get(name, {}))
    stored = json.dumps(structure_state(b))
    work = workload(name, 600, 3)
    for n, (t, outcomes) in enumerate(work):
        before = json.dumps(structure_state(b))
        apply_outcomes(b, t, outcomes)
        after = json.dumps(structure_state(b))
        if after != before:
            stored = after  # what the store writes at a structural change, and only then
        if n % 50 == 49 or n == len(work) - 1:
            full = bandits.bandit_from_state(b.state_dict())
            parts = decode_bandit(encode_w(b), stored, b.n_updates, t)
            for step in range(t + 1, t + 40):
                a = full.select_at(step, np.random.default_rng([7, step]))
                c = parts.select_at(step, np.random.default_rng([7, step]))
                assert a == c, (name, step)
    assert set(W_DERIVED) <= set(bandits.ALGORITHMS)


class ShardModel:
    """The credit script and the hold resolution in pure Python: what the store does."""

    def __init__(self, b: DuelingBandit) -> None:
        self.W, self.n = b.W.copy(), b.n_updates
        self.structure, self.sv = json.dumps(structure_state(b)), 1
        self.holds = 0

    def policy(self, t: int) -> DuelingBandit:
        return decode_bandit(encode_w_array(self.W), self.structure, self.n, t)

    def credit(self, view: DuelingBandit, t: int, outcomes) -> None:
        guard = Guard.of(view, t)  # t read at the claim: at most the global t
        for i, j, s in outcomes:
            if guard and (guard.periodic(self.n + 1) or (guard.watches(i, j) and guard.trips(
                    self.W[i, j] + s, self.W[j, i] + 1 - s, guard.watches(i, j)))):
                self.holds += 1
                b = self.policy(t)  # the resolution: update() on the current state
                apply_outcomes(b, t, outcomes)
                self.W, self.n = b.W.copy(), b.n_updates
                after = json.dumps(structure_state(b))
                if after != self.structure:
                    self.structure, self.sv = after, self.sv + 1
                return
        for i, j, s in outcomes:
            self.W[i, j] += s
            self.W[j, i] += 1 - s
        self.n += 1


def encode_w_array(W: np.ndarray) -> bytes:
    return np.ascontiguousarray(W, dtype="<f8").tobytes()


@pytest.mark.parametrize("name", MERGE)
def test_protocol_equals_the_serial_run_of_update(name):
    for seed in (1, 2, 3):
        ref = bandits.make_bandit(name, K, seed=seed, **PARAMS[name])
        shard = ShardModel(ref)
        view, view_sv = shard.policy(0), shard.sv
        for t, outcomes in workload(name, 800, seed):
            apply_outcomes(ref, t, outcomes)
            if shard.sv != view_sv:  # the script refuses a stale view: re-read
                view, view_sv = shard.policy(t), shard.sv
            shard.credit(view, t, outcomes)
        got = shard.policy(ref.t)
        assert comparable(got) == comparable(ref)
        assert got.eliminated == ref.eliminated and len(ref.eliminated) >= 2
        periodic = ref.n_updates // PARAMS[name].get("check_every", 10**9)
        assert shard.holds <= 3 * len(ref.eliminated) + 10 + periodic, shard.holds


# ---------------------------------------------------------------------- on a real Redis
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
    store.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b, truth=None,
                            audit="{}")
    return exp_id


def save(store, exp_id: str, outcomes) -> str:
    """An impression whose credit yields ``outcomes`` (see ``fake_credit``)."""
    from service.store.keys import new_impression_id

    imp_id = new_impression_id(exp_id)
    arms = sorted({a for i, j, _ in outcomes for a in (i, j)})
    store.save_impression(imp_id, exp_id=exp_id, t=0, arms=arms, shown=["d"],
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
    snap = store.snapshot(exp_id, full=True)
    got = decode_bandit(snap.w_bytes, snap.state_json, snap.n_updates, ref.t)
    assert comparable(got) == comparable(ref)
    assert snap.counters["credited"] == len(work) and store.pending_count(exp_id) == 0
    # the per-pair tie counts (the report's vs_champion.ties), by the script and the holds
    assert store.ties(exp_id) == tie_counts(work)
    if name in PARAMS:
        assert len(ref.eliminated) >= 2 and got.eliminated == ref.eliminated
        audit = [a for a in store.audit(exp_id) if a.get("action") == "eliminated"]
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
    snap = store.snapshot(exp_id, full=True)
    b = snap.bandit
    assert b.W.sum() == len(work) == b.n_updates == snap.counters["decisive"]
    assert tie_counts(work) and store.ties(exp_id) == tie_counts(work)  # each tie once
    assert snap.counters["credited"] == len(work) and store.pending_count(exp_id) == 0
    audit = [a for a in store.audit(exp_id) if a.get("action") == "eliminated"]
    assert len(audit) == len(b.eliminated) >= 1
