"""An experiment's traffic on its placement: the operator's actions that touch both the
experiment (its lifecycle, in its own hash tag) and its placement (its share, in the
placement's): creation with ``placement`` and ``traffic``, a PATCH of ``traffic``,
pause/resume/stop, deletion (:mod:`service.placements.operations` holds the placement's
side).

The two writes are two transactions (two hash tags, two shards on a cluster), ordered so
that a failure in between never leaves an experiment taking traffic it should not: a
pause or stop changes the lifecycle first (a paused experiment serves no duel) and then
sends its share to control; a resume checks the placement's sum first. :func:`pause` is
the one pause, whoever asks: the operator (``POST /experiments/ID/pause``) and a
guardrail's trip (:func:`service.placements.guardrails.trip`).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from rollout.guardrails import check_params
from service.errors import Conflict, NotFound, Unprocessable
from service.experiments import operations as experiments
from service.placements import operations as placements
from service.queue import TaskQueue
from service.runtime import Runtime
from service.store import Store
from service.store.snapshot import ExperimentMissing
from service.webhooks import outbox


def traffic_of(body: Any) -> Any:
    """The JSON ``traffic`` of a ``POST /experiments`` body (None: no placement);
    ``placement`` and ``traffic`` go together (422), ``guardrails`` are checked."""
    if (body.placement is None) != (body.traffic is None):
        raise Unprocessable("fields 'placement' and 'traffic' go together: give both (the "
                            "search box and the share it takes) or neither")
    if body.guardrails is not None:
        try:
            check_params(body.guardrails.model_dump(exclude_none=True))
        except ValueError as exc:
            raise Unprocessable(f"field 'guardrails': {exc}") from None
    return None if body.traffic is None else as_json(body.traffic)


def as_json(traffic: Any) -> Any:
    """A parsed ``traffic`` (a share or a list of steps) as JSON."""
    if isinstance(traffic, list):
        return [step.model_dump() for step in traffic]
    return float(traffic)


def join_or_delete(rt: Runtime, exp_id: str, placement: str, traffic: Any) -> None:
    """Put the new experiment on its placement; if that fails now (another experiment
    took the share meanwhile), delete it and answer why."""
    try:
        rt.store.placements.reset_guard(exp_id, time.time())  # its guardrail counts start (g:since)
        placements.join(rt.store, placement, exp_id, traffic)
    except Exception:
        rt.store.experiments.delete_experiment(exp_id)
        raise


def _placement(rt: Runtime, exp_id: str) -> str | None:
    return rt.store.experiments.snapshot(exp_id).meta.get("placement")


def pause(store: Store, exp_id: str, *, actor: str = "operator",
          tripped: dict[str, Any] | None = None, queue: TaskQueue | None = None) -> str:
    """Pause ``exp_id``: its lifecycle first (a paused experiment serves no duel, and the
    lifecycle's transaction lets one caller of several pause it), then its share on its
    placement to control, with ``tripped`` (the guardrail that paused it) kept there.

    :class:`Conflict` when it was not running (another process's trip, or the operator,
    got there first); its placement is brought in line all the same, so that a pause cut
    short between the two writes is finished by the next one. The ``experiment_paused``
    webhook event commits with the lifecycle; ``queue``: send its delivery at once."""
    name = store.experiments.snapshot(exp_id).meta.get("placement")
    try:
        state = experiments.set_lifecycle(store, exp_id, "pause", actor=actor)
    except Conflict:
        current = store.experiments.snapshot(exp_id).lifecycle
        entry = next((e for e in ((store.placements.placement(name) or {}).get("experiments", [])
                                  if name else ()) if e["experiment"] == exp_id), None)
        if entry and entry["status"] == "running" and current in ("paused", "stopped"):
            with contextlib.suppress(placements.NotRunning, NotFound):
                placements.set_status(store, name, exp_id, current, actor=actor)
        raise
    if name:
        with contextlib.suppress(placements.NotRunning, NotFound):
            placements.set_status(store, name, exp_id, state, actor=actor, tripped=tripped)
    outbox.mark_due(store, exp_id, queue)  # its event committed with the lifecycle
    return state


def set_traffic(rt: Runtime, exp_id: str, traffic: Any) -> None:
    """A new ``traffic`` from now (409 for an experiment on no placement)."""
    name = _placement(rt, exp_id)
    if not name:
        raise Conflict(f"experiment {exp_id!r} is on no placement: it takes every search "
                       f"sent to it (create it with \"placement\" and \"traffic\")")
    placements.set_traffic(rt.store, name, exp_id, as_json(traffic))


def set_lifecycle(rt: Runtime, exp_id: str, action: str) -> str:
    """``pause``, ``resume`` or ``stop``, followed by its placement (module docstring)."""
    if action == "pause":
        return pause(rt.store, exp_id, queue=rt.queue)
    name = _placement(rt, exp_id)
    if not name:
        return experiments.set_lifecycle(rt.store, exp_id, action)
    if action == "resume":
        placements.set_status(rt.store, name, exp_id, "running")
        try:
            state = experiments.set_lifecycle(rt.store, exp_id, action)
        except Conflict:
            current = rt.store.experiments.snapshot(exp_id).lifecycle
            placements.set_status(rt.store, name, exp_id,
                                  "stopped" if current == "stopped" else "paused")
            raise
        rt.store.placements.reset_guard(exp_id, time.time())  # the guardrails count afresh
        return state
    state = experiments.set_lifecycle(rt.store, exp_id, action)
    placements.set_status(rt.store, name, exp_id, state)
    return state


def leave(rt: Runtime, exp_id: str) -> None:
    """Before a deletion: the experiment's buckets go back to control."""
    try:
        name = _placement(rt, exp_id)
    except ExperimentMissing:
        return
    if name:
        placements.leave(rt.store, name, exp_id)


__all__ = ["as_json", "join_or_delete", "leave", "pause", "set_lifecycle", "set_traffic",
           "traffic_of"]
