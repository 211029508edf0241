"""The metrics an experiment declares: what counts as a win besides the click.

``"metrics": [{"name": "click"}, {"name": "cart", "action": "add_to_cart", "window_s":
3600}, {"name": "revenue", "action": "purchase", "value": "sum", "window_s": 86400,
"cap": 500}]`` and ``"primary": "click"``. ``{"name": "click"}`` (no action) is the click
metric, whose ``W`` is the experiment's own unless ``primary`` names another metric
(:func:`learns_clicks`). Every other metric has an ``action`` (the
name a front end or a back end reports with ``POST /outcomes``, e.g. OpenSearch UBI's
``add_to_cart``, ``purchase``), a ``window_s`` (an event counts for the impression that
showed the document at most this long before it), and a ``value`` kind:

* ``count``: each attributed event is one comparison, credited by the interleaving
  method exactly as a click on the document's position would be;
* ``sum``: the same comparison, but with its strength scaled by the event's value,
  bounded by the metric's ``cap`` (:func:`bounded`), so that every outcome stays in
  [0, 1] and the anytime verdict of :mod:`bandits.confidence` stays valid; the plain
  sums of the values per ranker are kept beside it for display.

Pure: no Redis, no Flask.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: the click metric's name (its ``W`` is the experiment's own)
CLICK = "click"
#: at most this many metrics per experiment (the click metric included)
MAX_METRICS = 5
#: the longest attribution window: 7 days
MAX_WINDOW_S = 7 * 86400
#: the default window of a metric with an action
DEFAULT_WINDOW_S = 86400
#: the default cap of a ``sum`` metric: a value at or above it counts as a full win
DEFAULT_CAP = 1000.0
#: the largest value an event may carry
MAX_VALUE = 1e9
#: a metric's name (it appears in stored field names: no ``:``, ``,`` or ``|``)
NAME_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
#: an action's name (``add_to_cart``, ``purchase``)
ACTION_PATTERN = r"^[a-z][a-z0-9_.-]{0,63}$"
VALUE_KINDS = ("count", "sum")


@dataclass(frozen=True)
class Metric:
    """One declared metric (``action`` None: the click metric)."""

    name: str
    action: str | None = None
    value: str = "count"
    window_s: int = 0
    cap: float | None = None

    @property
    def is_click(self) -> bool:
        return self.action is None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.action is not None:
            out.update(action=self.action, value=self.value, window_s=self.window_s)
            if self.value == "sum":
                out["cap"] = self.cap
        return out

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> Metric:
        action = d.get("action")
        if action is None:
            return cls(d["name"])
        value = d.get("value") or "count"
        cap = float(d.get("cap") or DEFAULT_CAP) if value == "sum" else None
        return cls(d["name"], action, value, int(d.get("window_s") or DEFAULT_WINDOW_S), cap)


def declared(meta: Mapping[str, Any]) -> list[Metric]:
    """The metrics of an experiment's meta (empty: none declared, today's behaviour)."""
    return [Metric.of(m) for m in meta.get("metrics") or ()]


def primary(meta: Mapping[str, Any]) -> str | None:
    """The primary metric's name (None: no metrics declared)."""
    return meta.get("primary") if meta.get("metrics") else None


def learns_clicks(meta: Mapping[str, Any]) -> bool:
    """Whether the experiment's policy learns from clicks (no metrics declared, or
    ``primary`` is ``click``). Otherwise ``W`` is the primary metric's: the policy's own
    ``update()`` applies each of its attributed events (:mod:`service.credit.primary`),
    and the clicks go to a ``W`` of their own, the click metric's.

    >>> learns_clicks({}), learns_clicks({"metrics": [{"name": "r"}], "primary": "r"})
    (True, False)
    """
    return (primary(meta) or CLICK) == CLICK


def counted(meta: Mapping[str, Any]) -> list[Metric]:
    """The declared metrics whose counts are kept apart from the experiment's ``W`` (in
    the metrics hash): each metric of an action, and the click metric when the policy
    learns from another (:func:`learns_clicks`).

    >>> [m.name for m in counted({"metrics": [{"name": "click"},
    ...     {"name": "r", "action": "purchase"}], "primary": "r"})]
    ['click', 'r']
    """
    own = learns_clicks(meta)
    return [m for m in declared(meta) if not (m.is_click and own)]


