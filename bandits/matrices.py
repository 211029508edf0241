"""Preference matrices: validation, winners, regret, and seeded test instances.

A preference matrix ``P`` is K×K with ``P[i, j]`` the probability that arm ``i`` beats
arm ``j`` in one comparison; ``P[i, j] + P[j, i] = 1`` and the diagonal is ½. It defines a
dueling-bandit problem (Li et al. 2020, §2) and drives the offline simulator's proxy method
(Li et al. 2020, §5.3: each comparison is a Bernoulli draw with mean ``P[i, j]``).

Everything here is pure numpy/scipy: reading files is the CLI's job
(:mod:`cli.matrix_files`).

Generators
----------
``cycle`` / ``cycle2``
    The Cycle and Cycle2 sets of Li et al. 2020, §5.2 (20 arms, a weak Condorcet winner over a
    cyclic field).
``utility_matrix`` / ``UTILITY_SETS``
    The utility-based sets of Brost et al. 2016, Table 1 (``1good50poor``, ``arith51``, ...).
``bradley_terry``
    A Bradley–Terry (pairwise Plackett–Luce) instance of any K with a chosen minimum
    gap, optionally with a share of *uninformative* arms.
``non_condorcet``
    No Condorcet winner and several Copeland winners.
"""

from __future__ import annotations

import math

import numpy as np

from bandits import special
from bandits.base import make_rng

#: how far ``P[i, j] + P[j, i]`` may stray from 1
SUM_TOLERANCE = 1e-6


# ---------------------------------------------------------------------- validation
def validate_matrix(P: object, *, tol: float = SUM_TOLERANCE) -> np.ndarray:
    """Check that ``P`` is a preference matrix and return it as a float array.

    Raises ``ValueError`` naming the first problem and where it is: not square, not
    finite, an entry outside [0, 1], or a pair with ``p_ij + p_ji`` not 1 (within
    ``tol``; the diagonal must therefore be ½).

    Examples
    --------
    >>> validate_matrix([[0.5, 0.7], [0.3, 0.5]]).shape
    (2, 2)
    >>> validate_matrix([[0.5, 0.7], [0.4, 0.5]])
    Traceback (most recent call last):
    ...
    ValueError: p[0,1] + p[1,0] = 0.7 + 0.4 = 1.1, must be 1 (within 1e-06)
    """
    try:
        A = np.asarray(P, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"preference matrix is not numeric: {exc}") from None
    if A.ndim == 1 and A.size == 1:
        A = A.reshape(1, 1)
    if A.ndim != 2:
        raise ValueError(f"preference matrix must be 2-dimensional, got shape {A.shape}")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"preference matrix must be square, got {A.shape[0]}×{A.shape[1]}")
    if A.shape[0] < 1:
        raise ValueError("preference matrix is empty")
    bad = np.argwhere(~np.isfinite(A))
    if bad.size:
        i, j = bad[0]
        raise ValueError(f"p[{i},{j}] = {A[i, j]} is not a finite number")
    bad = np.argwhere((A < 0.0) | (A > 1.0))
    if bad.size:
        i, j = bad[0]
        raise ValueError(f"p[{i},{j}] = {A[i, j]:g} is outside [0, 1]")
    dev = np.abs(A + A.T - 1.0)
    bad = np.argwhere(dev > tol)
    if bad.size:
        i, j = bad[0]
        if i == j:
            raise ValueError(f"diagonal p[{i},{i}] = {A[i, i]:g}, must be 0.5 (within {tol:g})")
        raise ValueError(
            f"p[{i},{j}] + p[{j},{i}] = {A[i, j]:g} + {A[j, i]:g} = {A[i, j] + A[j, i]:g}, "
            f"must be 1 (within {tol:g})"
        )
    return A


# ---------------------------------------------------------------------- winners and regret
def condorcet_winner(P: np.ndarray) -> int | None:
    """The arm that beats every other arm (``P[c, j] > ½`` for all ``j ≠ c``), or None.

    Examples
    --------
    >>> condorcet_winner(np.array([[0.5, 0.6], [0.4, 0.5]]))
    0
    >>> condorcet_winner(cycle(4)), condorcet_winner(np.full((2, 2), 0.5))
    (0, None)
    """
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    beats = (P > 0.5).sum(axis=1)
    winners = np.flatnonzero(beats == K - 1)
    return int(winners[0]) if winners.size else None


