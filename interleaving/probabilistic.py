"""Probabilistic interleave and probabilistic multileave, with marginalized credit.

Probabilistic interleave (PI; Hofmann, Whiteson, de Rijke, "A probabilistic method for
inferring preferences from click data", CIKM 2011, §4): each ranker ``j`` becomes a
softmax over its own ranks,

    P_j(d) = r_j(d)^-τ / Σ_{d' remaining} r_j(d')^-τ,      τ = 3,

where ``r_j(d)`` is the 1-based rank of ``d`` in ranker ``j``'s original list. For each
slot a fair coin picks a ranker, that ranker samples the next document from its
softmax, and the document is removed from *both* distributions.

Marginalized outcome (§4.2). The comparison is not scored on the one assignment of
documents to rankers that happened, but on its expectation under the posterior
``P(a | L)`` given the shown list ``L``. That posterior factorizes by position: given
the prefix ``L_1..L_{r-1}`` (the same whatever the assignment), slot ``r`` was filled by
ranker ``j`` with probability proportional to ``P_j(L_r | prefix)`` — the coin is fair, so
the prior cancels. Each clicked slot is therefore an independent draw "ranker 0 / ranker
1 / neither", and the exact distribution of the credit difference ``c_0 - c_1`` follows
from a short dynamic programme over the clicked slots (``O(c²)`` for ``c`` clicks, no
enumeration of the ``2^k`` assignments). The outcome in [0, 1] is

    s = P(c_0 > c_1 | L, clicks) + ½ P(c_0 = c_1 | L, clicks),

Hofmann et al.'s expected outcome ``E[o]`` mapped from [-1, 1] to [0, 1] (``o`` compares
the counts of clicked documents each ranker is credited with). The brute-force
enumeration lives in the tests only.

Probabilistic multileave (PM; Schuth, Bruintjes, Büttner, et al., "Probabilistic
multileave for online retrieval evaluation", SIGIR 2015, Algorithms 1–2) generalizes
PI to ``m`` rankers. **Departure:** PM draws rankers in rounds (each ranker once per
round, random order) and estimates the marginal outcome by *sampling* assignments,
because the round constraint couples the slots. Here each slot picks a ranker uniformly
among those with documents left (a fair ``m``-sided die, the direct generalization of
PI's coin), which keeps the posterior factorized, so the pairwise outcomes are exact
and cheap. With two rankers PM is exactly PI.

**Which documents:** the softmax of a ranker covers the list it returned (its top ``k``
behind an HTTP API; the estimator does the same), not every document of the collection
as in Hofmann et al.'s offline setting. With τ = 3 the mass beyond rank 10 is under 0.4%.

**The next page** continues the sampling: its slots are drawn from each ranker's
softmax over the list it returned for that page (its top N·k), without the documents
already shown, and their posteriors are appended to the record. The posteriors of the
earlier slots are kept: they are those of the draws that happened, so the marginalized
credit stays exact for the list shown. When the lists are the same on every page, the
pages are exactly one interleaving of depth N·k; when they deepen, page 1 was drawn from
the softmax over the top ``k`` rather than the top N·k, which differ by the tail's mass
(under 0.4% at τ = 3 and k = 10), so the pages are one draw of a process that differs
from the one-shot interleaving by that much.

**Nested lists** (every list a prefix of the longest, e.g. the same ranker asked for 5
and for 10 results; :func:`interleaving.base.nested_depth`): the slots up to the
shortest list's length ``d`` are sampled from the softmaxes over the top ``d`` of each
list (identical, so every posterior is uniform), and the rest of the page comes from the
longest list in its order with a posterior of "neither": clicks give a tie.

**Short or empty lists:** a ranker whose documents are all shown is out of the draw (the
other rankers fill the page, the coin or die covers only rankers with documents left),
and a slot only a single ranker could have filled is credited to it with certainty.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from interleaving.base import Interleaver, Outcome, nested_depth

#: Hofmann et al. (2011) §4: τ = 3
DEFAULT_TAU = 3.0


def probabilistic_interleave(
    rankings: list[list[str]], k: int, rng: np.random.Generator, tau: float = DEFAULT_TAU,
    shown: list[str] | None = None, posterior: list[list[float]] | None = None,
) -> tuple[list[str], list[list[float]]]:
    """Sample a shown list; return it with the per-slot posterior over participants.

    ``posterior[r][j]`` is ``P(slot r was filled by ranker j | shown list)``. Given the
    ``shown`` list and ``posterior`` of an earlier page, sampling continues from the
    rankers' softmaxes without the documents already shown.
    """
    d = nested_depth(rankings) if len(rankings) > 1 else None
    if d is not None:
        longest = max(rankings, key=len)
        shown, posterior = _sample([r[:d] for r in rankings], min(k, d), rng, tau,
                                   shown, posterior)
        seen = set(shown)
        for doc in longest:
            if len(shown) >= k:
                break
            if doc not in seen:  # past the shorter lists' end: credits nobody
                shown.append(doc)
                posterior.append([0.0] * len(rankings))
        return shown, posterior
    return _sample(rankings, k, rng, tau, shown, posterior)


def _sample(
    rankings: list[list[str]], k: int, rng: np.random.Generator, tau: float,
    shown: list[str] | None, posterior: list[list[float]] | None,
) -> tuple[list[str], list[list[float]]]:
    m = len(rankings)
    shown = list(shown or [])
    posterior = [list(row) for row in posterior or []]
    done = set(shown)
    # remaining (doc, weight) per ranker, in rank order
    remaining: list[dict[str, float]] = [
        {d: (r + 1.0) ** -tau for r, d in enumerate(ranking) if d not in done}
        for ranking in rankings
    ]
    totals = [sum(r.values()) for r in remaining]
    while len(shown) < k:
        live = [j for j in range(m) if remaining[j]]
        if not live:
            break
        # a fair coin (die) over the rankers that still have documents
        j = live[int(rng.random() * len(live))] if len(live) > 1 else live[0]
        u = rng.random() * totals[j]
        doc = ""
        for d, w in remaining[j].items():
            doc = d
            u -= w
            if u < 0.0:
                break
        # posterior of this slot: P_i(doc | prefix) for every live ranker, normalized
        probs = [0.0] * m
        for i in live:
            w = remaining[i].get(doc)
            if w is not None:
                probs[i] = w / totals[i]
        total = sum(probs)
        posterior.append([p / total for p in probs])
        shown.append(doc)
        for i in live:
            w = remaining[i].pop(doc, None)
            if w is not None:
                # recompute rather than subtract, so no rounding drift accumulates
                totals[i] = sum(remaining[i].values())
    return shown, posterior


def _marginal_small(posterior: list[list[float]], a: int, b: int) -> float:
    """:func:`marginal_outcomes` for one pair, in plain Python (fast for a few clicks)."""
    c = len(posterior)
    dist = [0.0] * (2 * c + 1)
    dist[c] = 1.0
    for row in posterior:
        pa, pb = row[a], row[b]
        po = max(0.0, 1.0 - pa - pb)
        new = [x * po for x in dist]
        for i in range(2 * c):
            new[i + 1] += dist[i] * pa
            new[i] += dist[i + 1] * pb
        dist = new
    s = sum(dist[c + 1 :]) + 0.5 * dist[c]
    return min(1.0, max(0.0, s))


def marginal_outcomes(
    posterior: np.ndarray | list[list[float]], pairs: list[tuple[int, int]]
) -> np.ndarray:
    """Exact expected outcome of each pair ``(a, b)`` over the clicked slots.

    ``posterior`` is (clicked slots × participants). For each pair the credit difference
    ``c_a - c_b`` is a sum of independent per-slot steps (+1 with ``P(a)``, -1 with
    ``P(b)``, 0 otherwise); its distribution is built slot by slot.

    Examples
    --------
    >>> float(marginal_outcomes(np.array([[0.8, 0.2]]), [(0, 1)])[0])
    0.8
    >>> post = np.array([[0.8, 0.2], [0.5, 0.5]])     # +2: 0.4, 0: 0.5, -2: 0.1
    >>> round(float(marginal_outcomes(post, [(0, 1)])[0]), 10)
    0.65
    """
    if len(pairs) * len(posterior) <= 64:  # a live request: numpy's overhead dominates
        rows = [list(map(float, row)) for row in posterior]
        return np.array([_marginal_small(rows, a, b) for a, b in pairs])
    posterior = np.asarray(posterior, dtype=float)
    c = posterior.shape[0]
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)
    pa = posterior[:, a]
    pb = posterior[:, b]
    po = np.clip(1.0 - pa - pb, 0.0, 1.0)
    dist = np.zeros((len(pairs), 2 * c + 1))
    dist[:, c] = 1.0
    for r in range(c):
        new = dist * po[r, :, None]
        new[:, 1:] += dist[:, :-1] * pa[r, :, None]
        new[:, :-1] += dist[:, 1:] * pb[r, :, None]
        dist = new
    s = dist[:, c + 1 :].sum(axis=1) + 0.5 * dist[:, c]
    return np.clip(s, 0.0, 1.0)


class Probabilistic(Interleaver):
    """Probabilistic interleave of two rankings with marginalized credit.

    Parameters
    ----------
    tau
        Softmax exponent; Hofmann et al. (2011) use τ = 3.

    Examples
    --------
    >>> import numpy as np
    >>> pi = Probabilistic()
    >>> shown, record = pi.interleave([["a", "b"], ["c", "d"]], 4, np.random.default_rng(7))
    >>> sorted(shown)
    ['a', 'b', 'c', 'd']
    >>> pi.credit(record, [shown.index("a")])       # only ranker 0 could have shown "a"
    [(0, 1, 1.0)]
    >>> shown, record = pi.interleave([["a", "b"], ["b", "a"]], 2, np.random.default_rng(7))
    >>> [round(p, 3) for p in record["post"][0]]    # P(slot 0 from ranker 0 / 1)
    [0.889, 0.111]
    >>> pi.credit(record, [])
    []
    """

    name: ClassVar[str] = "probabilistic"
    pairwise: ClassVar[bool] = True

    def __init__(self, tau: float = DEFAULT_TAU) -> None:
        self.tau = float(tau)

    def _interleave(
        self, rankings: list[list[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        shown, posterior = probabilistic_interleave(rankings, k, rng, self.tau)
        return shown, {"post": posterior}

    def _extend(
        self, record: dict[str, Any], shown: list[str], rankings: list[list[str]], k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        shown, posterior = probabilistic_interleave(rankings, k, rng, self.tau, shown,
                                                    record["post"])
        return shown, {"post": posterior}

    def _credit(self, record: dict[str, Any], clicked: list[int]) -> list[Outcome]:
        m = int(record["n"])
        post = [record["post"][p] for p in clicked]
        pairs = [(a, b) for a in range(m) for b in range(a + 1, m)]
        s = marginal_outcomes(post, pairs)
        return [(a, b, float(x)) for (a, b), x in zip(pairs, s, strict=True)]


class ProbabilisticMultileave(Probabilistic):
    """Probabilistic multileave of any number of rankings (Schuth et al. 2015).

    Pairwise outcomes are the exact marginal outcomes of every pair of participants
    (see the module docstring for the departure from the paper's sampled estimate).

    Examples
    --------
    >>> import numpy as np
    >>> pm = ProbabilisticMultileave()
    >>> shown, record = pm.interleave([["a", "b"], ["b", "a"], []], 2,
    ...                               np.random.default_rng(3))
    >>> [o[:2] for o in pm.credit(record, [0])]
    [(0, 1), (0, 2), (1, 2)]
    >>> [s > 0.5 for a, b, s in pm.credit(record, [0]) if b == 2]   # the empty list loses
    [True, True]
    """

    name: ClassVar[str] = "probabilistic_multileave"
    pairwise: ClassVar[bool] = False
