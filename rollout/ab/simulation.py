"""Offline A/B tests on the simulated search world: the live demo's users and click
model, many seeded runs, one summary per run.

Why here. The runner simulates the *rollout* design (sticky buckets allocated by
:func:`rollout.allocation.allocate`, one arm's list shown whole to each user, users as
the unit) and reads only the world and its click models from :mod:`interleaving`, as
the live demo does; the dueling-bandit simulator (:mod:`bandits.simulator`) knows
preference matrices, not users, and ``interleaving`` knows lists, not arms.

The world, as live
------------------
The demo (``demo/run.py``, ``Demo.user_session``) sends each search from a user drawn
uniformly from :data:`DEMO_USERS` ids, for a query drawn uniformly, and clicks on the
shown list with a click model of :mod:`interleaving.clicks` (``navigational`` by
default). Here each search does the same: a user of the pool, a query, the list of the
user's arm's ranker (the top ``k`` of :meth:`interleaving.world.World.top_k`), and a
clicked search with the click model's probability of at least one click on that list
(:func:`click_probabilities`, exact for the cascade and position-based models; the
metric needs only whether the search got a click). A user's bucket is a uniform draw per
run, which is what the hash of :mod:`rollout.hashing` is for the users of a run.

The true difference of per-user CTR between two arms is known exactly: every user of an
arm has the same chance of a click per search (the demo's users are alike), the mean of
the world's queries of :func:`click_probabilities`, so a user's CTR has that mean
whatever their number of searches.

A broken split (``fallback``): a share of each treatment's users is served, and counted
in, the control (a treatment ranker that times out for them, and the service falls back
to the control's list) — the scenario the SRM test must catch.

Each checkpoint (log-spaced in searches, :func:`bandits.simulator.log_checkpoints`) is a
look at the report: per-user moments per arm (:mod:`rollout.ab.moments`), every
treatment against the control (:func:`rollout.ab.compare.analyse`), and the users per
arm against their shares (:func:`rollout.srm.check`). A decision and an SRM flag, once
made, are kept (as the service keeps them).

Pure: numpy and scipy only.

Examples
--------
>>> from interleaving.world import World
>>> w = World(seed=1, n_rankers=12, n_queries=200, clear_best=True)   # the demo's
>>> run = simulate_ab(w, [2, 2], searches=20_000, seed=3)   # A/A: the same ranker twice
>>> run.treatments[0].decided, run.srm_flagged
(False, False)
>>> run = simulate_ab(w, [2, w.true_best], searches=20_000, seed=3)
>>> t = run.treatments[0]
>>> t.decided, t.direction, t.covered, round(t.true_lift, 4)
(True, 1, True, 0.0307)
>>> broken = simulate_ab(w, [2, 6], searches=20_000, seed=3, fallback=0.1)
>>> broken.srm_flagged_at, broken.srm_message  # doctest: +NORMALIZE_WHITESPACE
(2300, 'the treatment got 45 % of users where 50 % were assigned
 (1,022 of 2,269; e-value 9.1e+03, p < 0.001)')
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from bandits.simulator import log_checkpoints
from interleaving.clicks import CascadeModel, ClickModel, PositionBasedModel, get_click_model
from rollout import srm
from rollout.ab.compare import MIN_USERS, analyse, certified_best
from rollout.ab.moments import Moments
from rollout.ab.sequence import DEFAULT_TARGET_USERS
from rollout.allocation import allocate
from rollout.hashing import BUCKETS

#: the demo's user ids: ``user{0..DEMO_USERS − 1}`` (demo/run.py, ``Demo.user_session``)
DEMO_USERS = 100_000
#: the first look at the report, in searches
FIRST_LOOK = 100


def click_probabilities(world: Any, model: str | ClickModel = "navigational",
                        k: int = 10) -> np.ndarray:
    """``(R, Q)``: the chance that a search of query ``q`` shown ranker ``r``'s top ``k``
    gets at least one click. Cascade models: no click at all is no click at any slot,
    ``Π (1 − P(click | gᵢ))`` (a user stops only after a click); position-based:
    ``Π (1 − γᵢ α(gᵢ))``. Empty slots are never clicked.

    >>> from interleaving.world import World
    >>> w = World(seed=2, n_rankers=2, n_queries=5)
    >>> p = click_probabilities(w, "perfect")
    >>> p.shape, bool(((0 <= p) & (p <= 1)).all())
    ((2, 5), True)
    """
    m = get_click_model(model) if isinstance(model, str) else model
    top = world.top_k(k).astype(np.intp)
    Q = world.n_queries
    g = np.where(top >= 0, world.grade_table[np.arange(Q)[None, :, None], np.maximum(top, 0)],
                 -1)
    shifted = g + 1
    if isinstance(m, CascadeModel):
        p = m.p_click[shifted]
    elif isinstance(m, PositionBasedModel):
        p = m.examination(k)[None, None, :] * m.attractiveness[shifted]
    else:
        raise ValueError(f"no exact click probability for the {type(m).__name__} model")
    return 1.0 - np.prod(1.0 - p, axis=2)


@dataclass
class TreatmentRun:
    """One treatment against the control in one run (the last look, and over the run)."""

    arm: str
    ranker: int
    true_difference: float
    true_lift: float
    decided: bool
    #: searches (of the whole experiment) at the first look that decided
    decided_at: int | None
    direction: int
    difference: float
    interval: tuple[float, float]
    lift: float
    lift_interval: tuple[float, float]
    #: the last look's intervals hold the true difference / lift
    covered: bool
    lift_covered: bool
    #: some look's interval of the difference missed the true difference (time-uniform;
    #: looks from the first with ``min_users`` in every arm, when the report shows one)
    ever_missed: bool
    users_needed: int | None

    @property
    def correct(self) -> bool:
        """Decided in the true direction (never, when the true difference is 0)."""
        return self.decided and self.direction * self.true_difference > 0


@dataclass
class ABRun:
    """One seeded A/B run: its arms, users, every treatment's outcome, the SRM check."""

    seed: int
    rankers: list[int]
    shares: list[float]
    searches: int
    users: dict[str, int]
    treatments: list[TreatmentRun]
    srm_flagged: bool
    srm_flagged_at: int | None
    srm_message: str
    params: dict[str, Any] = field(default_factory=dict)
    #: with ``certify``: the ranker certified the best of the arms
    #: (:func:`rollout.ab.compare.certified_best`), and the searches at that look
    best: int | None = None
    best_at: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for t in out["treatments"]:
            for key in ("interval", "lift_interval"):
                t[key] = [None if not math.isfinite(x) else x for x in t[key]]
            for key in ("difference", "lift"):
                if not math.isfinite(t[key]):
                    t[key] = None
        return out