def copeland_scores(P: np.ndarray) -> np.ndarray:
    """Normalised Copeland scores ζ_i = 1/(K-1) Σ_{k≠i} 1(p_ik > ½) (Li et al. 2020, §6.5)."""
    P = np.asarray(P, dtype=float)
    K = P.shape[0]
    return (P > 0.5).sum(axis=1) / max(K - 1, 1)


def copeland_winners(P: np.ndarray) -> list[int]:
    """The arms with the highest Copeland score (every matrix has at least one).

    Examples
    --------
    >>> copeland_winners(non_condorcet(7, n_winners=2, seed=0)) == [0, 1]
    True
    """
    z = copeland_scores(P)
    return np.flatnonzero(z == z.max()).tolist()


def arm_regret(P: np.ndarray) -> tuple[np.ndarray, int | None, str]:
    """Per-arm regret, the winner, and the kind of winner.

    With a Condorcet winner ``c``: regret of arm ``k`` is Δ_ck = p_ck − ½ (Li et al. 2020,
    eq. 1), so a pair ``(i, j)`` costs (Δ_ci + Δ_cj)/2 and a multileaved set the mean over
    its arms. Without one: the Copeland regret of Li et al. 2020, eq. 10, per arm ζ* − ζ_k, so a
    pair costs ζ* − (ζ_i + ζ_j)/2. The winner is the Copeland winner when it is unique,
    else None.

    Examples
    --------
    >>> r, w, kind = arm_regret(np.array([[0.5, 0.7], [0.3, 0.5]]))
    >>> r.round(3).tolist(), w, kind
    ([0.0, 0.2], 0, 'condorcet')
    """
    P = np.asarray(P, dtype=float)
    c = condorcet_winner(P)
    if c is not None:
        return P[c] - 0.5, c, "condorcet"
    z = copeland_scores(P)
    winners = copeland_winners(P)
    return z.max() - z, (winners[0] if len(winners) == 1 else None), "copeland"


def pair_regret(P: np.ndarray) -> np.ndarray:
    """K×K matrix of the regret of comparing ``(i, j)``: the mean of the arms' regrets."""
    r, _, _ = arm_regret(P)
    return (r[:, None] + r[None, :]) / 2.0


def exposure_regret(P: np.ndarray, exposure: np.ndarray, best: int | None = None) -> float:
    """Cumulative regret of a history known only by how often each arm was shown.

    A comparison of ``i`` and ``j`` costs ``(r_i + r_j) / 2`` (Li et al. 2020, eq. 1; a lone arm
    ``i = j`` costs ``r_i``, a multileaved set the mean over its arms), which is linear in
    the arms' exposure: with ``exposure[a]`` = the summed shares of arm ``a`` over all
    comparisons, the cumulative regret is ``Σ_a exposure_a · r_a``. The per-arm regret is
    ``r_a = Δ_{best,a} = P[best, a] − ½`` against the arm ``best``, or without ``best``
    that of :func:`arm_regret` (the Condorcet winner's ``Δ``, else the Copeland regret of
    Li et al. 2020, eq. 10). Arms that only one of ``P`` and ``exposure`` covers do not count.

    The live service computes it twice per experiment: *estimated*, with ``P`` the
    empirical :func:`bandits.common.preferences` of ``W`` and ``best`` the champion, and
    *true*, with the preference matrix given at creation.

    Examples
    --------
    A pair (0, 1) shown twice and arm 1 alone once, with Δ = (0, 0.2):
    ``2 · (0 + 0.2)/2 + 0.2 = 0.4``.

    >>> P = np.array([[0.5, 0.7], [0.3, 0.5]])
    >>> round(exposure_regret(P, np.array([1.0, 2.0])), 12)
    0.4
    >>> round(exposure_regret(P, np.array([1.0, 2.0]), best=1), 12)  # against arm 1
    -0.2
    """
    P = np.asarray(P, dtype=float)
    r = P[int(best)] - 0.5 if best is not None else arm_regret(P)[0]
    exposure = np.asarray(exposure, dtype=float)
    k = min(r.size, exposure.size)
    return float(np.dot(r[:k], exposure[:k]))


