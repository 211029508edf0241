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

How a run is stepped lives elsewhere: the plain loops, with their speed-ups and the exact
fast-forward once a policy has converged, are :mod:`bandits.simulation_loops`; the
live-like loop (feedback delayed and batched, selections from reloaded snapshots, as the
live service runs; ``delay``, ``feedback_batch`` or ``applied_at``, ``reload_every``) is
:mod:`bandits.live_loop`. This module sets a run up (matrix, shuffle, seeds, policy),
picks the loop and reports the result, and aggregates runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import DuelingBandit
from bandits.live_loop import LiveFeedback, StepGenerators, loop_live
from bandits.matrices import arm_regret, copeland_winners, validate_matrix
from bandits.simulation_loops import loop_multi, loop_pairs

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
    applied_at: Sequence[int] | None = None,
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
    applied_at
        A schedule instead of ``delay`` and ``feedback_batch``: the outcome of step ``t``
        is applied after the selection of step ``applied_at[t - 1]`` (raised to ``t`` if
        lower; steps past the schedule's end wait ``delay``), the outcomes due at one
        step together. A live run's schedule (each impression's step and the step it was
        credited at) replays its feedback as it was, long tail and uneven batches
        included, where a constant delay and batch are only its typical values.
    record_shown
        Count the comparisons shown in ``RunResult.shown`` (always done when any of the
        four above is not at its default; it selects the slower live-like loop).
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

    if applied_at is not None:
        applied_at = [int(a) for a in applied_at]
        if any(a < 1 for a in applied_at):
            raise ValueError("applied_at: every entry is a step, 1 or more")
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
    if delay or feedback_batch > 1 or reload_every or record_shown or applied_at is not None:
        shown = np.zeros((K, K), dtype=np.int64)
        live = LiveFeedback(delay, feedback_batch, reload_every, StepGenerators(s_steps), shown,
                            applied_at)
        regret, looped, seconds, ff_at = loop_live(
            bandit, Pr, r_arm, cps, orng, fast_forward, progress, live, observe
        )
        shown_run, shown = shown, np.zeros_like(shown)
        shown[np.ix_(perm, perm)] = shown_run
    else:
        loop = loop_multi if bandit.multi else loop_pairs
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