def arm_names(n: int) -> list[str]:
    """``control``, ``treatment`` (one treatment) or ``treatment 1`` … ``treatment K−1``."""
    if n == 2:
        return ["control", "treatment"]
    return ["control", *[f"treatment {i}" for i in range(1, n)]]


def simulate_ab(world: Any, rankers: Sequence[int], searches: int, seed: int, *,
                shares: Sequence[float] | None = None, click_model: str = "navigational",
                k: int = 10, delta: float = 0.05, fallback: float = 0.0,
                users: int = DEMO_USERS, n_target: float = DEFAULT_TARGET_USERS,
                min_users: int = MIN_USERS, per_decade: int = 20,
                stop_when_decided: bool = False, certify: bool = False,
                probabilities: np.ndarray | None = None) -> ABRun:
    """One seeded A/B run of ``rankers`` (the control first, then the treatments).

    Parameters
    ----------
    world
        An :class:`interleaving.world.World` (the demo's is ``World(seed, K, 200,
        clear_best=True)``).
    rankers
        World rankers of the arms: ``rankers[0]`` the control; a ranker may repeat (A/A).
    searches
        Searches in the run (all arms).
    seed
        Fixes the buckets, users, queries and clicks.
    shares
        Each arm's share of the users (default equal), summing to at most 1 (normalised).
    click_model, k
        The users' click model and the page length, as the demo's.
    delta
        The experiment's error rate (split over the treatments, :func:`analyse`).
    fallback
        Share of each treatment's users served and counted in the control (a broken
        split).
    users
        The pool the searches' users are drawn from (the demo's :data:`DEMO_USERS`).
    n_target, min_users
        The confidence sequence's tuning and the users per arm before a decision.
    per_decade
        Looks at the report per factor 10 of searches.
    stop_when_decided
        Stop at the first look where every treatment is decided (with ``certify``: where
        a best arm is certified).
    certify
        Also ask, at each look, which arm is the best of all
        (:func:`rollout.ab.compare.certified_best`: every pair at ``δ/(2(K − 1))``).
    probabilities
        :func:`click_probabilities` of ``world`` (computed when not given).
    """
    K = len(rankers)
    if K < 2:
        raise ValueError("an A/B test needs a control and at least one treatment")
    names = arm_names(K)
    sh = np.full(K, 1.0 / K) if shares is None else np.asarray(shares, dtype=float)
    if sh.shape != (K,) or np.any(sh <= 0):
        raise ValueError(f"shares must be {K} positive numbers")
    sh = sh / sh.sum()
    pc = click_probabilities(world, click_model, k) if probabilities is None else probabilities
    ctr = pc.mean(axis=1)
    rng = np.random.default_rng([20_511, int(seed)])

    # sticky buckets: the users' buckets, the arms' ranges as the service allocates them
    ranges = allocate({}, {n: float(s) for n, s in zip(names, sh, strict=True)})
    starts, ends, owner = [], [], []
    for a, name in enumerate(names):
        for s, e in ranges.get(name, []):
            starts.append(s)
            ends.append(e)
            owner.append(a)
    order = np.argsort(starts)
    starts_a, owner_a = np.asarray(starts)[order], np.asarray(owner)[order]
    buckets = rng.integers(BUCKETS, size=users)
    assigned = owner_a[np.searchsorted(starts_a, buckets, side="right") - 1]
    served = assigned.copy()
    if fallback > 0:
        served[(assigned > 0) & (rng.random(users) < fallback)] = 0
    ranker_of = np.asarray(rankers, dtype=np.intp)

    searches_u = np.zeros(users, dtype=np.int64)
    clicked_u = np.zeros(users, dtype=np.int64)
    # per arm: users, sum and sum of squares of their CTR, kept as the service keeps its
    # counters: each search's user replaces their old value by the new one (increments)
    n_arm = np.zeros(K, dtype=np.int64)
    s_arm = np.zeros(K)
    q_arm = np.zeros(K)
    cps = log_checkpoints(int(searches), per_decade)
    cps = cps[cps >= min(FIRST_LOOK, int(searches))]
    true_diff = [ctr[ranker_of[a]] - ctr[ranker_of[0]] for a in range(1, K)]
    true_lift = [ctr[ranker_of[a]] / ctr[ranker_of[0]] - 1.0 for a in range(1, K)]
    decided_at: list[int | None] = [None] * (K - 1)
    first: list[Any] = [None] * (K - 1)
    missed = [False] * (K - 1)
    srm_at: int | None = None
    srm_msg = ""
    best: int | None = None
    best_at: int | None = None
    period_shares = dict(zip(names, sh.tolist(), strict=True))
    done = 0
    last = None
    check = None
    for cp in cps:
        n = int(cp) - done
        u = rng.integers(users, size=n)
        q = rng.integers(world.n_queries, size=n)
        click = rng.random(n) < pc[ranker_of[served[u]], q]
        touched, inv, cnt = np.unique(u, return_inverse=True, return_counts=True)
        before_s, before_c = searches_u[touched], clicked_u[touched]
        searches_u[touched] += cnt
        clicked_u[touched] += np.bincount(inv, weights=click,
                                          minlength=touched.size).astype(np.int64)
        old = np.where(before_s > 0, before_c / np.maximum(before_s, 1), 0.0)
        new = clicked_u[touched] / searches_u[touched]
        arm_t = served[touched]
        n_arm += np.bincount(arm_t, weights=before_s == 0, minlength=K).astype(np.int64)
        s_arm += np.bincount(arm_t, weights=new - old, minlength=K)
        q_arm += np.bincount(arm_t, weights=new * new - old * old, minlength=K)
        done = int(cp)
        arms = {name: Moments(int(n_arm[a]), float(s_arm[a]), float(q_arm[a]))
                for a, name in enumerate(names)}
        last = analyse(arms, "control", delta, n_target=n_target, min_users=min_users,
                       metric="ctr")
        shown = int(n_arm.min()) >= min_users  # the report shows intervals from here
        for i, name in enumerate(names[1:]):
            c = last[name]
            if shown and not c.covers(true_diff[i]):
                missed[i] = True
            if c.decided and decided_at[i] is None:
                decided_at[i], first[i] = done, c
        check = srm.check([srm.Period(period_shares, {nm: arms[nm].n for nm in names})])
        if check.flagged and srm_at is None:
            srm_at, srm_msg = done, check.message
        if certify and best_at is None:
            b = certified_best(arms, delta, n_target=n_target, min_users=min_users,
                               metric="ctr")
            if b is not None:
                best, best_at = int(ranker_of[names.index(b)]), done
        if stop_when_decided and (best_at is not None if certify else
                                  all(d is not None for d in decided_at)):
            break
    assert last is not None and check is not None
    if not srm_msg:
        srm_msg = check.message
    out = []
    for i, name in enumerate(names[1:]):
        c = last[name]
        # the decision is the first one; the estimate and intervals are the last look's
        direction = first[i].direction if first[i] is not None else 0
        out.append(TreatmentRun(
            arm=name, ranker=int(ranker_of[i + 1]), true_difference=float(true_diff[i]),
            true_lift=float(true_lift[i]), decided=decided_at[i] is not None,
            decided_at=decided_at[i], direction=direction, difference=float(c.difference),
            interval=tuple(map(float, c.interval)), lift=float(c.lift),
            lift_interval=tuple(map(float, c.lift_interval)),
            covered=bool(c.covers(true_diff[i])),
            lift_covered=bool(c.lift_interval[0] <= true_lift[i] <= c.lift_interval[1]),
            ever_missed=missed[i], users_needed=c.users_needed))
    return ABRun(seed=int(seed), rankers=[int(r) for r in rankers],
                 shares=[float(s) for s in sh], searches=done,
                 users={nm: int(((searches_u > 0) & (served == a)).sum())
                        for a, nm in enumerate(names)},
                 treatments=out, srm_flagged=srm_at is not None, srm_flagged_at=srm_at,
                 srm_message=srm_msg,
                 params={"click_model": click_model, "k": k, "delta": delta,
                         "fallback": fallback, "users": users, "n_target": n_target,
                         "min_users": min_users},
                 best=best, best_at=best_at)


__all__ = ["DEMO_USERS", "ABRun", "TreatmentRun", "arm_names", "click_probabilities",
           "simulate_ab"]
