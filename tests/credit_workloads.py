"""Shared by the credit path's tests in tests/unit (tests/unit/test_credit_path.py: the
claims in pure Python) and in tests/service (tests/service/test_credit_on_redis.py: the
credit script on a real Redis): policies' parameters that make them eliminate quickly,
workloads of comparisons where a policy plays, and the state compared between runs."""

from __future__ import annotations

import numpy as np

import bandits
from bandits.base import DuelingBandit
from service.store.snapshot import structure_state

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