# ---------------------------------------------------------------------- generators
def _shuffled(P: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    perm = rng.permutation(P.shape[0])
    return P[np.ix_(perm, perm)]


def _symmetrise(P: np.ndarray) -> np.ndarray:
    """Make ``P[j, i] = 1 - P[i, j]`` exact (lower triangle from upper) and diagonal ½."""
    P = np.triu(P, 1)
    P = P + np.tril(1.0 - P.T, -1)
    np.fill_diagonal(P, 0.5)
    return P


def cycle(k: int = 20, *, p_winner: float = 0.51, p_cycle: float = 1.0) -> np.ndarray:
    """The Cycle set of Li et al. 2020, §5.2 (after Zoghi et al.).

    Arm 0 is the Condorcet winner and beats each other arm with probability
    ``p_winner``. The other ``k - 1`` arms sit at a round table: each beats the
    ``(k - 2) / 2`` arms to its left with probability ``p_cycle`` and loses to the same
    number to its right. With the paper's K = 20 the Borda score Σ_j p_ij of the winner is
    10.19 and of every other arm 9.99 (the diagonal counted as ½), as the paper says.
    ``k - 1`` must be odd so every seat has as many arms to its left as to its right.

    Examples
    --------
    >>> P = cycle()
    >>> P.shape, float(P[0].sum().round(2)), float(P[1].sum().round(2))
    ((20, 20), 10.19, 9.99)
    """
    k = int(k)
    if k < 4 or (k - 1) % 2 == 0:
        raise ValueError(f"cycle needs an even k >= 4 (k - 1 arms round the table), got {k}")
    if not 0.5 < p_winner <= 1.0 or not 0.5 < p_cycle <= 1.0:
        raise ValueError("p_winner and p_cycle must be in (0.5, 1]")
    n = k - 1
    P = np.full((k, k), 0.5)
    P[0, 1:] = p_winner
    for a in range(n):
        for step in range(1, n // 2 + 1):  # the n // 2 seats to the left of seat a
            b = (a + step) % n
            P[1 + a, 1 + b], P[1 + b, 1 + a] = p_cycle, 1.0 - p_cycle
    P[1:, 0] = 1.0 - p_winner
    return P


def cycle2(k: int = 20, *, p_winner: float = 0.6, p_cycle: float = 0.51) -> np.ndarray:
    """The Cycle2 set of Li et al. 2020, §5.2: the Cycle layout with gentler cycles (0.51) and a
    clearer winner (0.6); Borda scores 11.90 for the winner, 9.9 for the rest.

    Examples
    --------
    >>> P = cycle2()
    >>> float(P[0].sum().round(2)), float(P[5].sum().round(2))
    (11.9, 9.9)
    """
    return cycle(k, p_winner=p_winner, p_cycle=p_cycle)


def utility_matrix(utilities: np.ndarray | list[float]) -> np.ndarray:
    """Preferences from utilities under Brost et al. 2016's user model (§4.1.2).

    Each compared arm draws a score from N(u, 1) and the higher score wins, so
    p_ij = Φ((u_i − u_j)/√2).

    Examples
    --------
    >>> P = utility_matrix([0.8, 0.2])
    >>> round(float(P[0, 1]), 4)
    0.6643
    """
    u = np.asarray(utilities, dtype=float)
    # ndtr: the normal CDF Φ (scipy.stats's norm.cdf)
    return _symmetrise(special.ndtr((u[:, None] - u[None, :]) / math.sqrt(2.0)))


def _good_poor(n07: int, n02: int) -> np.ndarray:
    return np.concatenate([[0.8], np.full(n07, 0.7), np.full(n02, 0.2)])


#: Brost et al. 2016, Table 1: dataset name -> utilities (the 0.8 arm first)
UTILITY_SETS: dict[str, np.ndarray] = {
    "1good5poor": _good_poor(0, 5),
    "1good50poor": _good_poor(0, 50),
    "1good200poor": _good_poor(0, 200),
    "2good4poor": _good_poor(1, 4),
    "11good40poor": _good_poor(10, 40),
    "41good160poor": _good_poor(40, 160),
    "3good3poor": _good_poor(2, 3),
    "21good30poor": _good_poor(20, 30),
    "81good120poor": _good_poor(80, 120),
    **{
        f"arith{n + 1}": np.concatenate([[0.8], np.linspace(0.7, 0.2, n)])
        for n in (5, 50, 200)
    },
    **{
        f"geom{n + 1}": np.concatenate([[0.8], np.geomspace(0.7, 0.2, n)])
        for n in (5, 50, 200)
    },
}


def utility_set(name: str) -> np.ndarray:
    """The preference matrix of one of Brost et al. 2016's Table 1 sets (arm 0 is the best).

    Examples
    --------
    >>> utility_set("arith51").shape
    (51, 51)
    """
    try:
        return utility_matrix(UTILITY_SETS[name])
    except KeyError:
        raise ValueError(
            f"unknown utility set {name!r}; known: {', '.join(UTILITY_SETS)}"
        ) from None


def bradley_terry(
    k: int,
    *,
    gap: float = 0.01,
    spread: float = 4.0,
    uninformative_share: float = 0.0,
    uninformative_gap: float | None = None,
    winner_gap: float | None = None,
    seed: int | np.random.Generator | None = None,
) -> np.ndarray:
    """A Bradley–Terry instance: p_ij = σ(θ_i − θ_j) for strengths θ, labels shuffled.

    Bradley–Terry is Plackett–Luce restricted to pairs, so the arms are totally ordered and
    the strongest is the Condorcet winner. Neighbours in that order are the hardest pairs;
    their strength differences are ``logit(½ + gap)`` plus a random exponential extra, one
    of them with no extra, so the smallest gap |p_ij − ½| over all pairs is exactly
    ``gap``. The extras are scaled so the strengths span ``spread`` (in logits: the best
    beats the worst informative arm with probability σ(spread)), or the minimum the gaps
    need. Exponential spacing leaves some near-ties (gaps close to ``gap``) and some clear
    differences, as feature rankers show.

    ``uninformative_share`` of the arms (rounded) are *uninformative*, like rankers that
    return random lists (Li et al. 2020, Assumptions 1–2): tied at exactly ½ among themselves and
    losing to every informative arm, by at least ``uninformative_gap`` (default ``gap``).

    ``winner_gap`` (optional, ≥ ``gap``) fixes p − ½ between the best and the second-best
    arm, which sets how long identifying the winner takes; the smallest gap is then
    between two other neighbours (needs 3 informative arms to stay exactly ``gap``).

    Examples
    --------
    >>> P = bradley_terry(10, gap=0.02, seed=3)
    >>> condorcet_winner(P) is not None
    True
    >>> off = ~np.eye(10, dtype=bool)
    >>> bool(np.isclose(np.abs(P[off] - 0.5).min(), 0.02))
    True
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not 0.0 < gap < 0.5:
        raise ValueError(f"gap must be in (0, 0.5), got {gap}")
    if not 0.0 <= uninformative_share < 1.0:
        raise ValueError(f"uninformative share must be in [0, 1), got {uninformative_share}")
    rng = make_rng(seed)
    n_u = round(uninformative_share * k)
    n_i = k - n_u
    if n_i < 1:
        raise ValueError(
            f"no informative arm left: k={k}, uninformative share {uninformative_share}"
        )
    delta = float(special.logit(0.5 + gap))
    # differences between neighbours in the order (best first)
    extra = rng.exponential(1.0, size=max(n_i - 1, 0))
    if winner_gap is None:
        if extra.size:
            extra[rng.integers(extra.size)] = 0.0
            room = max(spread - (n_i - 1) * delta, 0.0)
            extra *= room / extra.sum() if extra.sum() > 0 else 0.0
        steps = delta + extra
    else:
        if not gap <= winner_gap < 0.5:
            raise ValueError(f"winner gap must be in [gap, 0.5), got {winner_gap}")
        if n_i < 2:
            raise ValueError("a winner gap needs at least 2 informative arms")
        # the first step (best to second best) is fixed; the exact-minimum step is another
        w_step = float(special.logit(0.5 + winner_gap))
        rest = extra[1:]
        if rest.size:
            rest[rng.integers(rest.size)] = 0.0
            room = max(spread - w_step - (n_i - 2) * delta, 0.0)
            rest *= room / rest.sum() if rest.sum() > 0 else 0.0
        steps = np.concatenate([[w_step], delta + rest])
    theta = -np.concatenate([[0.0], np.cumsum(steps)])
    if n_u:
        u_gap = gap if uninformative_gap is None else float(uninformative_gap)
        if not 0.0 < u_gap < 0.5:
            raise ValueError(f"uninformative gap must be in (0, 0.5), got {u_gap}")
        # one common strength: exactly ½ among themselves, below every informative arm
        theta = np.concatenate(
            [theta, np.full(n_u, theta[-1] - float(special.logit(0.5 + u_gap)))])
    P = _symmetrise(special.expit(theta[:, None] - theta[None, :]))
    # exact ½ between uninformative arms (expit(0) is exactly ½, but say so explicitly)
    P[n_i:, n_i:] = 0.5
    return _shuffled(P, rng)


def non_condorcet(
    k: int = 32,
    *,
    n_winners: int = 2,
    gap: float = 0.01,
    spread: float = 4.0,
    upset: float = 0.1,
    seed: int | np.random.Generator | None = None,
) -> np.ndarray:
    """No Condorcet winner, ``n_winners`` Copeland winners (Li et al. 2020, §5.2 and §6.5).

    Generalises the MSLR-non-Condorcet set (two Copeland winners; "one of the Copeland
    winners beats the other one but is beaten by a suboptimal ranker"). Start from a
    Bradley–Terry order (``bradley_terry`` with ``gap``, ``spread``); winners are the top
    ``n_winners`` arms W_0 > W_1 > ...; W_a beats the winners below it and so would score
    ``n_winners - 1 - a`` more than the last one, so it is upset by that many of the
    weakest arms (each upset has p = ½ + ``upset`` for the weak arm). Every winner then
    beats exactly ``k - n_winners`` arms, and each upsetting arm beats at most
    ``2 n_winners - 3`` arms, which is fewer as long as ``k >= 3 n_winners - 2``.
    Arms are not shuffled: the winners are 0..n_winners-1 and the upsetters the last arms.

    Examples
    --------
    >>> P = non_condorcet(8, n_winners=3, seed=1)
    >>> condorcet_winner(P) is None, copeland_winners(P)
    (True, [0, 1, 2])
    """
    k, w = int(k), int(n_winners)
    if w < 2:
        raise ValueError(f"n_winners must be at least 2, got {w}")
    if k < 3 * w - 2:
        raise ValueError(f"{w} Copeland winners need k >= {3 * w - 2}, got {k}")
    if not 0.0 < upset < 0.5:
        raise ValueError(f"upset must be in (0, 0.5), got {upset}")
    rng = make_rng(seed)
    # strengths in order, best first: take them from an unshuffled Bradley–Terry draw
    P = bradley_terry(k, gap=gap, spread=spread, seed=rng)
    order = np.argsort(-(P > 0.5).sum(axis=1), kind="stable")
    P = P[np.ix_(order, order)].copy()
    for a in range(w - 1):
        for m in range(w - 1 - a):  # winner a is upset by the m-th weakest arm
            s = k - 1 - m
            P[s, a] = 0.5 + upset
            P[a, s] = 0.5 - upset
    return P


#: names of the generator kinds the CLI offers, besides the ``UTILITY_SETS``
KINDS = ("cycle", "cycle2", "bradley-terry", "uninformative", "non-condorcet")
