"""The simulator's plain step loops: select, draw the outcome, update, add the regret,
as fast as Python allows, with the exact fast-forward after convergence.

Why apart from :func:`bandits.simulator.simulate_run`: that function sets a run up (the
matrix checked, the arms shuffled, the seeds spawned, the policy built) and reports it;
the loops here are the hot path it hands the policy to, and the live-like loop
(:mod:`bandits.live_loop`) shares their fast-forward. Each loop returns
``(regret at each checkpoint, looped steps, loop seconds, fast-forward step or None)``.

Speed. A loop does nothing per step besides ``select()``, two list look-ups, one
comparison with a pre-drawn uniform and ``update()``: the uniforms come in blocks of
``BLOCK`` (one numpy call each), ``P`` and the pair-regret matrix are plain nested lists
(list indexing is several times cheaper than numpy scalar indexing), and checkpoints are
the block boundaries, so the loop never tests the step counter.

Fast-forward. An eliminated arm is never chosen again (the contract of
:mod:`bandits.base`), so once a policy has one active arm left, every later step is that
arm against itself — MergeDTS, Algorithm 1 line 7–8, and MergeRUCB do exactly this. When
``select()`` returns ``(a, a)`` and ``a`` is the only active arm, the remaining steps each
cost the same regret (0 if ``a`` is the winner) and are added in one multiplication; the
policy's ``t`` and ``n_updates`` are advanced as if the loop had run. A policy that
still compares now and then after convergence (MergeGuard's verification) reports through
``quiet_steps()`` how many of the next steps are certainly ``(a, a)`` with nothing to
learn; the pair loop skips those the same way (their outcome uniforms are still drawn,
so the run is identical to the full loop) and does not count them as looped steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from bandits.base import ACTIVE, DuelingBandit

#: uniforms drawn per numpy call (and the finest granularity of progress reports)
BLOCK = 1 << 15


def single_active(bandit: DuelingBandit) -> bool:
    """Whether every later step is the one active arm against itself (fast-forward may
    start)."""
    # a policy that still has comparisons to make after convergence (MergeGuard's
    # verification) says so through ``steady()``; fast-forward waits for it
    if not bandit.steady():
        return False
    return int(np.count_nonzero(bandit.status == ACTIVE)) == 1


def finish_fast_forward(
    bandit: DuelingBandit,
    cps: np.ndarray,
    regret: np.ndarray,
    ci: int,
    t: int,
    cum: float,
    per_step: float,
) -> None:
    """Fill checkpoints ``ci..`` after step ``t`` with ``per_step`` regret per step."""
    remaining = int(cps[-1]) - t
    for k in range(ci, cps.size):
        regret[k] = cum + (int(cps[k]) - t) * per_step
    # keep the policy's counters as if the loop had run
    bandit.skip_steps(remaining)


def loop_pairs(
    bandit: DuelingBandit,
    P: np.ndarray,
    r_arm: np.ndarray,
    cps: np.ndarray,
    orng: np.random.Generator,
    fast_forward: bool,
    progress: Callable[[int], None] | None,
    observe: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, float, int | None]:
    """The loop for policies that select pairs: one draw and one ``update`` per step,
    the steps ``quiet_steps()`` vouches for skipped exactly."""
    Pl = P.tolist()
    Rl = ((r_arm[:, None] + r_arm[None, :]) / 2.0).tolist()
    select, update = bandit.select, bandit.update
    quiet = bandit.quiet_steps
    regret = np.zeros(cps.size)
    cum = 0.0
    t = 0
    skipped = 0
    seconds = 0.0
    for ci in range(cps.size):
        cp = int(cps[ci])
        while t < cp:
            n = min(cp - t, BLOCK)
            us = orng.random(n).tolist()
            start = time.perf_counter()
            k = 0
            while k < n:
                i, j = select()
                cum += Rl[i][j]
                update(i, j, 1.0 if us[k] < Pl[i][j] else 0.0)
                k += 1
                if i == j and fast_forward:
                    if single_active(bandit):
                        seconds += time.perf_counter() - start
                        t += k
                        finish_fast_forward(bandit, cps, regret, ci, t, cum, Rl[i][i])
                        if progress is not None:
                            progress(int(cps[-1]) - t + k)
                        return regret, t - skipped, seconds, t
                    # steps the policy says are (i, i) with nothing to learn: skip
                    # them exactly (their uniforms are drawn all the same)
                    s = min(quiet(), n - k)
                    if s > 0:
                        s = int(s)
                        cum += s * Rl[i][i]
                        bandit.skip_steps(s)
                        k += s
                        skipped += s
            seconds += time.perf_counter() - start
            t += n
            if progress is not None:
                progress(n)
        regret[ci] = cum
        if observe is not None:
            observe(ci)
    return regret, t - skipped, seconds, None


def loop_multi(
    bandit: DuelingBandit,
    P: np.ndarray,
    r_arm: np.ndarray,
    cps: np.ndarray,
    orng: np.random.Generator,
    fast_forward: bool,
    progress: Callable[[int], None] | None,
    observe: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, float, int | None]:
    """The loop for policies that select sets: all pairwise draws, one ``update_many``."""
    Pl = P.tolist()
    rl = r_arm.tolist()
    select, update_many = bandit.select, bandit.update_many
    regret = np.zeros(cps.size)
    cum = 0.0
    t = 0
    seconds = 0.0
    K = P.shape[0]
    need = max(K * (K - 1) // 2, 1)  # most uniforms one step can use
    us: list[float] = []
    pos = 0
    for ci in range(cps.size):
        cp = int(cps[ci])
        while t < cp:
            n = min(cp - t, BLOCK)
            start = time.perf_counter()
            for k in range(n):
                S = select()
                m = len(S)
                cum += sum(rl[a] for a in S) / m
                if pos + need > len(us):
                    us = us[pos:] + orng.random(max(BLOCK, need)).tolist()
                    pos = 0
                outcomes = []
                for x in range(m):
                    a = S[x]
                    Pa = Pl[a]
                    for y in range(x + 1, m):
                        b = S[y]
                        outcomes.append((a, b, 1.0 if us[pos] < Pa[b] else 0.0))
                        pos += 1
                update_many(outcomes)
                if m == 1 and fast_forward and single_active(bandit):
                    seconds += time.perf_counter() - start
                    t += k + 1
                    finish_fast_forward(bandit, cps, regret, ci, t, cum, rl[S[0]])
                    if progress is not None:
                        progress(int(cps[-1]) - t + k + 1)
                    return regret, t, seconds, t
            seconds += time.perf_counter() - start
            t += n
            if progress is not None:
                progress(n)
        regret[ci] = cum
        if observe is not None:
            observe(ci)
    return regret, t, seconds, None
