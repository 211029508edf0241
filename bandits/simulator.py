"""The offline regret simulator: the papers' proxy method, as a pure function.

At each step the policy picks a comparison, the outcome is a Bernoulli draw from the
preference matrix ``P`` (Li et al. 2020, §5.3: "we compare them by drawing a sample from a
Bernoulli distribution with mean p_ij"), and the step costs regret

* r_t = (Δ_ci + Δ_cj)/2 with Δ_ck = p_ck − ½ against the Condorcet winner ``c``
  (Li et al. 2020, eq. 1; cumulative regret eq. 2);
* r_t = ζ* − (ζ_i + ζ_j)/2, the Copeland regret of Li et al. 2020, eq. 10, when there is no
  Condorcet winner;
* for a multi-dueling policy (``bandit.multi``, MDB) the mean of the per-arm regrets over
  the chosen set; the set's outcome is every pairwise Bernoulli draw among its arms,
  recorded as one step with ``update_many`` (Brost et al. 2016 compares all chosen arms at once).

Each run shuffles the arm order with its own seed, so a policy cannot profit from the
matrix listing the winner first; ``identified`` is mapped back to the matrix's indices.

Speed. The loop does nothing per step besides ``select()``, two list look-ups, one
comparison with a pre-drawn uniform and ``update()``: the uniforms come in blocks of
``BLOCK`` (one numpy call each), ``P`` and the pair-regret matrix are plain nested lists
(list indexing is several times cheaper than numpy scalar indexing), and checkpoints are
the block boundaries, so the loop never tests the step counter.

Delayed feedback, as live. ``simulate_run(..., delay=D, feedback_batch=B,
reload_every=R)`` runs what the live service runs: the outcome of step ``t`` is applied
after ``D`` more selections, in groups of ``B`` (each group after ``sync_step`` to the
current step, as the Celery worker's transaction does), and with ``R`` each selection is
``select_at(t, rng_t)`` on a copy rebuilt from ``state_dict()`` every ``R`` selections
(an API process's cached snapshot), ``rng_t`` a generator that is a fixed function of the
run's seed and ``t``. That loop also counts the comparisons shown (``RunResult.shown``);
with ``D = 0``, ``B = 1`` and no reload it gives exactly the regret of the plain loop.

Fast-forward. An eliminated arm is never chosen again (the contract of
:mod:`bandits.base`), so once a policy has one active arm left, every later step is that
arm against itself — MergeDTS, Algorithm 1 line 7–8, and MergeRUCB do exactly this. When
``select()`` returns ``(a, a)`` and ``a`` is the only active arm, the remaining steps each
cost the same regret (0 if ``a`` is the winner) and are added in one multiplication; the
policy's ``t`` and ``n_updates`` are advanced as if the loop had run. A policy that
still compares now and then after convergence (MergeGuard's verification) reports through
``quiet_steps()`` how many of the next steps are certainly ``(a, a)`` with nothing to
learn; the plain loop skips those the same way (their outcome uniforms are still drawn,
so the run is identical to the full loop) and does not count them as looped steps.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, DuelingBandit
from bandits.matrices import arm_regret, copeland_winners, validate_matrix

#: uniforms drawn per numpy call (and the finest granularity of progress reports)
BLOCK = 1 << 15

PolicyFactory = Callable[..., DuelingBandit]


def log_checkpoints(steps: int, per_decade: int = 20) -> np.ndarray:
    """Log-spaced steps 1..``steps`` (about ``per_decade`` per factor 10), always ending at
    ``steps``.

    Examples
    --------
    >>> log_checkpoints(1000, per_decade=3).tolist()
    [1, 2, 5, 10, 22, 46, 100, 215, 464, 1000]
    """
    steps = int(steps)
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    n = max(math.ceil(per_decade * math.log10(steps)) + 1, 2)
    cps = np.unique(np.round(np.geomspace(1, steps, n)).astype(np.int64))
    cps = cps[(cps >= 1) & (cps <= steps)]
    if cps[-1] != steps:
        cps = np.append(cps, steps)
    return cps


@dataclass
class RunResult:
    """One simulated run.

    ``steps_per_second`` is ``looped_steps / loop_seconds``: steps that actually went
    through ``select()``/``update()`` per second of wall time in the loop (policy plus
    simulator overhead), i.e. measured before any fast-forward.
    """

    seed: int
    checkpoints: np.ndarray
    regret: np.ndarray  #: cumulative regret at each checkpoint
    identified: int  #: ``best_arm()`` at the end, in the matrix's arm indices
    correct: bool
    looped_steps: int
    loop_seconds: float
    fast_forward_at: int | None = None  #: step after which the rest was fast-forwarded
    params: dict[str, Any] = field(default_factory=dict)
    #: comparisons shown, in the matrix's arm indices (the live-like loop only):
    #: ``shown[i, j]`` counts pairs ``(i, j)`` as selected (a multileaved set counts each
    #: of its pairs ``(S[x], S[y])``, ``x < y``; a lone arm ``a`` counts ``(a, a)``)
    shown: np.ndarray | None = None
    #: the policy's non-Condorcet guard (MergeGuard): raised, and at which update count
    flagged_non_condorcet: bool = False
    flagged_at: int | None = None
    #: with ``estimate=True``: at each checkpoint, :func:`bandits.decision.decide`'s
    #: estimate of the comparisons still needed to decide (0 once decided, None when the
    #: policy has no elimination test or no estimate can be made)
    estimates: list[int | None] | None = None

    @property
    def final_regret(self) -> float:
        return float(self.regret[-1])

    @property
    def steps_per_second(self) -> float:
        return self.looped_steps / self.loop_seconds if self.loop_seconds > 0 else float("inf")


def _make_policy(
    algorithm: str | PolicyFactory, K: int, rng: np.random.Generator, params: dict[str, Any]
) -> DuelingBandit:
    if isinstance(algorithm, str):
        from bandits import make_bandit

        return make_bandit(algorithm, K, seed=rng, **params)
    return algorithm(K, seed=rng, **params)


def _single_active(bandit: DuelingBandit) -> bool:
    # a policy that still has comparisons to make after convergence (MergeGuard's
    # verification) says so through ``steady()``; fast-forward waits for it
    if not bandit.steady():
        return False
    return int(np.count_nonzero(bandit.status == ACTIVE)) == 1


def simulate_run(
    P: np.ndarray,
    algorithm: str | PolicyFactory,
    steps: int,
    seed: int,
    *,
    params: dict[str, Any] | None = None,
    checkpoints: np.ndarray | None = None,
    shuffle: bool = True,
    fast_forward: bool = True,
    progress: Callable[[int], None] | None = None,
    delay: int = 0,
    feedback_batch: int = 1,
    reload_every: int = 0,
    record_shown: bool = False,
    estimate: bool = False,
) -> RunResult:
    """Run one policy on ``P`` for ``steps`` steps and record its cumulative regret.

    Parameters
    ----------
    P
        Preference matrix (validated here).
    algorithm
        A registered name (``"mergedts"``, ...) or a factory ``f(K, seed=rng, **params)``
        returning a :class:`~bandits.base.DuelingBandit` (a policy class will do).
    steps
        Number of time steps (calls to ``select()``).
    seed
        The run's seed: it fixes the arm shuffle, the policy's generator and the outcome
        draws (three independent streams spawned from it).
    params
        Policy constructor parameters.
    checkpoints
        Steps at which to record cumulative regret (default ``log_checkpoints(steps)``);
        ``steps`` is added if missing.
    shuffle
        Relabel the arms with a random permutation before the run (the default).
    fast_forward
        Add the constant regret of a single remaining arm without looping (exact).
    progress
        Called with the number of steps done since the last call, once per block.
    delay
        Apply the outcome of step ``t`` only after ``delay`` more selections (0: at once).
    feedback_batch
        Apply outcomes in groups of this many, each group after ``sync_step(t)``; what is
        still pending at the end is applied then (it has no effect on the regret).
    reload_every
        If positive, select with ``select_at(t, rng_t)`` on a copy of the policy rebuilt
        from its ``state_dict()`` every ``reload_every`` selections, as an API process
        does; ``rng_t`` is a fixed function of ``seed`` and ``t``.
    record_shown
        Count the comparisons shown in ``RunResult.shown`` (always done when any of the
        three above is not at its default; it selects the slower live-like loop).
    estimate
        Record at each checkpoint the report's estimate of the comparisons still needed
        to decide (``RunResult.estimates``, :func:`bandits.decision.decide`).

    Examples
    --------
    >>> from bandits.matrices import cycle2
    >>> res = simulate_run(cycle2(), "uniform", 2000, seed=7)
    >>> int(res.checkpoints[-1]), res.final_regret > 0
    (2000, True)
    >>> simulate_run(cycle2(), "uniform", 2000, seed=7).regret.tolist() == res.regret.tolist()
    True
    """
    P = validate_matrix(P)
    K = P.shape[0]
    steps = int(steps)
    params = dict(params or {})
    cps = log_checkpoints(steps) if checkpoints is None else np.asarray(checkpoints, np.int64)
    cps = np.unique(cps[(cps >= 1) & (cps <= steps)])
    if cps.size == 0 or cps[-1] != steps:
        cps = np.append(cps, steps)

    delay, feedback_batch, reload_every = int(delay), int(feedback_batch), int(reload_every)
    if delay < 0 or feedback_batch < 1 or reload_every < 0:
        raise ValueError(
            f"need delay >= 0, feedback_batch >= 1, reload_every >= 0; got {delay}, "
            f"{feedback_batch}, {reload_every}"
        )

    # a fourth stream (per-step selection generators) leaves the first three as they were
    s_perm, s_policy, s_outcome, s_steps = np.random.SeedSequence(int(seed)).spawn(4)
    perm = np.random.default_rng(s_perm).permutation(K) if shuffle else np.arange(K)
    Pr = P[np.ix_(perm, perm)]  # run arm a is matrix arm perm[a]
    r_arm, winner, kind = arm_regret(Pr)
    bandit = _make_policy(algorithm, K, np.random.default_rng(s_policy), params)
    orng = np.random.default_rng(s_outcome)

    estimates: list[int | None] | None = None
    observe = None
    if estimate:
        from bandits.decision import decide

        estimates = []

        def observe(ci: int) -> None:
            estimates.append(decide(bandit).estimate)

    shown = None
    if delay or feedback_batch > 1 or reload_every or record_shown:
        shown = np.zeros((K, K), dtype=np.int64)
        live = _Live(delay, feedback_batch, reload_every, _StepGenerators(s_steps), shown)
        regret, looped, seconds, ff_at = _loop_live(
            bandit, Pr, r_arm, cps, orng, fast_forward, progress, live, observe
        )
        shown_run, shown = shown, np.zeros_like(shown)
        shown[np.ix_(perm, perm)] = shown_run
    else:
        loop = _loop_multi if bandit.multi else _loop_pairs
        regret, looped, seconds, ff_at = loop(
            bandit, Pr, r_arm, cps, orng, fast_forward, progress, observe
        )
    if estimates is not None and len(estimates) < cps.size:
        # fast-forwarded: the policy was down to one arm, so decided
        estimates += [0] * (cps.size - len(estimates))

    identified = int(perm[bandit.best_arm()])
    if kind == "condorcet":
        correct = identified == int(perm[winner])
    else:
        correct = identified in {int(perm[w]) for w in copeland_winners(Pr)}
    guard = bandit.non_condorcet() or {}
    return RunResult(
        seed=int(seed),
        checkpoints=cps,
        regret=regret,
        identified=identified,
        correct=bool(correct),
        looped_steps=looped,
        loop_seconds=seconds,
        fast_forward_at=ff_at,
        params=bandit.params(),
        shown=shown,
        flagged_non_condorcet=bool(guard.get("flagged", False)),
        flagged_at=guard.get("flagged_at"),
        estimates=estimates,
    )


def _finish_fast_forward(
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


def _loop_pairs(
    bandit: DuelingBandit,
    P: np.ndarray,
    r_arm: np.ndarray,
    cps: np.ndarray,
    orng: np.random.Generator,
    fast_forward: bool,
    progress: Callable[[int], None] | None,
    observe: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, float, int | None]:
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
                    if _single_active(bandit):
                        seconds += time.perf_counter() - start
                        t += k
                        _finish_fast_forward(bandit, cps, regret, ci, t, cum, Rl[i][i])
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


def _loop_multi(
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
                if m == 1 and fast_forward and _single_active(bandit):
                    seconds += time.perf_counter() - start
                    t += k + 1
                    _finish_fast_forward(bandit, cps, regret, ci, t, cum, rl[S[0]])
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


class _StepGenerators:
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
class _Live:
    """How the live-like loop delivers feedback and selects."""

    delay: int
    batch: int
    reload_every: int
    generators: _StepGenerators
    shown: np.ndarray


def _loop_live(
    bandit: DuelingBandit,
    P: np.ndarray,
    r_arm: np.ndarray,
    cps: np.ndarray,
    orng: np.random.Generator,
    fast_forward: bool,
    progress: Callable[[int], None] | None,
    live: _Live,
    observe: Callable[[int], None] | None = None,
) -> tuple[np.ndarray, int, float, int | None]:
    """Select, draw the outcomes at once (same uniforms, in the same order, as the plain
    loops), and apply them ``delay`` selections later in groups of ``batch``."""
    Pl = P.tolist()
    rl = r_arm.tolist()
    Rl = ((r_arm[:, None] + r_arm[None, :]) / 2.0).tolist()
    multi = bandit.multi
    shown = live.shown
    regret = np.zeros(cps.size)
    steps = int(cps[-1])
    pending: deque[list[tuple[int, int, float]]] = deque()

    def apply(n: int, t: int) -> None:
        bandit.sync_step(t)  # the worker's transaction runs at the global step
        for _ in range(n):
            outcomes = pending.popleft()
            if multi:
                bandit.update_many(outcomes)
            else:
                bandit.update(*outcomes[0])

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
        pending.append(outcomes)
        due = len(pending) - live.delay  # outcomes of steps <= t - delay
        while due >= live.batch:
            apply(live.batch, t)
            due -= live.batch
        while ci < cps.size and cps[ci] == t:
            regret[ci] = cum
            if observe is not None:
                observe(ci)
            ci += 1
        if (
            fast_forward
            and len(set(S)) == 1
            and _single_active(bandit)
            and (selector is bandit or _single_active(selector))
        ):
            apply(len(pending), t)
            seconds = time.perf_counter() - start
            _finish_fast_forward(bandit, cps, regret, ci, t, cum, rl[S[0]])
            if progress is not None:
                progress(steps - done)
            return regret, t, seconds, t
        if progress is not None and t - done >= BLOCK:
            progress(t - done)
            done = t
    apply(len(pending), steps)  # feedback still in flight at the end
    seconds = time.perf_counter() - start
    if progress is not None and steps > done:
        progress(steps - done)
    return regret, steps, seconds, None


@dataclass
class Aggregate:
    """Mean and standard error of cumulative regret over runs, per checkpoint."""

    checkpoints: np.ndarray
    mean: np.ndarray
    stderr: np.ndarray  #: sample std (ddof=1) / √runs; 0 for a single run
    steps_per_second: float  #: all looped steps / all loop seconds, over the runs


def aggregate(results: list[RunResult]) -> Aggregate:
    """Combine runs that share checkpoints.

    Examples
    --------
    >>> from bandits.matrices import cycle2
    >>> runs = [simulate_run(cycle2(), "uniform", 500, seed=s) for s in (1, 2, 3)]
    >>> agg = aggregate(runs)
    >>> bool(agg.mean[-1] > 0 and agg.stderr[-1] > 0)
    True
    """
    if not results:
        raise ValueError("no runs to aggregate")
    cps = results[0].checkpoints
    for r in results[1:]:
        if not np.array_equal(r.checkpoints, cps):
            raise ValueError("runs have different checkpoints")
    R = np.vstack([r.regret for r in results])
    stderr = (
        R.std(axis=0, ddof=1) / math.sqrt(len(results))
        if len(results) > 1
        else np.zeros(cps.size)
    )
    looped = sum(r.looped_steps for r in results)
    secs = sum(r.loop_seconds for r in results)
    return Aggregate(
        checkpoints=cps,
        mean=R.mean(axis=0),
        stderr=stderr,
        steps_per_second=looped / secs if secs > 0 else float("inf"),
    )
