"""The credit path's claims (service/credit/, service/store/), checked on every policy in
pure Python (the credit script's run on a real Redis: tests/service/test_credit_on_redis.py).

1. The guard fires on every ``update()`` that changes a policy's structure (all that the
   credit script does not write), so committing the other outcomes as plain additions to
   ``W`` loses nothing; policies without a guard change nothing but ``W``, ``n_updates``
   and what is rebuilt from ``W``.
2. A policy loaded from the stored parts (structure written at its last change, current
   ``W`` and ``n``) selects exactly like the policy that ran every ``update()``.
3. The protocol (additions; hold at a guarded outcome; decide it with ``update()``)
   yields the state of the serial run of ``update()``, eliminations at the same
   comparisons, in a model of the store in pure Python.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from credit_workloads import MERGE, PARAMS, K, apply_outcomes, comparable, workload

import bandits
from bandits.base import DuelingBandit
from service.credit.guard import Guard
from service.store.snapshot import W_DERIVED, decode_bandit, encode_w, structure_state


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
