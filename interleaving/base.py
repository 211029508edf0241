"""The shared shape of every interleaving and multileaving method.

A method has two halves that run at different times and, in the live service, in
different processes:

``interleave(rankings, k, rng)``
    merge the participants' lists into the list the user sees, and return it with a
    small JSON-able *record* of whatever the credit step will need;
``credit(record, clicked)``
    turn the clicked positions of that list into pairwise outcomes between participants.

The public methods do the shared work (checking and de-duplicating the input, the
"no clicks, no duel" rule, range checks on click positions); each method implements the
two private hooks ``_interleave`` and ``_credit``.

Participants are indices into ``rankings``. Outcomes are triples ``(a, b, s)`` with
``a < b`` and ``s`` in [0, 1]: 1 means ``a`` won, 0 means ``b`` won, ½ a tie (there were
clicks, but equal credit). Marginalizing methods return the expected outcome, which may
lie anywhere in [0, 1].
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

Outcome = tuple[int, int, float]

#: floating-point tolerance under which two credits count as equal
CREDIT_TOL = 1e-12


def dedupe(ranking: Iterable[str]) -> list[str]:
    """A ranking with repeated documents removed (the first occurrence keeps its rank).

    Rankers served over HTTP may repeat a document; every method treats the first
    occurrence as the document's rank and ignores later ones.

    Examples
    --------
    >>> dedupe(["a", "b", "a", "c"])
    ['a', 'b', 'c']
    """
    seen: set[str] = set()
    out: list[str] = []
    for d in ranking:
        d = str(d)
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def compare(x: float, y: float) -> float:
    """Outcome of credit ``x`` against credit ``y``: 1, 0, or ½ when equal."""
    if abs(x - y) <= CREDIT_TOL * max(1.0, abs(x), abs(y)):
        return 0.5
    return 1.0 if x > y else 0.0


def pairwise_from_scores(scores: Sequence[float]) -> list[Outcome]:
    """All pairwise outcomes ``(a, b, s)``, ``a < b``, from one credit per participant."""
    m = len(scores)
    return [(a, b, compare(scores[a], scores[b])) for a in range(m) for b in range(a + 1, m)]


class Interleaver(abc.ABC):
    """Base class of interleaving (two rankers) and multileaving (any number) methods.

    Subclasses set ``name`` and ``pairwise`` and implement ``_interleave`` and
    ``_credit``. Instances hold only parameters, so one instance can serve every request.
    """

    name: ClassVar[str] = "base"
    #: True when the method compares exactly two rankings
    pairwise: ClassVar[bool] = True

    # ------------------------------------------------------------------ public API
    def interleave(
        self, rankings: Sequence[Sequence[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        """Merge ``rankings`` into one list of at most ``k`` distinct documents.

        Returns the shown list and the record ``credit`` needs (it always holds
        ``"method"``, ``"n"`` the number of participants and ``"len"`` the shown length).
        """
        if isinstance(rankings, str | bytes):
            raise TypeError("rankings must be a sequence of rankings, not a string")
        lists = [dedupe(r) for r in rankings]
        if self.pairwise and len(lists) != 2:
            raise ValueError(f"{self.name} compares exactly 2 rankings, got {len(lists)}")
        if not self.pairwise and len(lists) < 1:
            raise ValueError(f"{self.name} needs at least one ranking")
        k = int(k)
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        shown, record = self._interleave(lists, k, rng)
        record = {"method": self.name, "n": len(lists), "len": len(shown), **record}
        return shown, record

    def credit(self, record: dict[str, Any], clicked: Iterable[int]) -> list[Outcome]:
        """Pairwise outcomes from the clicked positions (0-based) of the shown list.

        No clicks means no duel: the result is empty.
        """
        if record.get("method") != self.name:
            raise ValueError(f"record is for {record.get('method')!r}, not {self.name!r}")
        n_shown = int(record["len"])
        positions = sorted({int(p) for p in clicked})
        for p in positions:
            if not 0 <= p < n_shown:
                raise ValueError(f"click position {p} outside the shown list (0..{n_shown - 1})")
        if not positions or int(record["n"]) < 2:
            return []
        return self._credit(record, positions)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _interleave(
        self, rankings: list[list[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        """Build the shown list from de-duplicated rankings; return it and the record."""

    @abc.abstractmethod
    def _credit(self, record: dict[str, Any], clicked: list[int]) -> list[Outcome]:
        """Outcomes from a non-empty sorted list of valid clicked positions."""


def identical_prefix(rankings: Sequence[Sequence[str]], k: int) -> int:
    """Length of the top prefix on which every ranking agrees position by position.

    Team-draft style methods show this prefix first and credit it to no team: who
    "contributed" a document that every participant ranks at the same place is a coin
    flip, so crediting it would only add noise (a common refinement of Radlinski et
    al. 2008; the original credits it to whichever team drew it).

    Examples
    --------
    >>> identical_prefix([["a", "b", "c"], ["a", "b", "d"]], k=10)
    2
    >>> identical_prefix([["a"], []], k=10)
    0
    """
    if not rankings:
        return 0
    n = min(min(len(r) for r in rankings), k)
    p = 0
    while p < n and all(r[p] == rankings[0][p] for r in rankings):
        p += 1
    return p