def problems(metrics: Sequence[Mapping[str, Any]], primary_name: str | None) -> list[str]:
    """What is wrong with a declaration the JSON Schema cannot say (empty: nothing),
    each problem naming its field.

    >>> problems([{"name": "click"}, {"name": "click"}], "click")
    ["metrics[1].name: 'click' is declared twice (names are unique)"]
    >>> problems([{"name": "rev", "action": "purchase", "value": "sum"}], "rev")
    []
    """
    out = []
    seen: set[str] = set()
    for n, m in enumerate(metrics):
        name = m.get("name")
        if name in seen:
            out.append(f"metrics[{n}].name: {name!r} is declared twice (names are unique)")
        seen.add(name)
        if name == CLICK and m.get("action") is not None:
            out.append(f"metrics[{n}]: 'click' is the click metric: it takes no action "
                       "(name the metric of an action otherwise)")
        if m.get("action") is None and name != CLICK:
            out.append(f"metrics[{n}].action: required (only the metric named 'click' "
                       "has none: it counts clicks)")
        if m.get("action") is None and any(m.get(f) is not None
                                           for f in ("value", "window_s", "cap")):
            out.append(f"metrics[{n}]: the click metric takes no value, window_s or cap")
        if m.get("cap") is not None and (m.get("value") or "count") != "sum":
            out.append(f"metrics[{n}].cap: only a value: \"sum\" metric has a cap")
    name = primary_name or CLICK
    if name not in seen:
        out.append(f"primary: {name!r} is not a declared metric "
                   f"(declared: {', '.join(sorted(seen)) or 'none'})")
    return out


def declare(metrics: Sequence[Mapping[str, Any]], primary_name: str | None
            ) -> tuple[list[dict[str, Any]], list[str]]:
    """A ``POST /experiments``' ``metrics`` and ``primary`` as stored in the meta
    (defaults filled in, in the declared order), and what is wrong with them (each
    problem naming its field). No metrics: nothing stored, today's experiment.

    >>> declare([], None)
    ([], [])
    >>> declare([], "click")[1]
    ["field 'primary' needs 'metrics'"]
    >>> stored, _ = declare([{"name": "click"}, {"name": "cart", "action": "add_to_cart"}],
    ...                     None)
    >>> stored[1]["window_s"], stored[1]["value"]
    (86400, 'count')
    """
    if not metrics:
        return [], ([] if primary_name is None else ["field 'primary' needs 'metrics'"])
    found = problems(metrics, primary_name)
    return ([] if found else [Metric.of(m).to_json() for m in metrics]), found


def bounded(s: float, value: float, cap: float) -> float:
    """A ``sum`` metric's outcome: the interleaving outcome ``s`` (1: the first ranker
    placed the document) pulled toward ½ by the event's value, ``½ + (s − ½)·min(value,
    cap)/cap``. It stays in [0, 1], so ``W_ij + W_ji`` still counts comparisons and the
    anytime test of :mod:`bandits.confidence` keeps its guarantee; a win worth ``cap`` or
    more counts as a full win, a win worth nothing as a tie.

    >>> bounded(1.0, 250.0, 1000.0), bounded(0.0, 5000.0, 1000.0), bounded(1.0, 0.0, 10)
    (0.625, 0.0, 0.5)
    """
    frac = min(max(float(value), 0.0), cap) / cap
    return 0.5 + (float(s) - 0.5) * frac


def value_problem(metrics: Iterable[Metric], value: Any) -> str | None:
    """Why ``value`` cannot be counted for ``metrics`` (all of one action), or None.

    >>> m = [Metric("revenue", "purchase", "sum", 60, 100.0)]
    >>> value_problem(m, None)
    "field 'value': required: metric 'revenue' sums the values of 'purchase'"
    >>> value_problem(m, -1), value_problem(m, 3.5)
    ("field 'value': must be a number from 0 to 1000000000 (got -1)", None)
    """
    sums = [m for m in metrics if m.value == "sum"]
    if value is None:
        if sums:
            return (f"field 'value': required: metric {sums[0].name!r} sums the values "
                    f"of {sums[0].action!r}")
        return None
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 <= value <= MAX_VALUE):
        return f"field 'value': must be a number from 0 to {MAX_VALUE:.0f} (got {value!r})"
    return None


def attribution_ttl(metrics: Iterable[Metric]) -> int:
    """How long an impression's attribution entries live: the longest window of its
    metrics with an action (0: none, nothing is written)."""
    return max((m.window_s for m in metrics if not m.is_click), default=0)
