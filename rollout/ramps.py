"""An experiment's ``traffic``: a share, or a ramp (a schedule of shares over time).

``traffic`` is either a number in [0, 1] (the share of the placement's searches the
experiment takes) or a schedule::

    [{"after": "0m", "share": 0.01}, {"after": "30m", "share": 0.1}, {"after": "1d", "share": 0.5}]

whose share at a time ``t`` since the schedule started is that of the last step with
``after <= t`` (0 before the first step). Durations are a number and a unit: ``30s``,
``30m``, ``2h``, ``1d`` (``0`` alone is allowed). Steps are in increasing ``after``; a
ramp may go down as well as up.

The clock is the service's: it starts when the experiment starts, or when a PATCH sets a
new ``traffic``. A paused or stopped experiment takes no traffic whatever its schedule
(:meth:`rollout.placements.ExperimentTraffic.share_at`).

Pure: no I/O.

Examples
--------
>>> ramp = parse_traffic([{"after": "0m", "share": 0.01}, {"after": "30m", "share": 0.1}])
>>> share_at(ramp, 0), share_at(ramp, 1799), share_at(ramp, 1800)
(0.01, 0.01, 0.1)
>>> max_share(ramp), next_change(ramp, 60)
(0.1, 1740.0)
>>> parse_traffic(0.25), share_at(0.25, 10**6)
(0.25, 0.25)
>>> parse_duration("2h")
7200.0
>>> parse_traffic([{"after": "30m", "share": 0.1}, {"after": "10m", "share": 0.2}])
Traceback (most recent call last):
...
ValueError: traffic: step 2's "after" (10m) must be later than step 1's (30m)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: Any) -> float:
    """Seconds in a duration such as ``30s``, ``30m``, ``2h``, ``1d`` (or ``0``), or a
    ``ValueError`` saying what is expected."""
    m = _DURATION.match(text) if isinstance(text, str) else None
    if m is None or (not m.group(2) and float(m.group(1)) != 0):
        raise ValueError(f"expected a duration such as 30s, 30m, 2h or 1d, got {text!r}")
    return float(m.group(1)) * _UNITS.get(m.group(2), 1)


@dataclass(frozen=True)
class Step:
    """From ``after_s`` seconds on, the share is ``share``; ``after`` is the text given."""

    after_s: float
    share: float
    after: str


@dataclass(frozen=True)
class Ramp:
    """A schedule of shares (module docstring)."""

    steps: tuple[Step, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [{"after": s.after, "share": s.share} for s in self.steps]


#: what an experiment's ``traffic`` is once parsed
Traffic = float | Ramp


def _share(value: Any, where: str) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or not 0 <= value <= 1):
        raise ValueError(f"{where} must be a number from 0 to 1 (0.1 is 10 %), got {value!r}")
    return float(value)


def parse_traffic(value: Any) -> Traffic:
    """``traffic`` as given in JSON (a share or a schedule), checked; a ``ValueError``
    says what is wrong and how to write it."""
    if not isinstance(value, list):
        if isinstance(value, Mapping | str):
            raise ValueError('traffic: expected a share (0.1) or a schedule '
                             '([{"after": "0m", "share": 0.01}, ...]), got ' + repr(value))
        return _share(value, "traffic")
    if not value:
        raise ValueError("traffic: a schedule needs at least one step")
    steps: list[Step] = []
    for i, step in enumerate(value, 1):
        if not isinstance(step, Mapping) or set(step) != {"after", "share"}:
            raise ValueError(f'traffic: step {i} must be {{"after": "30m", "share": 0.1}}, '
                             f"got {step!r}")
        try:
            after_s = parse_duration(step["after"])
        except ValueError as exc:
            raise ValueError(f'traffic: step {i}\'s "after": {exc}') from None
        share = _share(step["share"], f"traffic: step {i}'s share")
        if steps and after_s <= steps[-1].after_s:
            raise ValueError(f'traffic: step {i}\'s "after" ({step["after"]}) must be later '
                             f"than step {i - 1}'s ({steps[-1].after})")
        steps.append(Step(after_s, share, step["after"].strip()))
    return Ramp(tuple(steps))


def share_at(traffic: Traffic, elapsed_s: float) -> float:
    """The share ``elapsed_s`` seconds after the schedule started (a plain share is
    constant)."""
    if not isinstance(traffic, Ramp):
        return traffic
    share = 0.0
    for step in traffic.steps:
        if step.after_s > elapsed_s:
            break
        share = step.share
    return share


def max_share(traffic: Traffic) -> float:
    """The largest share the traffic ever asks for (what the placement's sum checks)."""
    if not isinstance(traffic, Ramp):
        return traffic
    return max(s.share for s in traffic.steps)


def next_change(traffic: Traffic, elapsed_s: float) -> float | None:
    """Seconds from ``elapsed_s`` to the next step, or ``None`` when the share will not
    change again (when the service should reallocate the placement's buckets next)."""
    if isinstance(traffic, Ramp):
        for step in traffic.steps:
            if step.after_s > elapsed_s:
                return step.after_s - elapsed_s
    return None


def traffic_json(traffic: Traffic) -> float | list[dict[str, Any]]:
    """``traffic`` as JSON: the share, or the schedule's steps as given."""
    return traffic.to_json() if isinstance(traffic, Ramp) else traffic


__all__ = ["Ramp", "Step", "Traffic", "max_share", "next_change", "parse_duration",
           "parse_traffic", "share_at", "traffic_json"]
