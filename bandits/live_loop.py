"""The simulator's live-like loop: what the live service runs, offline and seeded.

Why a loop of its own: live, the outcome of a selection arrives after other selections
have been made, the Celery worker records outcomes in groups (each after ``sync_step`` to
the current step), and an API process selects from a snapshot of the stored state with a
generator seeded from ``(experiment seed, t)``. The plain loops
(:mod:`bandits.simulation_loops`) apply each outcome at once; this one reproduces the
live semantics so that a policy's offline regret is the regret it has in service.

``simulate_run(..., delay=D, feedback_batch=B, reload_every=R)`` runs it: the outcome of
step ``t`` is applied after ``D`` more selections, in groups of ``B`` (or, with
``applied_at``, after the selection of step ``applied_at[t - 1]``: a live run's own
schedule, replayed with its long tail and its uneven groups), and with ``R``
each selection is ``select_at(t, rng_t)`` on a copy rebuilt from ``state_dict()`` every
``R`` selections (an API process's cached snapshot), ``rng_t`` a generator that is a
fixed function of the run's seed and ``t`` (:class:`StepGenerators`). The loop also
counts the comparisons shown (``RunResult.shown``); with ``D = 0``, ``B = 1`` and no
reload it gives exactly the regret of the plain loop (same uniforms, in the same order).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from bandits.base import DuelingBandit
from bandits.simulation_loops import BLOCK, finish_fast_forward, single_active


class StepGenerators:
    """The generator of step ``t``: a fixed function of the run's seed and ``t`` (Philox,
    counter-based: the run's key, ``t`` in the counter), as the service seeds each
    selection from ``(experiment seed, t)``. One generator, re-positioned per step."""

    def __init__(self, seq: np.random.SeedSequence) -> None:
        self.key = seq.generate_state(2, np.uint64)
        self.gen = np.random.Generator(np.random.Philox(key=self.key))

    def at(self, t: int) -> np.random.Generator:
        self.gen.bit_generator.state = {
            "bit_generator": "Philox",
            "state": {"counter": np.array([0, 0, t, 0], dtype=np.uint64), "key": self.key},
            "buffer": np.zeros(4, dtype=np.uint64),
            "buffer_pos": 4,
            "has_uint32": 0,
            "uinteger": 0,
        }
        return self.gen


@dataclass
class LiveFeedback:
    """How the live-like loop delivers feedback and selects."""

    delay: int
    batch: int
    reload_every: int
    generators: StepGenerators
    shown: np.ndarray
    #: if given, the step after whose selection the outcome of step ``t`` is applied, at
    #: ``applied_at[t - 1]`` (at least ``t``; steps past its end wait ``delay``); outcomes
    #: due at the same step are applied together, as one credit batch of the worker
    applied_at: Sequence[int] | None = None


def loop_live(
    bandit: DuelingBandit,
    P: np.ndarray,
    r_arm: np.ndarray,
    cps: np.ndarray,
    orng: np.random.Generator,
    fast_forward: bool,
    progress: Callable[[int], None] | None,
    live: LiveFeedback,
    observe: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, float, int | None]:
    """Select, draw the outcomes at once (same uniforms, in the same order, as the plain
    loops), and apply them ``delay`` selections later in groups of ``batch``, or at the
    steps ``applied_at`` gives."""
    Pl = P.tolist()
    rl = r_arm.tolist()
    Rl = ((r_arm[:, None] + r_arm[None, :]) / 2.0).tolist()
    multi = bandit.multi
    shown = live.shown
    regret = np.zeros(cps.size)
    steps = int(cps[-1])
    pending: deque[list[tuple[int, int, float]]] = deque()
    scheduled: dict[int, list[list[tuple[int, int, float]]]] = {}  # applied_at: by step
    applied_at = live.applied_at

    def apply(n: int, t: int) -> None:
        bandit.sync_step(t)  # the worker's transaction runs at the global step
        for _ in range(n):
            outcomes = pending.popleft()
            if multi:
                bandit.update_many(outcomes)
            else:
                bandit.update(*outcomes[0])

    def apply_due(t: int, last: bool = False) -> None:
        """Apply what is due after the selection of step ``t`` (``last``: all of it)."""
        if applied_at is not None:  # every step is visited, so only step t can fall due
            for at in sorted(scheduled) if last else [t]:
                pending.extend(scheduled.pop(at, ()))
            if pending or last:
                apply(len(pending), t)
        elif last:
            apply(len(pending), t)
        else:
            due = len(pending) - live.delay  # outcomes of steps <= t - delay
            while due >= live.batch:
                apply(live.batch, t)
                due -= live.batch

    us: list[float] = []
    pos = 0
    cum = 0.0
    ci = 0
    done = 0  # steps reported to progress
    selector = bandit
    start = time.perf_counter()
    for t in range(1, steps + 1):
        if live.reload_every:
            if (t - 1) % live.reload_every == 0:
                selector = type(bandit).from_state(bandit.state_dict())
            S = selector.select_at(t, live.generators.at(t))
        else:
            S = bandit.select()
        m = len(S)
        if pos + m * m > len(us):
            us = us[pos:] + orng.random(max(BLOCK, m * m)).tolist()
            pos = 0
        if multi:
            cum += sum(rl[a] for a in S) / m
            outcomes = []
            for x in range(m):
                a = S[x]
                for y in range(x + 1, m):
                    b = S[y]
                    shown[a, b] += 1
                    outcomes.append((a, b, 1.0 if us[pos] < Pl[a][b] else 0.0))
                    pos += 1
            if m == 1:
                shown[S[0], S[0]] += 1
        else:
            i, j = S
            cum += Rl[i][j]
            shown[i, j] += 1
            outcomes = [(i, j, 1.0 if us[pos] < Pl[i][j] else 0.0)]
            pos += 1
        if applied_at is None:
            pending.append(outcomes)
        else:
            at = max(t, int(applied_at[t - 1])) if t <= len(applied_at) else t + live.delay
            scheduled.setdefault(at, []).append(outcomes)
        apply_due(t)
        while ci < cps.size and cps[ci] == t:
            regret[ci] = cum
            if observe is not None:
                observe(ci)
            ci += 1
        if (
            fast_forward
            and len(set(S)) == 1
            and single_active(bandit)
            and (selector is bandit or single_active(selector))
        ):
            apply_due(t, last=True)
            seconds = time.perf_counter() - start
            finish_fast_forward(bandit, cps, regret, ci, t, cum, rl[S[0]])
            if progress is not None:
                progress(steps - done)
            return regret, t, seconds, t
        if progress is not None and t - done >= BLOCK:
            progress(t - done)
            done = t
    apply_due(steps, last=True)  # feedback still in flight at the end
    seconds = time.perf_counter() - start
    if progress is not None and steps > done:
        progress(steps - done)
    return regret, steps, seconds, None
