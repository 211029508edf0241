"""Placements (search boxes): the operator's actions and the request path's view.

A placement has a **control** ranker (production) and experiments that each take a
``traffic`` share (:mod:`rollout`, where the rules are: shares add up to at most 1,
sticky buckets, ramps). The service keeps, in the placement's hash
(:mod:`service.store.placements`): each experiment's traffic, status (``running``,
``paused``, ``stopped``) and ``since`` (when its traffic clock started), and the bucket
ranges :func:`rollout.allocate` computed from the previous ranges and the shares now.

Every change (an experiment joins, a PATCH of ``traffic``, pause/resume/stop, a ramp's
next step, a guardrail's trip) is one optimistic transaction on the placement's hash
(:func:`service.transaction.transact`: WATCH, read, allocate, MULTI/EXEC), so two API
processes changing one placement at once cannot interleave; :func:`rollout.allocate`
depends only on its arguments, so the one that retries computes from what the other
wrote. Each change of an experiment's share is written to that experiment's audit log.

A ramp's next step is due at ``next_change``: the first process whose view finds it past
reallocates (:meth:`PlacementCache.get`); the others see the new version.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rollout.allocation import allocate
from rollout.hashing import BUCKETS
from rollout.placements import Placement
from rollout.ramps import next_change, parse_traffic, share_at
from service.errors import Conflict, NotFound, Unprocessable
from service.store import Contention, Store, audit_entry
from service.store.keys import placement_key
from service.store.records import Ranker
from service.transaction import transact


def _rollout(data: dict[str, Any]) -> Placement:
    """The pure placement of a stored hash (its definition checked by :mod:`rollout`)."""
    d = data["def"]
    return Placement.from_json({
        "name": d["name"], "control": d["control"]["name"], "salt": d["salt"],
        "experiments": [{k: e[k] for k in ("experiment", "traffic", "status")}
                        for e in data["experiments"]]})


def shares_now(data: dict[str, Any], now: float) -> dict[str, float]:
    """Each running experiment's share at ``now`` (its ramp read at its own clock)."""
    return {e["experiment"]: share_at(parse_traffic(e["traffic"]), now - e["since"])
            for e in data["experiments"] if e["status"] == "running"}


def _next_change(data: dict[str, Any], now: float) -> float | None:
    steps = [now + d for e in data["experiments"] if e["status"] == "running"
             for d in [next_change(parse_traffic(e["traffic"]), now - e["since"])]
             if d is not None]
    return min(steps) if steps else None


def _load(store: Store, name: str) -> dict[str, Any]:
    data = store.placements.placement(name)
    if data is None:
        raise NotFound(f"no placement {name!r} (create it with POST /placements)")
    return data


def change(store: Store, name: str, edit, *, actor: str = "operator",
           action: str = "traffic_changed") -> dict[str, Any]:
    """One transaction on placement ``name``: ``edit(data, now)`` changes
    ``data["experiments"]`` in place (raising to refuse); the sum is checked
    (:class:`rollout.Placement`, 409), the ranges reallocated, and each experiment whose
    share moved gets an audit entry ``action``. Returns the new data."""
    moved: dict[str, tuple[float, float]] = {}

    def write(data: dict[str, Any], pipe) -> dict[str, Any]:
        now = time.time()
        before = {e: sum(b - a for a, b in spans) / BUCKETS  # what its buckets held
                  for e, spans in (data["ranges"] or {}).items()}
        edit(data, now)
        try:
            _rollout(data)
        except ValueError as exc:
            raise Conflict(str(exc)) from None
        after = shares_now(data, now)
        data["ranges"] = allocate(data["ranges"] or {}, after)
        data["next_change"] = _next_change(data, now)
        moved.clear()
        moved.update({e: (before.get(e, 0.0), after.get(e, 0.0))
                      for e in {*before, *after} if before.get(e, 0.0) != after.get(e, 0.0)})
        store.placements.write_placement(pipe, name, experiments=data["experiments"],
                                         ranges=data["ranges"], next_change=data["next_change"],
                                         tripped=data["tripped"] or {})
        # the shares from this version on, for the SRM check (service.store.splits)
        store.splits.record_period(pipe, name, data["version"] + 1, {
            **{e: round(sum(b - a for a, b in spans) / BUCKETS, 6)
               for e, spans in data["ranges"].items()},
            "control": round(1.0 - sum(b - a for spans in data["ranges"].values()
                                       for a, b in spans) / BUCKETS, 6)})
        return data

    data = transact(store, [placement_key(name)], lambda: _load(store, name), write)
    for exp_id, (old, new) in moved.items():
        store.experiments.add_audit(exp_id, audit_entry(time.time(), action, actor=actor,
                                                        placement=name, share_from=old,
                                                        share_to=new))
    return data


