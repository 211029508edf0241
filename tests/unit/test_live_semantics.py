"""One semantics, live and offline (issue 10): what a policy's selection depends on is
stored and advanced by the feedback, or derived from the stored state and the step ``t``.

Live, many API processes select with ``select_at(t, rng)`` from copies of the stored
state and never write back; a worker applies feedback in batches after ``sync_step(t)``.
These tests check, for every registered policy, that ``select()`` changes nothing stored
but ``t`` and the generator, that copies of one state select alike, and, end to end in the
simulator, that selecting from copies reloaded every few steps behaves as selecting from
the one stored state, with the same delayed feedback.
"""

from __future__ import annotations

import json
from typing import ClassVar

import numpy as np
import pytest

from bandits import ALGORITHMS, bandit_from_state, make_bandit
from bandits.matrices import bradley_terry
from bandits.rmed import RMED1
from bandits.simulator import simulate_run

#: MergeDTS keeps its lookahead draws (``prepared``) in ``state_dict()`` and ``select()``
#: moves them; the Merge split of issue 9.2 takes that cache out of the state.
NAMES = list(ALGORITHMS)


def feed(bandit, S, P, env) -> None:
    """Record the outcome of comparison ``S`` drawn from ``P``."""
    if bandit.multi:
        bandit.update_many(
            [(i, j, float(env.random() < P[i, j])) for x, i in enumerate(S) for j in S[x + 1 :]]
        )
    else:
        bandit.update(S[0], S[1], float(env.random() < P[S[0], S[1]]))


def stored(bandit, *, drop=("t", "rng")) -> str:
    state = bandit.state_dict()
    for key in drop:
        state.pop(key)
    return json.dumps(state, sort_keys=True)


def states_along_a_run(name: str, steps: int = 1500, every: int = 50):
    """The policy's state every ``every`` steps of a run on 8 arms, with a retirement and
    an addition in the middle (an added arm restarts RMED1's initial phase)."""
    P = bradley_terry(9, gap=0.1, spread=3.0, seed=1)
    b = make_bandit(name, 8, seed=3)
    env = np.random.default_rng(0)
    for step in range(steps):
        if step == steps // 2:
            b.retire_arm(2)
            b.add_arm()
        if step % every == 0:
            yield b
        feed(b, b.select(), P[: b.K, : b.K], env)


@pytest.mark.parametrize("name", NAMES)
def test_select_changes_nothing_stored_but_t_and_rng(name):
    # After every recorded outcome (the moment a paper's selection-time state would
    # move: RUCB's B, CCB's sets, a new RMED1 round), and far ahead every 100 steps;
    # 1,000 steps pass RMED1's initial phase (28 pairs) and the retirement and addition
    # at step 500 (an added arm restarts that phase).
    for b in states_along_a_run(name, steps=1000, every=1):
        before = stored(b)
        far = b.t % 100 == 0
        for _ in range(40 if far else 2):  # more than a round, a batch cycle, a phase
            b.select()
        assert stored(b) == before, f"{name} at t={b.t}"
        if far:  # select_at does not even touch the stored generator
            before_with_rng = stored(b, drop=("t",))
            copy = bandit_from_state(json.loads(json.dumps(b.state_dict())))
            for t in range(copy.t + 1, copy.t + 40):
                copy.select_at(t, np.random.default_rng(t))
            assert stored(copy, drop=("t",)) == before_with_rng, f"{name} at t={b.t}"


@pytest.mark.parametrize("name", NAMES)
def test_copies_of_one_state_select_alike(name):
    # Two API processes holding the same snapshot choose the same comparison for the
    # same step and generator, whatever each selected before.
    for b in states_along_a_run(name, steps=900, every=150):
        state = json.dumps(b.state_dict())
        walker = bandit_from_state(json.loads(state))
        steps = [b.t + d for d in (1, 2, 3, 7, 30, 31, 200)]
        for t in [*steps, *reversed(steps)]:  # forward, then back
            fresh = bandit_from_state(json.loads(state))
            rng1, rng2 = np.random.default_rng([9, t]), np.random.default_rng([9, t])
            assert walker.select_at(t, rng1) == fresh.select_at(t, rng2), f"{name} t={t}"


@pytest.mark.parametrize("name", ALGORITHMS)
def test_no_delay_is_the_plain_simulator(name):
    # D = 0, B = 1, no reload through the live-like loop: the plain loop's regret,
    # step for step (same seeds, same draws, same fast-forward).
    P = bradley_terry(7, gap=0.1, spread=3.0, seed=2)
    plain = simulate_run(P, name, 1500, seed=5)
    live = simulate_run(P, name, 1500, seed=5, delay=0, feedback_batch=1, record_shown=True)
    np.testing.assert_array_equal(plain.regret, live.regret)
    assert (plain.identified, plain.fast_forward_at) == (live.identified, live.fast_forward_at)
    assert live.shown is not None and plain.shown is None


# ---------------------------------------------------------------------- RMED1 reloaded
class ProbedRMED1(RMED1):
    """RMED1 that logs, per selection, the step, whether its copy was in the initial
    phase, and the pair (a class-level log, shared by the simulator's reloaded copies)."""

    log: ClassVar[list[tuple[int, bool, tuple[int, int]]]] = []

    def _select(self):
        pair = super()._select()
        ProbedRMED1.log.append((self.t, self.initial_phase, pair))
        return pair


def test_rmed1_reloaded_every_20_with_delay_50_leaves_the_initial_phase():
    # Issue 10 item 2: at K = 30, reloading every 20 selections, RMED1 showed 20 of 435
    # pairs in 6,000 selections and never left its initial phase.
    #
    # Budget. The initial phase plays, at step t, uncompared pair number
    # (t - 1 - n_updates) mod |U| of the copy's list U. If the copy has the feedback of
    # steps 1..n and steps 1..t-1 played pairs p_0..p_{t-2}, then U = p_n..p_{N-1} and
    # step t plays p_{t-1} as long as t <= N: the N = 435 pairs are all shown in the
    # first N selections, whatever the delay D, batch B and reload period R. The
    # feedback of step N is stored after selection N + D + B - 1 at the latest, and
    # every copy loaded from then on (within R selections) is past the initial phase:
    # from step N + D + B - 1 + R = 505 on, no selection is an initial-phase one.
    K, D, B, R = 30, 50, 1, 20
    N = K * (K - 1) // 2
    P = bradley_terry(K, gap=0.05, spread=3.0, seed=4)
    ProbedRMED1.log = []
    res = simulate_run(
        P, ProbedRMED1, 6000, seed=1, shuffle=False, delay=D, feedback_batch=B, reload_every=R
    )
    log = ProbedRMED1.log
    assert [t for t, _, _ in log] == list(range(1, 6001))
    first = {tuple(sorted(pair)) for _, _, pair in log[:N]}
    assert len(first) == N  # every pair once, in the first N selections
    budget = N + D + B - 1 + R
    assert all(not initial for t, initial, _ in log if t >= budget)
    assert any(initial for t, initial, _ in log if t > N)  # the bound is not vacuous
    # after it, rounds: l(t) walks over the candidates, not over the same few pairs
    assert len({pair[0] for _, _, pair in log[budget:]}) > 1
    assert res.shown.sum() == 6000


# Whether copies reloaded every few steps behave as the one stored state, in distribution
# (seeded runs of every policy), is in the stats tier: tests/stats/test_live_semantics_rates.py.
