"""The webhooks' part of the workers' sweep: tell each ramp step once, each split that
looks wrong once, and queue a delivery task for every experiment with events due
(``rankduel.sweep`` calls :func:`sweep` every ``sweep_interval_s``).

A split is checked (:func:`service.reports.splits.flagged_splits`: an A/B test's arms, the
experiment's share of its placement, team draft's first pick and positions) for every
running experiment of a placement at each sweep (a few Redis reads each; the workers'
sweep checks them and passes the flagged ones here, so this package reads no report):
a flag is told
once (``srm`` in the experiment's hooks state), within a sweep of the searches that
raised it; the flag is a sequential test's, kept once raised, so there is nothing to
tell when it clears.

A ramp is a schedule evaluated by time (:mod:`rollout.ramps`): nothing happens in Redis
when it steps. The sweep compares the step each running experiment of a placement has
reached with the one last told (``ramp`` in the experiment's hooks state, written by the
same script that appends the event), so each step is told once, whichever worker sees it
first; a step reached while no worker ran is told when one does (the latest step only).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from rollout.ramps import Ramp, parse_traffic
from service.queue import TaskQueue
from service.store import Store
from service.webhooks import outbox

log = logging.getLogger("rankduel.webhooks")


def reached(ramp: Ramp, elapsed_s: float) -> int:
    """How many steps of ``ramp`` have started ``elapsed_s`` after its start.

    >>> r = parse_traffic([{"after": "0m", "share": 0.01}, {"after": "10s", "share": 0.1}])
    >>> reached(r, 0), reached(r, 9.9), reached(r, 10)
    (1, 1, 2)
    """
    return sum(1 for s in ramp.steps if s.after_s <= elapsed_s)


def ramp_steps(store: Store, now: float | None = None) -> int:
    """Record a ``ramp_step`` event for each running experiment whose ramp reached a
    step not told yet (its first step, at 0, is its start: not a step); how many."""
    now = time.time() if now is None else now
    told = 0
    for name in store.placements.placement_names():
        try:
            entries = (store.placements.placement(name) or {}).get("experiments", [])
        except Exception:
            log.exception("ramps of placement %s not read", name)
            continue
        for e in entries:
            if e["status"] != "running" or not isinstance(e["traffic"], list):
                continue
            ramp = parse_traffic(e["traffic"])
            i = reached(ramp, now - float(e["since"]))
            if i == 0 or ramp.steps[i - 1].after_s == 0:
                continue
            step = ramp.steps[i - 1]
            data = {"placement": name, "step": i, "steps": len(ramp.steps),
                    "share": step.share, "previous_share": ramp.steps[i - 2].share
                    if i > 1 else 0.0, "after": step.after}
            if outbox.record(store, e["experiment"], "ramp_step", data,
                             once=("ramp", f"{e['since']}:{i}")) is not None:
                told += 1
    return told


def srm_flags(store: Store, flagged: Iterable[tuple[str, str, str]]) -> int:
    """Record an ``srm_flag`` event for each ``(experiment, placement, message)`` of
    ``flagged`` (the splits that look wrong now: :func:`service.reports.splits.flagged_splits`,
    which the workers' sweep passes in) not told yet; how many."""
    told = 0
    for exp_id, name, message in flagged:
        if outbox.record(store, exp_id, "srm_flag", {"placement": name, "message": message},
                         once=("srm", "flagged")) is not None:
            told += 1
    return told


def queue_due(store: Store, queue: TaskQueue, lease_s: float, now: float | None = None) -> int:
    """Queue a delivery task for each experiment with events due; how many."""
    now = time.time() if now is None else now
    queued = 0
    for exp_id, _mark in store.webhooks.hooks_due(now):
        if queue.webhooks(exp_id):
            store.webhooks.push_hooks_due(exp_id, now + lease_s)
            queued += 1
    return queued


def stream_id(sid: str) -> tuple[int, int]:
    """A stream id as a comparable pair.

    >>> stream_id("1700000000000-2") < stream_id("1700000000001-0")
    True
    """
    ms, _, seq = sid.partition("-")
    return int(ms), int(seq or 0)


def behind(store: Store, exp_ids: list[str], now: float | None = None) -> int:
    """Mark due each experiment with an event some enabled hook has not done: what
    repairs a due mark lost between an event's append and its mark (a process killed
    in between); how many were marked."""
    now = time.time() if now is None else now
    hooks = [h for h in (store.webhooks.webhook(i) for i in store.webhooks.webhook_ids())
             if h is not None and not h["disabled"]]
    if not hooks:
        return 0
    marked = 0
    for start in range(0, len(exp_ids), 500):
        for exp_id, (last, state) in store.webhooks.outbox_heads(
            exp_ids[start:start + 500]).items():
            if last is None:
                continue
            if any(stream_id(last) > stream_id(state.get(f"c:{h['id']}") or h["since"])
                   for h in hooks if not h.get("experiments") or exp_id in h["experiments"]):
                store.webhooks.mark_hooks_due(exp_id, now)
                marked += 1
    return marked


def sweep(store: Store, queue: TaskQueue, lease_s: float, full_every_s: float = 60.0,
          flagged: Iterable[tuple[str, str, str]] = ()) -> int:
    """Ramp steps and the ``flagged`` splits (:func:`srm_flags`), once per ``full_every_s`` every
    outbox checked (:func:`behind`), then the deliveries due; how many tasks were
    queued."""
    ramp_steps(store)
    srm_flags(store, flagged)
    if store.webhooks.take_hooks_full(full_every_s):
        behind(store, store.list_ids())
    return queue_due(store, queue, lease_s)
