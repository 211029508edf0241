"""The shared shape of every interleaving and multileaving method.

A method has two halves that run at different times and, in the live service, in
different processes:

``interleave(rankings, k, rng)``
    merge the participants' lists into the list the user sees, and return it with a
    small JSON-able *record* of whatever the credit step will need;
``credit(record, clicked)``
    turn the clicked positions of that list into pairwise outcomes between participants;
``extend(record, shown, rankings, k, rng)``
    continue the interleaving to a greater depth ``k`` (the next result page): the list
    shown so far stays as it is, the method carries on from where it stopped (team
    draft continues its draft, probabilistic interleave its sampling), and the record
    grows to describe the whole list, so the credit of the clicks on any page is the
    credit of one list shown at once.

The public methods do the shared work (checking and de-duplicating the input, the
"no clicks, no duel" rule, range checks on click positions); each method implements the
private hooks ``_interleave``, ``_extend`` and ``_credit``.

**Continuation.** ``extend`` consumes ``rng`` exactly as the one-shot ``interleave`` does
for the slots it adds, so with the same generator (the service keeps its state with the
impression, see :func:`rng_state`) and the same lists, pages 1..N concatenated are the
first N·k documents of ``interleave(rankings, N·k, rng)``, record included (the tests
check it per method). The lists may deepen between pages (a ranker asked for N·k
results returns its top N·k): the rank-based methods (team draft, balanced, SOSM)
draw the same first N·k documents from a ranker's top k as from its top N·k, so the
identity holds for rankers that return consistent lists; probabilistic interleave
samples page N from the softmax over the top N·k, see :mod:`interleaving.probabilistic`.

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

    def extend(
        self,
        record: dict[str, Any],
        shown: Sequence[str],
        rankings: Sequence[Sequence[str]],
        k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        """Continue the interleaving that showed ``shown`` (with ``record``) to depth ``k``.

        ``rankings`` are the participants' lists now (in the same participant order),
        typically each ranker's top ``k``. Returns the whole list (``shown`` followed by
        at most ``k - len(shown)`` new documents, none already shown) and the record of
        the whole list. A depth not beyond ``len(shown)`` returns them unchanged.
        Raises ``ValueError`` when the record is of another method or of another number
        of participants, or lacks what continuing needs (a record written before
        continuation existed).
        """
        if record.get("method") != self.name:
            raise ValueError(f"record is for {record.get('method')!r}, not {self.name!r}")
        if isinstance(rankings, str | bytes):
            raise TypeError("rankings must be a sequence of rankings, not a string")
        lists = [dedupe(r) for r in rankings]
        if len(lists) != int(record["n"]):
            raise ValueError(f"the record has {record['n']} participants, got {len(lists)} "
                             "rankings")
        shown = [str(d) for d in shown]
        if len(shown) != int(record["len"]):
            raise ValueError(f"the record describes {record['len']} shown documents, "
                             f"got {len(shown)}")
        k = int(k)
        if k <= len(shown):
            return shown, dict(record)
        full, extra = self._extend(record, shown, lists, k, rng)
        if full[: len(shown)] != shown or len(set(full)) != len(full) or len(full) > k:
            raise AssertionError(f"{self.name}: a continuation must keep the shown list")
        return full, {"method": self.name, "n": len(lists), "len": len(full), **extra}

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
    def _extend(
        self, record: dict[str, Any], shown: list[str], rankings: list[list[str]], k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        """Continue from ``record`` and ``shown`` to at most ``k`` documents; return the
        whole list and its record (without ``method``, ``n`` and ``len``)."""

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


def nested_depth(rankings: Sequence[Sequence[str]]) -> int | None:
    """The length of the shortest list when every list is a prefix of the longest (the
    rankers agree on everything the shorter ones returned, as one ranker asked for 5 and
    for 10 results does); None otherwise, or when some list is empty.

    The rule for such lists (team draft, probabilistic): the documents past the shorter
    lists' end are shown, from the longest list in its order, and credit nobody, so the
    comparison is a tie on any clicks. The rankers then differ only in how many results
    they return, which is not what an interleaved comparison measures; crediting those
    documents to the longer list would make the same ranker win against itself whenever
    a user clicks below the fifth result. An empty list is not nested: a ranker that
    returned nothing still loses (and the service reports it).

    Examples
    --------
    >>> nested_depth([["a", "b"], ["a", "b", "c"]])
    2
    >>> nested_depth([["a", "c"], ["a", "b", "c"]]) is None
    True
    >>> nested_depth([[], ["a"]]) is None
    True
    """
    if not rankings or min(len(r) for r in rankings) == 0:
        return None
    longest = max(rankings, key=len)
    if all(list(longest[: len(r)]) == list(r) for r in rankings):
        return min(len(r) for r in rankings)
    return None


def rng_state(rng: np.random.Generator) -> list[str]:
    """The state of a PCG64 generator as two hex strings (JSON-able, 70 characters),
    so that a continuation (:meth:`Interleaver.extend`) can draw exactly what a one-shot
    interleaving would have drawn next.

    Examples
    --------
    >>> rng = np.random.default_rng(5); _ = rng.random()
    >>> again = rng_from_state(rng_state(rng))
    >>> again.random() == rng.random()
    True
    """
    state = rng.bit_generator.state
    if state.get("bit_generator") != "PCG64" or state.get("has_uint32"):
        raise ValueError("only a PCG64 generator without a buffered 32-bit draw can be saved")
    return [format(state["state"]["state"], "x"), format(state["state"]["inc"], "x")]


def rng_from_state(saved: Sequence[str]) -> np.random.Generator:
    """The generator :func:`rng_state` saved."""
    bits = np.random.PCG64()
    bits.state = {"bit_generator": "PCG64",
                  "state": {"state": int(saved[0], 16), "inc": int(saved[1], 16)},
                  "has_uint32": 0, "uinteger": 0}
    return np.random.Generator(bits)
