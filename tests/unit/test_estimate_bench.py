"""bench/estimate_validation.py and bench/estimate_tuning.py: the runs the estimate's
validation scores, and the forward simulation it was compared with
(bench/results/estimate_validation.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from bandits import make_bandit
from bandits.base import ACTIVE
from bandits.decision import decide
from bandits.matrices import bradley_terry

_BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, _BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ev():
    return _load("estimate_validation")


@pytest.fixture(scope="module")
def tuning(ev):
    return _load("estimate_tuning")


def test_copies_leave_the_run_as_it_was(ev):
    """The validation takes copies of the policy every 50 comparisons and estimates on
    them afterwards: the run converges where the same seeds converge without copies, and
    each copy is the policy at its checkpoint (its estimate is the live one's there)."""
    P = bradley_terry(6, gap=0.1, spread=2.0, seed=3)
    N, records = ev.run(P, "mergemed", 11, 50, 200_000)
    assert N is not None and records and all(b.n_updates == n for n, b in records)
    # the same run without copies, estimating on the live policy at one checkpoint
    rng = np.random.default_rng(11)
    perm = rng.permutation(6)
    Pr = P[np.ix_(perm, perm)]
    b = make_bandit("mergemed", 6, seed=int(rng.integers(2**31)))
    env = np.random.default_rng(int(rng.integers(2**31)))
    n, live_estimate = 0, None
    while np.count_nonzero(b.status == ACTIVE) > 1:
        us = env.random(50)
        for k in range(50):
            i, j = b.select()
            b.update(i, j, 1.0 if us[k] < Pr[i, j] else 0.0)
        n += 50
        if n == records[0][0]:
            live_estimate = decide(b).estimate
    assert n == N
    assert decide(records[0][1]).estimate == live_estimate


def test_forward_simulation_runs_a_copy_to_one_ranker(tuning):
    """run_forward leaves the policy as it was and stops when one active ranker is left
    (a clear instance: it converges well within the cap)."""
    P = bradley_terry(5, gap=0.2, spread=3.0, seed=1)
    b = make_bandit("mergedts", 5, seed=2)
    env = np.random.default_rng(0)
    for _ in range(100):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
    before = (b.W.copy(), b.t, b.n_updates, b.status.copy())
    copy_, steps, done = tuning.run_forward(b, P, np.random.default_rng(5), 500_000)
    assert done and steps > 0 and np.count_nonzero(copy_.status == ACTIVE) == 1
    assert copy_.n_updates == b.n_updates + steps
    W0, t0, n0, status0 = before
    assert np.array_equal(b.W, W0) and (b.t, b.n_updates) == (t0, n0)
    assert np.array_equal(b.status, status0)
    capped = tuning.run_forward(b, P, np.random.default_rng(5), 10)
    assert capped[1] == 10 and not capped[2]