def create(store: Store, name: str, control: Ranker, salt: str | None) -> dict[str, Any]:
    """Create placement ``name`` with its ``control`` ranker (409 if it exists)."""
    try:
        Placement(name, control.name, (), salt or "")
    except ValueError as exc:
        raise Unprocessable(str(exc)) from None
    definition = {"name": name, "salt": salt or name, "control": control.to_json(),
                  "created_at": time.time()}
    if not store.placements.create_placement(name, definition):
        raise Conflict(f"placement {name!r} exists (PATCH /placements/{name} changes it)")
    return describe(store, name)


def update(store: Store, name: str, *, control: Ranker | None = None,
           salt: str | None = None) -> dict[str, Any]:
    """Change the control ranker or the salt (a new salt reshuffles every user)."""

    def write(data: dict[str, Any], pipe) -> None:
        d = dict(data["def"])
        if control is not None:
            d["control"] = control.to_json()
            store.placements.reset_control_health(pipe, name, CONTROL_HEALTH)
        if salt is not None:
            d["salt"] = salt
        store.placements.write_placement(pipe, name, **{"def": d})

    transact(store, [placement_key(name)], lambda: _load(store, name), write)
    return describe(store, name)


#: the control ranker's call counters (:mod:`rollout.call_counts`, unprefixed), reset
#: when the control changes
CONTROL_HEALTH = ("calls", "failures", "empty")


def control_health(store: Store, name: str) -> dict[str, Any]:
    """The control ranker's calls since it last changed: how many, how many failed (a
    control search then answers 502) and how many answered no results, with the
    failure rate. Counted in memory by each API process and written at most every
    second (:mod:`service.placements.search`)."""
    counts = store.placements.control_counters(name)
    out: dict[str, Any] = {k: counts.get(k, 0) for k in CONTROL_HEALTH}
    out["failure_rate"] = round(out["failures"] / out["calls"], 6) if out["calls"] else None
    return out


def describe(store: Store, name: str) -> dict[str, Any]:
    """``GET /placements/NAME``: definition, experiments with their share now, ranges."""
    data = _load(store, name)
    now = time.time()
    shares = shares_now(data, now)
    d = data["def"]
    return {
        "name": d["name"], "salt": d["salt"], "control": d["control"],
        "created_at": d["created_at"], "version": data["version"],
        "experiments": [{**e, "share": shares.get(e["experiment"], 0.0),
                         "guardrail": (data["tripped"] or {}).get(e["experiment"])}
                        for e in data["experiments"]],
        "control_share": round(1.0 - sum(shares.values()), 6),
        "control_health": control_health(store, name),
        "ranges": data["ranges"] or {},
        "next_change": data["next_change"],
    }


def _entry(data: dict[str, Any], exp_id: str) -> dict[str, Any]:
    for e in data["experiments"]:
        if e["experiment"] == exp_id:
            return e
    raise NotFound(f"experiment {exp_id!r} is not on placement {data['def']['name']!r}")


def check_join(store: Store, name: str, exp_id: str, traffic: Any) -> None:
    """Refuse, before the experiment is created, what :func:`join` would refuse."""
    data = _load(store, name)
    data["experiments"] = [*data["experiments"], {"experiment": exp_id, "traffic": traffic,
                                                  "status": "running", "since": 0.0}]
    try:
        _rollout(data)
    except ValueError as exc:
        raise Conflict(str(exc)) from None


def join(store: Store, name: str, exp_id: str, traffic: Any) -> None:
    """Put a new experiment on the placement, running at ``traffic`` (clock: now)."""

    def edit(data: dict[str, Any], now: float) -> None:
        data["experiments"].append({"experiment": exp_id, "traffic": traffic,
                                    "status": "running", "since": now})

    change(store, name, edit, action="traffic_started")


def set_traffic(store: Store, name: str, exp_id: str, traffic: Any) -> None:
    """A PATCH of the experiment's ``traffic``: the new share or schedule from now."""

    def edit(data: dict[str, Any], now: float) -> None:
        e = _entry(data, exp_id)
        e["traffic"], e["since"] = traffic, now

    change(store, name, edit)


class NotRunning(Exception):
    """A guardrail's trip found the experiment no longer running (another got there)."""


