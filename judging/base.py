"""The interface every judging algorithm implements.

A judging algorithm looks for the best items of a pool of ``n`` items (indices
``0..n-1``) by asking human assessors which of two items answers a query better
(Yan 2022, §3.1). The live campaign, the Celery workers and the offline simulator
all drive it through the same few calls:

``request(max_pairs)``
    up to ``max_pairs`` distinct pairs ``(i, j)``, ``i < j``, to hand out now (a live
    campaign puts ten of them in one assessor's task). The pairs are *pending* until
    judged or cancelled; ``[]`` means "nothing to ask until pending judgments come back"
    (or the algorithm is ``done``).
``record(i, j, outcome, no_difference=False)``
    one judgment of a pending pair, in any order and at any time: ``outcome`` 1 = ``i``
    is better, 0 = ``j`` is better, ½ = a tie (an interface that allows one). The
    optional "no meaningful difference" flag is recorded (``D``) but counted as the
    papers do: the assessor still chose a side, and the choice counts as a win (§3.1:
    "I require assessors to seek meaningful differences, however minor").
``cancel(i, j)``
    a pending pair will never be judged (an assessor abandoned the task, or was excluded
    for failing test pairs, §5.1): it goes back to the algorithm.
``done`` / ``result()``
    whether the algorithm has finished, and its answer: a *set* of best items (ties are
    answers) with a confidence statement (:class:`Result`).
``state_dict()`` / ``from_state(state)``
    the whole state as plain JSON (lists, numbers, strings), so a campaign can keep it in
    Redis; a restored judge continues exactly as the original would.

Two limits hold for every algorithm and are enforced here, not in the algorithms:

* ``budget``: judgments recorded plus pairs pending never exceed it (``None`` = no limit);
* ``max_per_pair``: judgments recorded plus pending of any one pair never exceed it — each
  judgment of a pair needs another independent assessor (§3.1, parsimony).

Counts. ``W[i, j]`` is how often ``i`` was preferred to ``j`` (a tie adds ½ to each),
``N[i, j]`` how often the pair was judged, ``D[i, j]`` how many of those judgments carried
the "no meaningful difference" flag. Every random choice goes through ``self.rng``, whose
state is part of ``state_dict()``: same seed, same judgments, same run.

Confidence. When an algorithm excludes an item it records the evidence: the judgments
and wins on which the exclusion rests and the one-sided binomial p-value
``P(Bin(n, ½) <= wins)`` — how likely an item at least as good as the opponents it met
would do that badly. ``Result.confidence`` is one minus the largest such p-value (the
weakest exclusion), and 0 when some item was set aside without evidence (the budget ran
out, or items are still in play); ``Result.statement`` says the same in words.
"""

from __future__ import annotations

import abc
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from bandits.params import Param, resolve

Pair = tuple[int, int]


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A ``Generator`` from a seed (or the generator itself)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def binom_tail_low(wins: float, n: int) -> float:
    """``P(Bin(n, ½) <= wins)``: the one-sided p-value of ``wins`` in ``n`` fair trials.

    A tie (half a win) counts as half a win; ``wins`` is rounded down.

    Examples
    --------
    >>> binom_tail_low(3, 7)
    0.5
    >>> round(binom_tail_low(3, 10), 4)
    0.1719
    >>> binom_tail_low(0, 0)
    1.0
    """
    n = int(n)
    k = math.floor(wins + 1e-9)
    if n <= 0 or k >= n:
        return 1.0
    if k < 0:
        return 0.0
    return math.fsum(math.comb(n, x) for x in range(k + 1)) / 2.0**n


def pair(i: int, j: int) -> Pair:
    """The pair ``(i, j)`` with the smaller index first."""
    i, j = int(i), int(j)
    return (i, j) if i < j else (j, i)


