"""A placement (a search box): its control ranker and the experiments sharing its traffic.

A front end searches a placement (``GET /search?placement=web&q=…``). Each running
experiment of the placement takes a ``traffic`` share (:mod:`rollout.ramps`); the shares
are mutually exclusive (a search is in at most one experiment) and add up to at most 1;
the rest of the searches get the control ranker's list, unchanged.

The sum is checked on each experiment's largest share (the top of its ramp), so that no
ramp, whenever it started, can push the placement over 1. A paused or stopped experiment
takes no traffic and does not count.

This module holds the definition and its validation (every ``ValueError`` says what is
wrong and how to fix it; the service answers it as a 400). Which buckets each experiment
holds is state (:func:`rollout.allocation.allocate`), and which experiment a search is in
is :func:`rollout.assignment.assign`.

Pure: no I/O.

Examples
--------
>>> p = Placement.from_json({"name": "web", "control": "prod",
...     "experiments": [{"experiment": "e1", "traffic": 0.1},
...                     {"experiment": "e2", "traffic": [{"after": "0m", "share": 0.1},
...                                                      {"after": "1h", "share": 0.3}]}]})
>>> p.shares_at({"e1": 0, "e2": 0}), p.shares_at({"e1": 0, "e2": 3600})
({'e1': 0.1, 'e2': 0.1}, {'e1': 0.1, 'e2': 0.3})
>>> p.with_traffic("e1", 0.8)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
ValueError: placement 'web': the shares add up to 1.1 (e1 0.8, e2 0.3 at the top of its ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from rollout.ramps import Ramp, Traffic, max_share, parse_traffic, share_at, traffic_json

#: an experiment's traffic states: only a running experiment takes searches
STATUSES = ("running", "paused", "stopped")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class ExperimentTraffic:
    """One experiment's place in a placement: its ``traffic`` and its ``status``."""

    experiment: str
    traffic: Traffic
    status: str = "running"

    def share_at(self, elapsed_s: float) -> float:
        """Its share ``elapsed_s`` seconds after its traffic clock started; 0 unless
        running (pause and stop send its searches to control at once)."""
        return share_at(self.traffic, elapsed_s) if self.status == "running" else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "traffic": traffic_json(self.traffic),
                "status": self.status}


@dataclass(frozen=True)
class Placement:
    """A search box: ``name``, the ``control`` ranker, the hash ``salt`` (default: the
    name) and its experiments."""

    name: str
    control: str
    experiments: tuple[ExperimentTraffic, ...] = ()
    salt: str = ""

    def __post_init__(self) -> None:
        if not self.salt:
            object.__setattr__(self, "salt", self.name)
        self.validate()

    # ------------------------------------------------------------------ reading
    def shares_at(self, elapsed: Mapping[str, float]) -> dict[str, float]:
        """Each running experiment's share now, given the seconds since each one's
        traffic clock started (what :func:`rollout.allocation.allocate` takes)."""
        return {e.experiment: e.share_at(elapsed.get(e.experiment, 0.0))
                for e in self.experiments if e.status == "running"}

    def experiment(self, experiment: str) -> ExperimentTraffic:
        for e in self.experiments:
            if e.experiment == experiment:
                return e
        known = ", ".join(e.experiment for e in self.experiments) or "none"
        raise KeyError(f"placement {self.name!r} has no experiment {experiment!r} "
                       f"(it has: {known})")

    # ------------------------------------------------------------------ changing
    def with_traffic(self, experiment: str, traffic: Any) -> Placement:
        """A copy with ``experiment``'s traffic replaced (a PATCH), checked."""
        new = parse_traffic(traffic) if not isinstance(traffic, Ramp) else traffic
        self.experiment(experiment)
        return replace(self, experiments=tuple(
            replace(e, traffic=new) if e.experiment == experiment else e
            for e in self.experiments))

    def with_status(self, experiment: str, status: str) -> Placement:
        """A copy with ``experiment`` running, paused or stopped, checked (resuming
        checks the sum again)."""
        self.experiment(experiment)
        return replace(self, experiments=tuple(
            replace(e, status=status) if e.experiment == experiment else e
            for e in self.experiments))

    # ------------------------------------------------------------------ checking
    def validate(self) -> None:
        """A ``ValueError`` naming what is wrong (module docstring)."""
        where = f"placement {self.name!r}"
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"placement name {self.name!r}: use 1-64 letters, digits, "
                             f"'_', '-' or '.', starting with a letter or digit")
        if not isinstance(self.control, str) or not self.control.strip():
            raise ValueError(f"{where}: control must name the production ranker")
        seen = set()
        for e in self.experiments:
            if e.experiment in seen:
                raise ValueError(f"{where}: experiment {e.experiment!r} is listed twice")
            seen.add(e.experiment)
            if e.status not in STATUSES:
                raise ValueError(f"{where}: status {e.status!r} of {e.experiment!r}: "
                                 f"expected one of {', '.join(STATUSES)}")
        running = [e for e in self.experiments if e.status == "running"]
        total = sum(max_share(e.traffic) for e in running)
        if total > 1 + 1e-9:
            listed = ", ".join(
                f"{e.experiment} {max_share(e.traffic):g}"
                + (" at the top of its ramp" if isinstance(e.traffic, Ramp) else "")
                for e in running)
            raise ValueError(f"{where}: the shares add up to {total:g} ({listed}); they "
                             f"must add up to at most 1: lower one, or pause or stop an "
                             f"experiment")

    # ------------------------------------------------------------------ JSON
    @classmethod
    def from_json(cls, data: Any) -> Placement:
        """A placement from its JSON form (:meth:`to_json`), checked."""
        if not isinstance(data, Mapping):
            raise ValueError("a placement is an object: {\"name\": \"web\", \"control\": "
                             "\"prod\", \"experiments\": [...]}")
        unknown = set(data) - {"name", "control", "salt", "experiments"}
        if unknown:
            raise ValueError(f"placement: unknown field(s) {', '.join(sorted(unknown))}; "
                             f"valid: name, control, salt, experiments")
        for key in ("name", "control"):
            if not isinstance(data.get(key), str):
                raise ValueError(f"placement: {key!r} must be a string")
        items = data.get("experiments", [])
        if not isinstance(items, list):
            raise ValueError("placement: 'experiments' must be a list of "
                             "{\"experiment\": ID, \"traffic\": share or schedule}")
        experiments = []
        for item in items:
            if not isinstance(item, Mapping) or not isinstance(item.get("experiment"), str) \
                    or "traffic" not in item or set(item) - {"experiment", "traffic", "status"}:
                raise ValueError("placement: each experiment is {\"experiment\": ID, "
                                 f"\"traffic\": share or schedule}}, got {item!r}")
            try:
                traffic = parse_traffic(item["traffic"])
            except ValueError as exc:
                raise ValueError(f"experiment {item['experiment']!r}: {exc}") from None
            experiments.append(ExperimentTraffic(item["experiment"], traffic,
                                                 item.get("status", "running")))
        salt = data.get("salt", "")
        if not isinstance(salt, str):
            raise ValueError("placement: 'salt' must be a string")
        return cls(data["name"], data["control"], tuple(experiments), salt)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "control": self.control, "salt": self.salt,
                "experiments": [e.to_json() for e in self.experiments]}


__all__ = ["STATUSES", "ExperimentTraffic", "Placement"]
