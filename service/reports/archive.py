"""Archiving a stopped experiment: its per-user and per-impression data freed, a small
record kept (``POST /experiments/ID/archive``, ``GET`` the same path).

A stopped experiment is read for what it decided, not for its impressions. Archiving it
(only once stopped, and once every impression is credited: nothing may lose its credit)
builds its report as it stands, stores it in the experiment's hash with what was freed,
and frees every key :data:`service.store.archive.KEEP` does not list: impressions and
their clicks, the attribution index and outcome events, the event log, the pending set,
an A/B test's per-user counts. What stays: the state (``GET /experiments/ID``: W, the
rankers, counters), the report and verdicts, the A/B decisions and moments behind
``/agreements``, the timeline (audit, history) and the webhook delivery state. Archiving
again answers the same record. An archived experiment may still be deleted.
"""

from __future__ import annotations

import time
from typing import Any

from service.designs.registry import design_of
from service.errors import Conflict, NotFound
from service.store import Store, audit_entry
from service.store.archive import KEEP
from service.store.keys import exp_key


def archive(store: Store, exp_id: str, actor: str = "operator") -> dict[str, Any]:
    """Archive stopped experiment ``exp_id`` (module docstring); its record."""
    snap = store.experiments.snapshot(exp_id)  # 404 for no such experiment
    done = store.archive.archive_record(exp_id)
    if done is not None:
        return done
    if snap.lifecycle != "stopped":
        raise Conflict(f"experiment {exp_id!r} is {snap.lifecycle}: stop it first "
                       f"(POST /experiments/{exp_id}/stop), then archive it")
    pending = store.drains.pending_count(exp_id)
    if pending:
        raise Conflict(f"experiment {exp_id!r} has {pending} impressions not yet credited: "
                       "archive it once they are (within RANKDUEL_INACTIVITY_S of the stop)")
    report = design_of(snap.meta).report(store, exp_id)
    keys = store.archive.experiment_keys(exp_id)
    base = exp_key(exp_id)
    drop = [k for k in keys if k[len(base):] not in KEEP]
    before = store.archive.key_bytes(keys)
    freed = store.archive.key_bytes(drop)
    record = {"id": exp_id, "archived_at": time.time(), "report": report,
              "freed": {"keys": len(drop), "bytes": freed},
              "before": {"keys": len(keys), "bytes": before}}
    store.archive.write_archive(exp_id, record, drop)
    kept = store.archive.experiment_keys(exp_id)
    record["kept"] = {"keys": len(kept), "bytes": store.archive.key_bytes(kept)}
    store.archive.write_archive(exp_id, record, [])
    store.experiments.add_audit(exp_id, audit_entry(time.time(), "archived", actor=actor,
                                                    freed=record["freed"]))
    return record


def archived(store: Store, exp_id: str) -> dict[str, Any]:
    """The archive's record of ``exp_id``; 404 when it is not archived."""
    store.experiments.snapshot(exp_id)  # 404 for no such experiment
    record = store.archive.archive_record(exp_id)
    if record is None:
        raise NotFound(f"experiment {exp_id!r} is not archived (POST "
                       f"/experiments/{exp_id}/archive once it is stopped)")
    return record


__all__ = ["archive", "archived"]
