"""What an experiment has decided, in words and numbers: a pure function of the policy.

:func:`decide` reads a policy (its ``W``, statuses, eliminations and, for the Merge
policies, its own elimination test) and answers an operator's three questions: which
ranker leads (the *champion*), whether the policy has *certified* it, and how many more
comparisons it should take to settle (an *estimate*). No I/O: the service's report
(``GET /experiments/ID/report``), ``rankduel simulate --estimate`` and
``bench/estimate_validation.py`` all call it.

Certified
---------
``recommended`` (:class:`bandits.sparring_certifier.SparringCertifier`) states verdicts
with an anytime-valid, family-wise error rate δ (its ``error_rate``;
:mod:`bandits.confidence`): its champion is certified when every other ranker has been
*shown worse* at ``1 − δ``, and P(a certified champion is not the best) ≤ δ over the
whole run. ``confidence`` is ``1 − δ``, the level its verdicts are stated at, and ``shown_worse`` /
``no_longer_shown`` separate the rankers with that claim from those the policy only
stopped showing (soft elimination, recoverable, no claim). ``statement`` says what the
confidence means (:func:`bandits.confidence.meaning`).

For the other policies: a policy with an elimination test (the Merge family: MergeDTS,
MergeRUCB, MergeGuard, MergeMED; seed 000 Algorithm 1 lines 10–11) certifies its champion
when every other
non-retired ranker has been eliminated by that test, i.e. only one active ranker is left
(line 8: "return the remaining ranker"), and its non-Condorcet guard (MergeGuard,
MergeMED) has not flagged the data. Each elimination was made at confidence
``1 − (t + 1 + C)^(−2α)`` per test (Hoeffding for MergeDTS's ``u_ij < ½``, Chernoff for
MergeMED's divergence: both thresholds are ``2α log(t + 1 + C)`` nats of evidence), which
is the ``confidence`` reported. Policies without an elimination test (RUCB, DTS, RCS, CCB,
Self-Sparring, RMED1, MDB, uniform) keep every ranker in play: they never certify, and
their ``confidence`` is None. The eliminations of the Merge family (faithful to their
papers) carry no family-wise guarantee: ``error_rate`` is None and ``statement`` says so,
so a report does not present a per-test figure as the verdict's.

The estimate
------------
For each undecided ranker ``i`` (active, not the champion) the estimate asks how many more
comparisons its cheapest eliminator ``j`` (an active ranker preferred to ``i``) needs
until the policy's own test ``_beaten(w_ij, n_ij)`` fires, if the pair goes on at its
estimated preference ``p_ij``: the smallest ``m`` with ``_beaten(w_ij + p_ij·m, n_ij + m)``
at the step the decision would come at (the test's threshold grows with ``log t``; the
step is settled by iterating). So the evidence the pair has already collected counts as
it is, and only the comparisons still to come are at the estimated rate. ``p_ij`` is the
empirical preference shrunk towards a Bradley–Terry fit of all of ``W`` with ``PRIOR``
pseudo-comparisons, so that pairs with few or no comparisons (rankers in different
batches have never met) get a value from the rankers' overall strength.

A gap the data cannot size is counted at the data's resolution: the preference is taken
at most ``½ − g`` with ``g = min(½ − CLOSE, RESOLVE / sqrt(m + 1))``, ``m`` the
comparisons of the less compared of the two rankers. A near-tie estimated from a few
dozen comparisons is as likely a gap of that size as a smaller one, and the comparisons
needed grow as ``1/gap²``: taken at its point value it would dominate the sum with a
figure the data do not support. As the rankers are compared more, smaller gaps are taken
at their value. The ranker expected to remain is the strongest of the fit, which need
not be the policy's champion; a ranker no one is estimated to beat is set against it.

The estimate is ``SPEND`` times the sum of those remaining requirements: the policy
does not spend every comparison on the pairs that eliminate (comparisons between two
weak rankers, Thompson-sampling exploration, the round robin over batches). On the
tuning runs, at 20 % of the way, MergeMED and MergeDTS had made 2.4 and 2.2 comparisons
(medians) per comparison that bought evidence for an elimination (``Decision.overhead``,
reported); the constant is used rather than each run's own figure, which follows the
comparisons made so far rather than those still to come.

``PRIOR``, ``VIRTUAL``, ``CLOSE``, ``RESOLVE`` and ``SPEND`` were chosen on tuning seeds
(5001–5010) of the validation instances, never on the seeds the validation reports.
The result is an estimate, not a bound; its accuracy is measured by
``bench/estimate_validation.py`` (docs/decisions.md). Policies without an elimination
test get no estimate (None), with the reason in ``basis``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit
from bandits.common import first_true, wilson_interval

#: pseudo-comparisons of the Bradley–Terry prior in each pair's preference estimate
PRIOR = 200.0
#: virtual wins and losses of each ranker in the Bradley–Terry fit (keeps it finite)
VIRTUAL = 1.0
#: a gap is counted at least min(½ − CLOSE, RESOLVE/sqrt(m + 1)) (the data's resolution)
CLOSE = 0.36
#: rivals considered as the eliminator of each ranker (those it is least likely to beat)
CANDIDATES = 3
#: a ranker compared m times in all resolves gaps down to about RESOLVE/sqrt(m + 1)
RESOLVE = 1.0
#: comparisons the policy makes per comparison that buys evidence for an elimination
SPEND = 2.0
#: the overhead measured so far (reported, not applied) is clipped to [1, MAX_OVERHEAD]
MAX_OVERHEAD = 100.0
#: z of a two-sided 95 % interval
#: comparisons any one pair may still need, at most (an estimate above is "no estimate")
MAX_NEED = 10**9


@dataclass
class Decision:
    """What :func:`decide` returns (arm indices; the service adds names)."""

    champion: int
    certified: bool
    confidence: float | None
    undecided: list[int]
    #: comparisons still needed (None: the policy has no test, or no data to estimate)
    estimate: int | None
    basis: str
    #: arm -> (wins, losses, p, lower, upper) against the champion (not for the champion)
    vs_champion: dict[int, tuple[float, float, float, float, float]] = field(
        default_factory=dict)
    #: arm -> comparisons it still needs against its eliminator (undecided arms only)
    remaining: dict[int, int] = field(default_factory=dict)
    overhead: float | None = None
    flagged: bool = False
    #: δ of a family-wise verdict (None: the policy's verdicts carry no such guarantee)
    error_rate: float | None = None
    #: rankers shown worse at 1 − δ: arm -> the ranker that showed it
    shown_worse: dict[int, int] = field(default_factory=dict)
    #: rankers the policy no longer shows, with no claim that they are worse
    no_longer_shown: list[int] = field(default_factory=list)
    #: what the confidence means, in one sentence for a reader of the report
    statement: str = ""


def has_test(bandit: DuelingBandit) -> bool:
    """Whether the policy eliminates by a test of its own (the Merge family)."""
    return bandit.elimination_test


def bradley_terry_scores(W: np.ndarray, arms: np.ndarray, iters: int = 50) -> np.ndarray:
    """Bradley–Terry strengths of ``arms`` fitted to ``W`` by the MM algorithm (Hunter
    2004), each ranker given ``VIRTUAL`` virtual wins and losses against a ranker of
    strength 1 so that rankers never compared get 1."""
    sub = W[np.ix_(arms, arms)]
    n = sub + sub.T
    wins = sub.sum(axis=1) + VIRTUAL
    s = np.ones(arms.size)
    for _ in range(iters):
        denom = (n / (s[:, None] + s[None, :])).sum(axis=1) + 2.0 * VIRTUAL / (s + 1.0)
        s = wins / denom
        s /= np.exp(np.mean(np.log(s)))
    return s


def preference_estimate(W: np.ndarray, arms: np.ndarray, prior: float | None = None
                        ) -> np.ndarray:
    """``p[a, b]``: the estimated probability that ``arms[a]`` beats ``arms[b]``, the
    empirical preference shrunk towards the Bradley–Terry fit with ``prior`` pseudo-
    comparisons."""
    prior = PRIOR if prior is None else prior
    s = bradley_terry_scores(W, arms)
    bt = s[:, None] / (s[:, None] + s[None, :])
    sub = W[np.ix_(arms, arms)]
    n = sub + sub.T
    p = (sub + prior * bt) / (n + prior)
    np.fill_diagonal(p, 0.5)
    return p


def comparisons_needed(bandit: DuelingBandit, p: float, t: float) -> int | None:
    """The smallest ``n`` at which ``p·n`` wins in ``n`` comparisons fail the policy's own
    test at step ``t`` (None when ``p ≥ ½`` or beyond ``MAX_NEED``): :func:`remaining_needed`
    from no evidence."""
    need = remaining_needed(bandit, 0.0, 0.0, p, t)
    return None if need is None else max(need, 1)


def remaining_needed(bandit: DuelingBandit, w: float, n: float, p: float, t: float
                     ) -> int | None:
    """The smallest ``m`` at which a ranker with ``w`` wins in ``n`` comparisons so far,
    winning ``p`` of the next ``m``, fails the policy's own test at step ``t``: 0 when it
    fails it already, None when ``p ≥ ½`` (the test may never fire) or beyond
    ``MAX_NEED``."""
    saved = bandit.t
    bandit.t = int(t)
    try:
        if bandit._beaten(w, n):
            return 0
        if p >= 0.5:
            return None
        return first_true(lambda m: bandit._beaten(w + p * m, n + m), limit=MAX_NEED)
    finally:
        bandit.t = saved


def confidence_of(bandit: DuelingBandit) -> float | None:
    """``1 − (t + 1 + C)^(−2α)``: one elimination test's confidence at the current step
    (None for policies without a test)."""
    if not has_test(bandit):
        return None
    return 1.0 - math.exp(-2.0 * bandit.alpha * math.log(bandit.t + 1 + bandit.c))


def decide(bandit: DuelingBandit, *, name: str | None = None) -> Decision:
    """The champion, whether it is certified, each ranker against it, and the estimate of
    the comparisons still needed (see the module docstring). ``name``: what the words
    call the policy (the name an experiment was created with, e.g. ``recommended``;
    default: the policy's own, ``bandit.name``).

    Examples
    --------
    >>> import numpy as np
    >>> from bandits import make_bandit
    >>> from bandits.matrices import bradley_terry
    >>> P = bradley_terry(6, gap=0.1, seed=3)
    >>> b = make_bandit("mergemed", 6, seed=1)
    >>> env = np.random.default_rng(0)
    >>> for _ in range(600):
    ...     i, j = b.select()
    ...     b.update(i, j, float(env.random() < P[i, j]))
    >>> d = decide(b)
    >>> d.certified, d.estimate is not None and d.estimate > 0
    (False, True)
    """
    label = name or bandit.name
    W = bandit.W
    champion = int(bandit.best_arm())
    status = bandit.status
    structure = bandit.structure()
    flagged = bool((structure.get("non_condorcet") or {}).get("flagged"))
    vs: dict[int, tuple[float, float, float, float, float]] = {}
    for a in range(bandit.K):
        if a == champion:
            continue
        w, lo_ = float(W[a, champion]), float(W[champion, a])
        n = w + lo_
        p = w / n if n > 0 else 0.5
        lower, upper = wilson_interval(w, n)
        vs[a] = (w, lo_, p, lower, upper)
    active = [int(a) for a in np.flatnonzero(status == ACTIVE)]
    undecided = [a for a in active if a != champion]
    if not has_test(bandit):
        return Decision(champion, False, None, undecided if len(active) > 1 else [],
                        None, f"{label} has no elimination test: it keeps every ranker "
                        "in play and never certifies a winner, so there is nothing to "
                        "count down to (the champion is its current leader)",
                        vs, flagged=flagged)
    verdicts = bandit.verdicts()
    if verdicts is not None:
        return _decide_verdicts(bandit, verdicts, champion, active, vs, flagged)
    conf = confidence_of(bandit)
    statement = NO_GUARANTEE.format(name=label)
    if not undecided:
        basis = ("decided: one ranker left, every other eliminated by "
                 f"{label}'s elimination test")
        if flagged:
            basis += "; but the non-Condorcet guard flagged the data (no single best ranker)"
        return Decision(champion, not flagged, conf, [], 0, basis, vs, flagged=flagged,
                        statement=statement)
    estimate, remaining, overhead = _estimate(bandit, champion, active)
    basis = (f"estimate: for each undecided ranker, the comparisons its cheapest eliminator "
             f"still needs, from the evidence the pair has so far, until {label}'s "
             f"own elimination test fires, at the preferences estimated so far (empirical, "
             f"shrunk towards a Bradley-Terry fit with {PRIOR:g} pseudo-comparisons; a "
             f"preference closer to 1/2 than the comparisons so far can resolve, at most "
             f"{0.5 - CLOSE:g} away, counted at that resolution), summed, times {SPEND:g} "
             f"(the comparisons the policy makes per comparison that buys evidence)")
    if estimate is None:
        basis = ("no estimate: some undecided ranker looks as strong as its rivals, so the "
                 "test may never separate them at the current estimates; " + basis)
    return Decision(champion, False, conf, undecided, estimate, basis, vs, remaining,
                    overhead, flagged, statement=statement)


#: what a Merge policy's report says instead of presenting a per-test figure as the verdict's
NO_GUARANTEE = ("the {name} policy eliminates by one test at a time (as its paper does); the "
                "confidence shown is one test's, not the chance that the verdict is wrong: "
                "its eliminations carry no family-wise guarantee")


def _decide_verdicts(bandit: DuelingBandit, verdicts: dict[str, Any], champion: int,
                     active: list[int], vs: dict[int, tuple[float, float, float, float, float]],
                     flagged: bool) -> Decision:
    """The decision of a policy with family-wise verdicts (``recommended``)."""
    from bandits.confidence import meaning

    delta = float(verdicts["error_rate"])
    worse = {int(a): int(b) for a, b in verdicts["shown_worse"].items()}
    soft = [int(a) for a in verdicts["no_longer_shown"]]
    certified = verdicts["certified"] is not None and not flagged
    field_ = [int(a) for a in np.flatnonzero(bandit.status != RETIRED)]
    open_ = [a for a in field_ if a != champion and a not in worse]
    statement = meaning(delta)
    if certified:
        basis = (f"certified at {100 * (1 - delta):g}%: every other ranker shown worse "
                 f"(anytime-valid normal-mixture test, union over the rankers that could "
                 f"be the best)")
        return Decision(champion, True, 1.0 - delta, [], 0, basis, vs, flagged=flagged,
                        error_rate=delta, shown_worse=worse, no_longer_shown=soft,
                        statement=statement)
    undecided = [a for a in active if a != champion]
    if undecided:
        estimate, remaining, overhead = _estimate(bandit, champion, active)
    else:
        estimate, remaining, overhead = None, {}, None
    basis = (f"not certified: {len(open_)} ranker(s) not yet shown worse at "
             f"{100 * (1 - delta):g}% ({len(undecided)} still shown, {len(soft)} no longer "
             f"shown but not shown worse, still compared with the leader); the estimate "
             f"counts the comparisons until the policy stops showing the rankers still in "
             f"play, not until certification")
    if flagged:
        basis += "; the non-Condorcet guard flagged the data (no single best ranker)"
    # confidence: the level verdicts are stated at (not yet reached), so a report does
    # not mistake the policy for one without a test
    return Decision(champion, False, 1.0 - delta, undecided, estimate, basis, vs, remaining,
                    overhead, flagged, error_rate=delta, shown_worse=worse,
                    no_longer_shown=soft, statement=statement)


def _estimate(bandit: DuelingBandit, champion: int, active: list[int]
              ) -> tuple[int | None, dict[int, int], float]:
    W = bandit.W
    arms = np.flatnonzero(bandit.status != RETIRED)
    pos = {int(a): k for k, a in enumerate(arms)}
    P = preference_estimate(W, arms)
    t_now = float(bandit.t)

    sub = W[np.ix_(arms, arms)]
    played = (sub + sub.T).sum(axis=1)
    # the ranker expected to remain: the strongest active one at the estimates
    leader = max(active, key=lambda a: float(np.log(P[pos[a]] / (1 - P[pos[a]])).sum()))

    def cheapest(i: int, rivals: list[int], t: float) -> tuple[int | None, int]:
        """(comparisons still needed, rival) over the rivals preferred to ``i``; else the
        leader (a near-tie the data have not separated yet, counted at the resolution)."""
        best: tuple[int | None, int] = (None, leader)
        cands = [j for j in rivals if j != i and P[pos[j], pos[i]] > 0.5] or [leader]
        # the need grows with p: only the few rivals i is least likely to beat can be
        # the cheapest (what is already collected differs between them)
        cands = sorted(cands, key=lambda j: P[pos[i], pos[j]])[:CANDIDATES]
        for j in cands:
            m = min(played[pos[i]], played[pos[j]])
            close = 0.5 - min(0.5 - CLOSE, RESOLVE / math.sqrt(m + 1.0))
            need = remaining_needed(bandit, float(W[i, j]), float(W[i, j] + W[j, i]),
                                    min(float(P[pos[i], pos[j]]), close), t)
            if need is not None and (best[0] is None or need < best[0]):
                best = (need, j)
        return best

    # overhead so far: comparisons per comparison that bought evidence for an elimination
    useful = 0.0
    for a in arms.tolist():
        if a == leader:
            continue
        if bandit.status[a] == ELIMINATED and a in bandit.eliminated:
            by = bandit.eliminated[a]["by"]
            useful += float(W[a, by] + W[by, a])
        elif bandit.status[a] == ACTIVE:
            _need, j = cheapest(a, active, t_now)
            useful += float(W[a, j] + W[j, a])
    total = float(bandit.n_updates)
    overhead = min(max(total / useful, 1.0), MAX_OVERHEAD) if useful > 0 else 1.0

    estimate: int | None = 0
    remaining: dict[int, int] = {}
    t_future = t_now
    for _ in range(3):  # the test's threshold grows with log t: settle t at the decision
        remaining = {}
        missing = False
        for a in active:
            if a == leader:
                continue
            need, _j = cheapest(a, active, t_future)
            if need is None:
                missing = True
                continue
            remaining[a] = int(need)
        estimate = None if missing else math.ceil(SPEND * sum(remaining.values()))
        if estimate is None:
            break
        t_future = t_now + estimate
    return estimate, remaining, overhead


def estimated_regret(bandit: DuelingBandit, exposure: np.ndarray,
                     champion: int | None = None) -> float:
    """Cumulative regret against the champion on the empirical preferences, from each
    ranker's exposure (seed 000 eq. 1, linear in exposure: see
    :func:`bandits.matrices.exposure_regret`)."""
    from bandits.common import preferences
    from bandits.matrices import exposure_regret

    c = bandit.best_arm() if champion is None else champion
    return exposure_regret(preferences(bandit.W), np.asarray(exposure, dtype=float), best=c)


def as_dict(d: Decision, names: dict[int, str]) -> dict[str, Any]:
    """The decision with ranker names, plain JSON (for logs and the simulator)."""
    return {
        "champion": names.get(d.champion, d.champion),
        "certified": d.certified,
        "confidence": d.confidence,
        "undecided": [names.get(a, a) for a in d.undecided],
        "estimated_comparisons_to_decide": d.estimate,
        "estimate_basis": d.basis,
        "error_rate": d.error_rate,
        "shown_worse": {names.get(a, a): names.get(b, b) for a, b in d.shown_worse.items()},
        "no_longer_shown": [names.get(a, a) for a in d.no_longer_shown],
        "statement": d.statement,
    }