@dataclass(frozen=True)
class Result:
    """What a judging algorithm says: the best items and how sure it is.

    Parameters
    ----------
    best
        The set of best items (ties are answers).
    confidence
        One minus the largest exclusion p-value (see the module docstring); 0 when an item
        was set aside without evidence.
    statement
        The same in words, with the numbers.
    finished
        Whether the algorithm ran to its end (``False``: the budget ran out first, or the
        result was asked for mid-run).
    judgments
        Judgments recorded.
    """

    best: frozenset[int]
    confidence: float
    statement: str
    finished: bool
    judgments: int
    unrefuted: tuple[int, ...] = field(default=())


class Judge(abc.ABC):
    """Shared bookkeeping of a judging algorithm.

    Subclasses set ``name`` and implement ``_request`` (the pairs to ask now), ``_record``
    (react to one judgment; the counts are already updated), ``_best`` and ``_finished``;
    they override ``_cancel``, ``params``, ``_extra_state`` and ``_load_extra_state`` where
    they keep more state.

    Parameters
    ----------
    n_items
        Pool size.
    budget
        Most judgments in total (``None``: no limit).
    max_per_pair
        Most judgments of any one pair, i.e. independent assessors per pair.
    seed
        Seed or ``numpy.random.Generator`` for every random choice.

    Defaults and bounds are declared in ``PARAMS`` (docs/reference/parameters.md).
    """

    name: ClassVar[str] = "base"
    #: the algorithm's parameters besides ``n_items`` and ``seed``, declared once
    #: (:mod:`bandits.params`); a subclass adds its own to these two
    PARAMS: ClassVar[dict[str, Param]] = {
        "budget": Param(int, None, "most judgments in total (per query in a campaign)",
                        ge=1, le=1_000_000, nullable=True, default_doc="no limit"),
        "max_per_pair": Param(int, 10, "most judgments of any one pair: independent "
                              "assessors per pair", ge=1, le=100),
    }

    @classmethod
    def resolve_params(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Every declared parameter's value: ``given`` checked against ``PARAMS`` (a
        ``ValueError`` names a bad one), the declared defaults for the rest."""
        return resolve(cls.name, cls.PARAMS, given)

    def __init__(
        self,
        n_items: int,
        *,
        seed: int | np.random.Generator | None = None,
        **params: Any,
    ) -> None:
        if int(n_items) < 1:
            raise ValueError(f"n_items must be at least 1, got {n_items}")
        p = self.resolve_params(params)
        budget, max_per_pair = p["budget"], p["max_per_pair"]
        self.K = int(n_items)
        self.budget = None if budget is None else int(budget)
        self.max_per_pair = None if max_per_pair is None else int(max_per_pair)
        self.W = np.zeros((self.K, self.K))
        self.N = np.zeros((self.K, self.K), dtype=np.int64)
        self.D = np.zeros((self.K, self.K), dtype=np.int64)
        self.pending: dict[Pair, int] = {}
        self.n_judgments = 0
        self.n_requested = 0
        #: item -> {"reason": str, "n": judgments, "wins": wins, "p": p-value, "at": judgments}
        self.excluded: dict[int, dict[str, Any]] = {}
        #: items set aside without evidence (the budget ran out before they were refuted)
        self.unrefuted: list[int] = []
        self._stalled = False
        self.rng = make_rng(seed)

    # ------------------------------------------------------------------ public API
    @property
    def n_pending(self) -> int:
        return sum(self.pending.values())

    @property
    def remaining(self) -> int | None:
        """Judgments that may still be requested (``None``: no budget)."""
        if self.budget is None:
            return None
        return self.budget - self.n_judgments - self.n_pending

    @property
    def done(self) -> bool:
        """True when no further pair will ever be requested."""
        if self._finished() or self._stalled:
            return True
        return self.budget is not None and self.n_judgments >= self.budget

    def can_ask(self, i: int, j: int) -> bool:
        """Whether one more judgment of ``(i, j)`` fits the per-pair cap."""
        if i == j:
            return False
        if self.max_per_pair is None:
            return True
        used = int(self.N[i, j]) + self.pending.get(pair(i, j), 0)
        return used < self.max_per_pair

    def request(self, max_pairs: int = 10) -> list[Pair]:
        """Up to ``max_pairs`` distinct pairs to judge now (they become pending)."""
        if max_pairs < 1 or self.done:
            return []
        k = int(max_pairs)
        if self.remaining is not None:
            k = min(k, self.remaining)
        if k <= 0:
            return []
        pairs = [pair(i, j) for i, j in self._request(k)]
        if len(pairs) > k or len(set(pairs)) != len(pairs):
            raise RuntimeError(f"{self.name}: _request({k}) returned {pairs}")
        for p in pairs:
            if not (0 <= p[0] < p[1] < self.K) or not self.can_ask(*p):
                raise RuntimeError(f"{self.name}: pair {p} is out of range or at its cap")
            self.pending[p] = self.pending.get(p, 0) + 1
        self.n_requested += len(pairs)
        if not pairs and not self.pending and not self._finished():
            self._stalled = True  # nothing to wait for and nothing to ask: give the answer
        return pairs

    def record(self, i: int, j: int, outcome: float, *, no_difference: bool = False) -> None:
        """Record one judgment of the pending pair ``(i, j)``: 1 = ``i`` better, 0 = ``j``."""
        i, j = int(i), int(j)
        s = float(outcome)
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"outcome must be in [0, 1], got {outcome}")
        p = pair(i, j)
        if self.pending.get(p, 0) < 1:
            raise ValueError(f"pair {p} was not requested (or was already judged)")
        self._unpend(p)
        self.W[i, j] += s
        self.W[j, i] += 1.0 - s
        self.N[i, j] += 1
        self.N[j, i] += 1
        if no_difference:
            self.D[i, j] += 1
            self.D[j, i] += 1
        self.n_judgments += 1
        self._record(i, j, s)

    def cancel(self, i: int, j: int) -> None:
        """A pending pair will not be judged; the algorithm may ask for it again."""
        p = pair(i, j)
        if self.pending.get(p, 0) < 1:
            raise ValueError(f"pair {p} is not pending")
        self._unpend(p)
        self._stalled = False
        self._cancel(*p)

    def best(self) -> frozenset[int]:
        """The current set of best items."""
        return frozenset(int(x) for x in self._best())

    def result(self) -> Result:
        """The best items and a confidence statement."""
        best = self.best()
        ps = [float(e["p"]) for e in self.excluded.values()]
        worst = max(ps, default=0.0)
        # items neither returned, excluded with evidence nor set aside: still in play
        open_ = self.K - len(best) - len(self.excluded) - len(self.unrefuted)
        confidence = 0.0 if (self.unrefuted or open_ > 0) else 1.0 - worst
        names = ", ".join(str(b) for b in sorted(best)) or "nothing"
        parts = [f"best: {{{names}}} after {self.n_judgments} judgments"]
        if len(best) > 1:
            parts.append(f"{len(best)} items not separated ({self._tie_summary(best)})")
        if ps:
            parts.append(
                f"{len(ps)} items excluded by comparisons, weakest at p = {worst:.3g} "
                f"(median p = {float(np.median(ps)):.3g})"
            )
        if self.unrefuted:
            parts.append(f"{len(self.unrefuted)} items set aside unrefuted: the budget ran out")
        if open_ > 0:
            parts.append(f"{open_} items not refuted yet")
        if not self.done:
            parts.append("still running")
        return Result(
            best=best,
            confidence=round(confidence, 6),
            statement="; ".join(parts),
            finished=bool(self._finished()),
            judgments=self.n_judgments,
            unrefuted=tuple(sorted(self.unrefuted)),
        )

    def exclude(self, item: int, reason: str, n: float, wins: float) -> None:
        """Record that ``item`` is out, on ``wins`` of ``n`` judgments."""
        self.excluded[int(item)] = {
            "reason": reason,
            "n": int(n),
            "wins": float(wins),
            "p": binom_tail_low(wins, int(n)),
            "at": self.n_judgments,
        }

    def params(self) -> dict[str, Any]:
        """The constructor parameters (besides ``n_items`` and ``seed``) of this run."""
        return {"budget": self.budget, "max_per_pair": self.max_per_pair}

    def state_dict(self) -> dict[str, Any]:
        """The whole state as plain lists, numbers and strings."""
        state: dict[str, Any] = {
            "algorithm": self.name,
            "params": self.params(),
            "K": self.K,
            "W": self.W.tolist(),
            "N": self.N.tolist(),
            "D": self.D.tolist(),
            "pending": [[a, b, c] for (a, b), c in sorted(self.pending.items())],
            "n_judgments": self.n_judgments,
            "n_requested": self.n_requested,
            "excluded": {str(k): dict(v) for k, v in self.excluded.items()},
            "unrefuted": list(self.unrefuted),
            "stalled": self._stalled,
            "rng": self.rng.bit_generator.state,
        }
        state.update(self._extra_state())
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Judge:
        """Rebuild a judge from ``state_dict()`` output."""
        if state.get("algorithm") != cls.name:
            raise ValueError(f"state is for {state.get('algorithm')!r}, not {cls.name!r}")
        obj = cls(int(state["K"]), seed=0, **state.get("params", {}))
        K = obj.K
        obj.W = np.asarray(state["W"], dtype=float).reshape(K, K)
        obj.N = np.asarray(state["N"], dtype=np.int64).reshape(K, K)
        obj.D = np.asarray(state["D"], dtype=np.int64).reshape(K, K)
        obj.pending = {(int(a), int(b)): int(c) for a, b, c in state["pending"]}
        obj.n_judgments = int(state["n_judgments"])
        obj.n_requested = int(state["n_requested"])
        obj.excluded = {int(k): dict(v) for k, v in state["excluded"].items()}
        obj.unrefuted = [int(x) for x in state["unrefuted"]]
        obj._stalled = bool(state["stalled"])
        obj.rng.bit_generator.state = state["rng"]
        obj._load_extra_state(state)
        return obj

    def __repr__(self) -> str:
        best = sorted(self.best())
        lines = [
            f"{type(self).__name__}(K={self.K}, judgments={self.n_judgments}, "
            f"pending={self.n_pending}, budget={self.budget}, best={best})",
            "  item  status      judged   win rate",
        ]
        n = self.N.sum(axis=1)
        for a in range(min(self.K, 40)):
            status = "excluded" if a in self.excluded else (
                "unrefuted" if a in self.unrefuted else ("best" if a in best else "in play"))
            rate = self.W[a].sum() / n[a] if n[a] else float("nan")
            lines.append(f"  {a:>4}  {status:<10}  {n[a]:>6}   {rate:.3f}")
        if self.K > 40:
            lines.append(f"  ... {self.K - 40} more items")
        return "\n".join(lines)

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _request(self, k: int) -> list[Pair]:
        """At most ``k`` distinct pairs that :meth:`can_ask` allows."""

    @abc.abstractmethod
    def _record(self, i: int, j: int, outcome: float) -> None:
        """React to one judgment (``W``, ``N`` and ``pending`` are already updated)."""

    @abc.abstractmethod
    def _best(self) -> set[int]:
        """The current answer."""

    @abc.abstractmethod
    def _finished(self) -> bool:
        """Whether the algorithm has reached its end."""

    def _cancel(self, i: int, j: int) -> None:  # noqa: B027
        """A pending pair came back unjudged."""

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: B027
        """Restore what ``_extra_state`` saved."""

    # ------------------------------------------------------------------ helpers
    def _unpend(self, p: Pair) -> None:
        c = self.pending[p] - 1
        if c:
            self.pending[p] = c
        else:
            del self.pending[p]

    def _tie_summary(self, items: frozenset[int]) -> str:
        items_ = sorted(items)
        bits = []
        for x, a in enumerate(items_):
            for b in items_[x + 1:]:
                bits.append(f"{a}-{b} {self.W[a, b]:g}:{self.W[b, a]:g}")
        return ", ".join(bits[:6]) + (" ..." if len(bits) > 6 else "")
