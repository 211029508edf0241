"""Balanced interleave, the simple baseline.

Balanced interleave (Joachims, "Evaluating retrieval performance using clickthrough
data", 2003, §3; Joachims, KDD 2002): a coin decides which ranker goes first; the two
lists are then read in lock-step, A and B alternately contributing their next document
unless it is already shown, so at every point the shown list holds the top ``ka`` of A
and the top ``kb`` of B with ``|ka - kb| <= 1``.

Credit: let ``d`` be the lowest clicked document and ``k* = min(r_A(d), r_B(d))`` the
depth to which the user must have read both lists to reach it. Each ranker is credited
with the clicked documents in its own top ``k*``; more credit wins.

The next page goes on reading both lists in lock-step from where the page stopped
(the record keeps how far each list was read, and the coin), and ranks every shown
document again in the deeper lists, so the credit's depth ``k*`` is that of one list of
depth N·k.

Decisions: a list that runs out leaves the other to fill the page; a shown document
missing from a ranker's list has rank ∞ for it. Balanced interleave is known to be
biased for some pairs of lists even under random clicks (Hofmann, Whiteson, de Rijke,
CIKM 2011, §3; the tests reproduce their example) — it is here as the baseline, not as
the method of choice.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from interleaving.base import Interleaver, Outcome, compare


def balanced_interleave(
    a: list[str], b: list[str], k: int, rng: np.random.Generator,
    shown: list[str] | None = None, state: list[int] | None = None,
) -> tuple[list[str], list[int]]:
    """The shown list of a balanced interleave of ``a`` and ``b``, and the state that
    continues it: ``[ka, kb, a_first]`` (documents read from each list, and the coin).

    Given the ``shown`` list and ``state`` of an earlier page, the lock-step reading
    goes on from where it stopped (no new coin).
    """
    if state is None:
        a_first = rng.random() < 0.5
        ka = kb = 0
    else:
        ka, kb, a_first = int(state[0]), int(state[1]), bool(state[2])
    shown = list(shown or [])
    in_list: set[str] = set(shown)
    while len(shown) < k and (ka < len(a) or kb < len(b)):
        take_a = ka < kb or (ka == kb and a_first)
        if ka >= len(a):
            take_a = False
        elif kb >= len(b):
            take_a = True
        if take_a:
            doc = a[ka]
            ka += 1
        else:
            doc = b[kb]
            kb += 1
        if doc not in in_list:
            in_list.add(doc)
            shown.append(doc)
    return shown, [ka, kb, int(a_first)]


def _ranks(a: list[str], b: list[str], shown: list[str], state: list[int]) -> dict[str, Any]:
    """The record: the 1-based rank of each shown document in A and in B (0 = not in
    that list), and the reading state ``next`` for the next page."""
    ra = {d: r + 1 for r, d in enumerate(a)}
    rb = {d: r + 1 for r, d in enumerate(b)}
    return {"ra": [ra.get(d, 0) for d in shown], "rb": [rb.get(d, 0) for d in shown],
            "next": state}


class Balanced(Interleaver):
    """Balanced interleave of two rankings (Joachims 2003).

    Examples
    --------
    >>> import numpy as np
    >>> bi = Balanced()
    >>> shown, record = bi.interleave([["a", "b", "c"], ["b", "d", "e"]], 4,
    ...                               np.random.default_rng(0))
    >>> sorted(shown[:2])
    ['a', 'b']
    >>> d = shown.index("d")          # d is in B's top 2 and not in A: B wins
    >>> bi.credit(record, [d])
    [(0, 1, 0.0)]
    """

    name: ClassVar[str] = "balanced"
    pairwise: ClassVar[bool] = True

    def _interleave(
        self, rankings: list[list[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        a, b = rankings
        shown, state = balanced_interleave(a, b, k, rng)
        return shown, _ranks(a, b, shown, state)

    def _extend(
        self, record: dict[str, Any], shown: list[str], rankings: list[list[str]], k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        if "next" not in record:
            raise ValueError("this balanced record predates continuation (no reading "
                             "state): it cannot be continued")
        a, b = rankings
        shown, state = balanced_interleave(a, b, k, rng, shown, record["next"])
        return shown, _ranks(a, b, shown, state)

    def _credit(self, record: dict[str, Any], clicked: list[int]) -> list[Outcome]:
        inf = float("inf")
        ra = [r if r > 0 else inf for r in record["ra"]]
        rb = [r if r > 0 else inf for r in record["rb"]]
        lowest = clicked[-1]
        depth = min(ra[lowest], rb[lowest])
        ha = sum(1 for p in clicked if ra[p] <= depth)
        hb = sum(1 for p in clicked if rb[p] <= depth)
        return [(0, 1, compare(ha, hb))]
