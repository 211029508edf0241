"""How an outcome enters ``W``: the rule, stated once.

An outcome ``[i, j, s]`` is one comparison of arm ``i`` with arm ``j`` in which ``i`` won
the share ``s`` of [0, 1]: 1 ``i`` won, 0 ``j`` won, ½ a tie (the interleaving methods'
credit gives these three, a forfeit is 1; a share in between is allowed). It

* adds ``s`` to ``W[i][j]`` and ``1 − s`` to ``W[j][i]``. ``W`` is the matrix of wins of
  the dueling-bandit papers (Zoghi 2017, Algorithm 2: ``w_ij``, the number of times arm
  ``i`` beat arm ``j``), with a tie half a win to each side, so that ``W[i][j] + W[j][i]``
  is the number of comparisons of the pair and ``W[i][j] / (W[i][j] + W[j][i])`` estimates
  the probability that ``i`` beats ``j``, which every policy reads;
* adds nothing when ``i == j``: an arm compared with itself tells nothing about a
  preference (a policy's pair ``(i, i)`` is one ranker's list shown alone);
* counts a tie (``s == 0.5`` exactly) once more, for its pair ``(min(i, j), max(i, j))``:
  ``W`` cannot tell a tie from a win and a loss, the report's table of ties can.

An addition of 0 is no write (:func:`writes` leaves it out), so counts kept by pair hold no
zero entry. Per segment (an impression's labels, ``device=mobile``, of
:mod:`service.segments`) the rule is the same: an impression's outcomes are added to the
``W`` and ties of each of its labels, and each label counts the impression once in its
``n`` when it has any outcome (``i == j`` included: the policy counts that step too).
:class:`Tally` keeps the total and the labels together.

Who applies it: the Lua include ``service/store/outcome_write.lua``, the rule's one
text in Lua, which the credit script (``credit.lua``: the policy's ``W``, ties and
segments, and the click metric's counts) and the metrics' credit script
(``metric_credit.lua``: each declared metric's counts, per label too) share; the hold's
transaction (:meth:`service.store.credits.CreditStore.write_marks`, per segment and ties),
``rankduel replay`` (:mod:`service.events.replay`), and a policy's own ``update()``
(:meth:`bandits.base.DuelingBandit.update`, which writes the same two lines on its
``W``). One table of cases, ``tests/cases/outcomes.json``, is checked against every one
of them (``tests/unit/test_outcome_cases.py``, ``tests/service/
test_outcome_cases_store.py``, ``tests/service/test_outcome_cases_metrics.py``).

Pure: numpy only.

>>> t = Tally()
>>> t.add([[0, 1, 1.0], [1, 2, 0.5], [2, 2, 1.0]], ["device=mobile"])
>>> t.add([[1, 0, 0.25]])
>>> t.matrix().tolist()
[[0.0, 1.75, 0.0], [0.25, 0.0, 0.5], [0.0, 0.5, 0.0]]
>>> m = t.labels["device=mobile"]
>>> t.matrix("device=mobile").tolist(), m.ties, m.n, t.total.n, t.outcomes
([[0.0, 1.0, 0.0], [0.0, 0.0, 0.5], [0.0, 0.5, 0.0]], {(1, 2): 1}, 1, 2, 4)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

#: one outcome: ``(i, j, s)``, ``i`` won the share ``s`` of its comparison with ``j``
Outcome = Sequence[float]


def writes(outcomes: Iterable[Outcome]) -> list[tuple[int, int, float]]:
    """The additions ``(row, column, amount)`` that ``outcomes`` make to ``W``, in order:
    ``(i, j, s)`` then ``(j, i, 1 − s)`` for each outcome with ``i != j``, an amount of 0
    left out.

    >>> writes([[0, 1, 1.0], [2, 1, 0.5], [1, 1, 0.0], [0, 2, 0.0]])
    [(0, 1, 1.0), (2, 1, 0.5), (1, 2, 0.5), (2, 0, 1.0)]
    """
    out = []
    for i, j, s in outcomes:
        i, j, s = int(i), int(j), float(s)
        if i == j:
            continue
        if s != 0:
            out.append((i, j, s))
        if s != 1:
            out.append((j, i, 1 - s))
    return out


def ties(outcomes: Iterable[Outcome]) -> list[tuple[int, int]]:
    """The pair ``(min(i, j), max(i, j))`` of each tie (``s == 0.5``, ``i != j``), in order.

    >>> ties([[2, 1, 0.5], [0, 1, 1.0], [1, 1, 0.5]])
    [(1, 2)]
    """
    return [(min(i, j), max(i, j)) for i, j, s in ((int(i), int(j), float(s))
                                                   for i, j, s in outcomes)
            if i != j and s == 0.5]


def add(W: np.ndarray, outcomes: Iterable[Outcome]) -> np.ndarray:
    """Add ``outcomes`` to the matrix ``W`` in place; ``W``.

    >>> add(np.zeros((2, 2)), [[0, 1, 1.0], [1, 0, 0.5], [1, 1, 1.0]]).tolist()
    [[0.0, 1.5], [0.5, 0.0]]
    """
    for i, j, x in writes(outcomes):
        W[i, j] += x
    return W


@dataclass
class Counts:
    """What outcomes added up to, as the store keeps it: ``W`` by pair ``(i, j)`` (absent:
    0), ties by pair ``(i, j)``, ``i < j``, and ``n`` the impressions with any outcome."""

    W: dict[tuple[int, int], float] = field(default_factory=dict)
    ties: dict[tuple[int, int], int] = field(default_factory=dict)
    n: int = 0

    def add(self, outcomes: Sequence[Outcome]) -> None:
        """Add one impression's ``outcomes`` (none: nothing, not even ``n``)."""
        if not outcomes:
            return
        self.n += 1
        for i, j, x in writes(outcomes):
            self.W[i, j] = self.W.get((i, j), 0.0) + x
        for pair in ties(outcomes):
            self.ties[pair] = self.ties.get(pair, 0) + 1

    def matrix(self, k: int) -> np.ndarray:
        """``W`` as a ``k × k`` matrix."""
        out = np.zeros((k, k))
        for (i, j), x in self.W.items():
            out[i, j] = x
        return out


@dataclass
class Tally:
    """Impressions' outcomes added up, in total and per label: ``total`` and ``labels``
    (label -> its :class:`Counts`; a label appears with its first impression that has an
    outcome), ``k`` the arms seen (one more than the largest index, ``i == j`` included)
    and ``outcomes`` the outcomes added."""

    total: Counts = field(default_factory=Counts)
    labels: dict[str, Counts] = field(default_factory=dict)
    k: int = 0
    outcomes: int = 0

    def add(self, outcomes: Iterable[Outcome], labels: Iterable[str] = ()) -> None:
        """Add one impression's ``outcomes`` to the total and to each of its ``labels``."""
        outcomes = [(int(i), int(j), float(s)) for i, j, s in outcomes]
        if not outcomes:
            return
        self.outcomes += len(outcomes)
        self.k = max(self.k, *(max(i, j) + 1 for i, j, _ in outcomes))
        self.total.add(outcomes)
        for label in labels:
            self.labels.setdefault(label, Counts()).add(outcomes)

    def matrix(self, label: str | None = None) -> np.ndarray:
        """``W`` (``k × k``), the total or of ``label`` (zeros for a label never seen)."""
        counts = self.total if label is None else self.labels.get(label, Counts())
        return counts.matrix(self.k)