def set_status(store: Store, name: str, exp_id: str, status: str, *,
               tripped: dict[str, Any] | None = None, actor: str = "operator") -> None:
    """Running, paused or stopped (pause and stop: the share goes to control at once);
    ``tripped``: the guardrail that paused it (cleared on resume); a trip of an
    experiment that is not running raises :class:`NotRunning` and changes nothing (two
    processes that see the same trip pause it once)."""

    def edit(data: dict[str, Any], now: float) -> None:
        e = _entry(data, exp_id)
        if tripped is not None and e["status"] != "running":
            raise NotRunning(exp_id)
        if status == "running" and e["status"] != "running":
            e["since"] = now  # a ramp starts again on resume
        e["status"] = status
        trips = dict(data["tripped"] or {})
        if tripped is not None:
            trips[exp_id] = tripped
        elif status == "running":
            trips.pop(exp_id, None)
        data["tripped"] = trips

    change(store, name, edit, actor=actor, action=f"traffic_{status}")


def leave(store: Store, name: str, exp_id: str) -> None:
    """Take a deleted experiment off the placement (its buckets go to control)."""

    def edit(data: dict[str, Any], now: float) -> None:
        data["experiments"] = [e for e in data["experiments"] if e["experiment"] != exp_id]
        (data["tripped"] or {}).pop(exp_id, None)

    with contextlib.suppress(NotFound):
        change(store, name, edit, action="traffic_removed")


def rollout_state(store: Store, meta: dict[str, Any]) -> dict[str, Any] | None:
    """An experiment's place on its placement (its state and report), or None."""
    name = meta.get("placement")
    if not name:
        return None
    data = store.placements.placement(name)
    entry = next((e for e in (data or {}).get("experiments", [])
                  if e["experiment"] == meta["id"]), None)
    if data is None or entry is None:
        return {"placement": name, "traffic": None, "share": 0.0, "status": "removed",
                "guardrails": meta.get("guardrails") or {}, "guardrail": None}
    return {"placement": name, "traffic": entry["traffic"], "status": entry["status"],
            "share": shares_now(data, time.time()).get(meta["id"], 0.0),
            "guardrails": meta.get("guardrails") or {},
            "guardrail": (data["tripped"] or {}).get(meta["id"])}


@dataclass
class View:
    """What a search of a placement needs, cached per process (:class:`PlacementCache`)."""

    name: str
    salt: str
    control: Ranker
    ranges: dict[str, list[list[int]]]
    running: tuple[str, ...]
    next_change: float | None
    loaded_at: float
    #: the placement's version: the period its searches are counted in (SRM)
    version: int = 0
    checked_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: the control's guardrail counts not yet written (service.placements.search.control)
    unsent: dict[str, int] = field(default_factory=dict)
    sent_at: float = 0.0
    count_lock: threading.Lock = field(default_factory=threading.Lock)
    #: the split's counts not yet written (service.placements.splits): searches and
    #: users per (version, arm), and when they were last written
    split: dict[str, Any] = field(default_factory=dict)


class PlacementCache:
    """Each placement's :class:`View`, re-read at most every ``max_age_s`` (the
    ``state_max_age_ms`` of experiment snapshots): a search costs no Redis call to know
    its experiment, and a change of shares reaches every process within that time."""

    def __init__(self, store: Store, max_age_s: float) -> None:
        self.store, self.max_age = store, max_age_s
        self._views: dict[str, View] = {}

    def get(self, name: str) -> View:
        now = time.monotonic()
        view = self._views.get(name)
        if view is not None and now - view.loaded_at < self.max_age and (
                view.next_change is None or view.next_change > time.time()):
            return view
        data = _load(self.store, name)
        if data["next_change"] is not None and data["next_change"] <= time.time():
            # others changing it all the time: serve what was read, step on the next read
            with contextlib.suppress(Contention):
                data = change(self.store, name, lambda d, t: None, actor="ramp",
                              action="traffic_step")
        d = data["def"]
        view = View(name=name, salt=d["salt"], control=Ranker.from_json(d["control"]),
                    ranges=data["ranges"] or {}, next_change=data["next_change"],
                    running=tuple(e["experiment"] for e in data["experiments"]
                                  if e["status"] == "running"),
                    loaded_at=now, version=data["version"],
                    checked_at=view.checked_at if view else 0.0,
                    unsent=view.unsent if view else {}, sent_at=view.sent_at if view else 0.0,
                    count_lock=view.count_lock if view else threading.Lock(),
                    split=view.split if view else {})
        self._views[name] = view
        return view

    def forget(self, name: str) -> None:
        self._views.pop(name, None)


__all__ = ["NotRunning", "PlacementCache", "View", "change", "check_join", "create",
           "describe", "join", "leave", "rollout_state", "set_status", "set_traffic",
           "shares_now", "update"]
