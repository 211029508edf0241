"""Conversion metrics of an A/B test: the per-user values of the metrics an experiment
declares besides the click (``"metrics"``, docs/conversions.md), and what may be declared.

A user's value of a conversion metric is what they did in their arm: the number of
attributed events for a ``count`` metric (orders), the sum of the events' values for a
``sum`` metric (revenue; the raw values: an A/B test compares means, so no cap is needed
as it is for interleaving's bounded outcome). **A user who searched and never converted
has the value 0**, and counts: the mean is over every user of the arm, as for ``ctr``.
So the service puts each user in every conversion metric's moments with value 0 on their
first search in an arm, and each event attributed to them then moves their value from
``old`` to :func:`after` (the increments of :func:`rollout.ab.moments.increments`).

Pure: no I/O.

Examples
--------
>>> after(0.0, "count", None), after(2.0, "sum", 19.5)
(1.0, 21.5)
>>> from rollout.ab.moments import Moments
>>> per_user_moments({"u1": 40.0, "u2": 0.0}, ["u1", "u2", "u3"])
Moments(n=3, total=40.0, squares=1600.0)
>>> name_problems([{"name": "click"}, {"name": "ctr", "action": "purchase"}])[0][:45]
"metrics[1].name: 'ctr' is a metric an A/B tes"
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rollout.ab.moments import METRICS, Moments

#: names a conversion metric of an A/B test may not take: the A/B test's own metrics and
#: the clicked searches' counter (they share the arm's moments)
RESERVED = (*METRICS, "clicked")


def after(old: float, kind: str, value: float | None) -> float:
    """A user's value of a conversion metric after one more event attributed to them:
    one more for ``count``, plus the event's ``value`` for ``sum``."""
    if kind == "sum":
        if value is None:
            raise ValueError("a sum metric's event carries a value")
        return float(old) + float(value)
    if kind != "count":
        raise ValueError(f"a metric's value is 'count' or 'sum', not {kind!r}")
    return float(old) + 1.0


def per_user_moments(values: Mapping[str, float], users: Iterable[str]) -> Moments:
    """The moments of one arm's conversion metric: ``users`` are the arm's users (those
    who searched in it), ``values`` the users' values (a user absent has 0)."""
    return Moments.of(float(values.get(u, 0.0)) for u in dict.fromkeys(users))


def name_problems(metrics: Sequence[Mapping[str, Any]]) -> list[str]:
    """What an A/B test cannot take in a declaration otherwise valid: a metric of an
    action named like one of its own metrics (:data:`RESERVED`), each naming its field."""
    return [f"metrics[{n}].name: {m.get('name')!r} is a metric an A/B test measures itself "
            f"({', '.join(RESERVED)}): name the metric of action {m.get('action')!r} "
            f"otherwise" for n, m in enumerate(metrics)
            if m.get("action") is not None and m.get("name") in RESERVED]


__all__ = ["RESERVED", "after", "name_problems", "per_user_moments"]
