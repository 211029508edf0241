"""Per-user metrics and their sufficient statistics, mergeable: what an A/B arm keeps.

Users, not searches, are the unit
---------------------------------
An A/B test assigns *users* (sticky buckets, :mod:`rollout.hashing`) to arms, so the
randomised unit is the user and each user contributes **one value per metric**: the
share of their searches that got a click (``ctr``), their number of searches
(``searches``), the share of their searches left without a click (``abandonment``),
their conversions (``conversions``). A user's searches are not independent of each
other (the same person, the same intent, the same habits of clicking), so treating
searches as the sample would understate the variance and overstate the evidence. Users
are assigned independently of one another, so under sticky assignment the per-user
values of an arm are i.i.d. draws from that arm's distribution of users: the condition
the confidence sequence of :mod:`rollout.ab.sequence` needs. (Deng, Knoblich & Lu 2018
make the same argument for the "user-level" analysis of a page-level metric.)

What the service keeps
----------------------
Per arm and metric, three numbers (:class:`Moments`): ``n`` users, the ``total`` of their
values and the ``squares`` (sum of squared values). They are sums, so they can be kept as
Redis counters (``HINCRBY`` / ``HINCRBYFLOAT``), merged across shards or processes
(:meth:`Moments.merge`), and read at any time. A user's value changes when they search
again; :func:`increments` gives the three counter increments that replace the user's old
value by the new one (``n`` counts them once, on their first search). So the service also
keeps each user's own counts (:class:`UserCounts`) to know the old value.

Pure: no I/O.

Examples
--------
>>> m = Moments.of([1.0, 0.0, 0.5])
>>> m
Moments(n=3, total=1.5, squares=1.25)
>>> round(m.mean, 3), round(m.variance, 3)
(0.5, 0.25)
>>> m.merge(Moments.of([1.0])) == Moments.of([1.0, 0.0, 0.5, 1.0])
True
>>> user = UserCounts(searches=2, clicked=1)
>>> user.values()
{'ctr': 0.5, 'searches': 2.0, 'abandonment': 0.5, 'conversions': 0.0}
>>> increments(None, 0.5), increments(0.5, 1.0)
((1, 0.5, 0.25), (0, 0.5, 0.75))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


class Metric(NamedTuple):
    """A per-user metric: its name, what it means, which direction is good, and the
    range of a user's value when it is bounded (a rate: ``(0, 1)``)."""

    name: str
    meaning: str
    higher_is_better: bool
    bounds: tuple[float, float] | None = None


#: the per-user metrics, declared once (the report, the service and the docs read them)
METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("ctr", "share of the user's searches with at least one click", True, (0.0, 1.0)),
    Metric("searches", "searches the user made", True),
    Metric("abandonment", "share of the user's searches settled without a click", False,
           (0.0, 1.0)),
    Metric("conversions", "conversions the user made", True),
)}


@dataclass(frozen=True)
class UserCounts:
    """One user's counts in one arm: ``searches``, ``clicked`` (searches with a click),
    ``abandoned`` (searches settled without a click; by default ``searches − clicked``)
    and ``conversions``."""

    searches: int
    clicked: int = 0
    abandoned: int | None = None
    conversions: float = 0.0

    def values(self) -> dict[str, float]:
        """The user's value of every metric of :data:`METRICS` (the user has searched)."""
        if self.searches < 1:
            raise ValueError("a user counts in an arm once they have searched")
        abandoned = self.searches - self.clicked if self.abandoned is None else self.abandoned
        return {"ctr": self.clicked / self.searches, "searches": float(self.searches),
                "abandonment": abandoned / self.searches,
                "conversions": float(self.conversions)}


@dataclass(frozen=True)
class Moments:
    """Sufficient statistics of one arm's per-user values: ``n``, ``total``, ``squares``.

    Immutable; :meth:`add`, :meth:`revise` and :meth:`merge` return new values.
    """

    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @classmethod
    def of(cls, values: Iterable[float]) -> Moments:
        """The moments of ``values``."""
        n, s, q = 0, 0.0, 0.0
        for x in values:
            n, s, q = n + 1, s + float(x), q + float(x) ** 2
        return cls(n, s, q)

    def add(self, x: float) -> Moments:
        """With one more user, of value ``x``."""
        return Moments(self.n + 1, self.total + x, self.squares + x * x)

    def revise(self, old: float, new: float) -> Moments:
        """With one user's value changed from ``old`` to ``new``."""
        return Moments(self.n, self.total + new - old, self.squares + new * new - old * old)

    def merge(self, other: Moments) -> Moments:
        """The moments of both samples (disjoint users)."""
        return Moments(self.n + other.n, self.total + other.total, self.squares + other.squares)

    __add__ = merge

    @property
    def mean(self) -> float:
        """The mean value (nan without users)."""
        return self.total / self.n if self.n else math.nan

    @property
    def variance(self) -> float:
        """The unbiased sample variance (nan below two users; never negative)."""
        if self.n < 2:
            return math.nan
        return max(self.squares - self.total * self.total / self.n, 0.0) / (self.n - 1)

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "total": self.total, "squares": self.squares}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Moments:
        """From :meth:`to_json`, or from Redis counters (strings are accepted)."""
        return cls(int(float(data.get("n", 0))), float(data.get("total", 0.0)),
                   float(data.get("squares", 0.0)))


def increments(old: float | None, new: float) -> tuple[int, float, float]:
    """The increments of ``(n, total, squares)`` when a user's value goes from ``old``
    (``None``: the user's first search in the arm) to ``new``."""
    if old is None:
        return 1, new, new * new
    return 0, new - old, new * new - old * old


__all__ = ["METRICS", "Metric", "Moments", "UserCounts", "increments"]
