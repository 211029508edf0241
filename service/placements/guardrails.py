"""Guardrails on the service side: what a placement search counts, and the periodic check
that pauses a harmful experiment (the rules and thresholds: :mod:`rollout.guardrails`).

Counting is cheap: an experiment search's counts go into the script that already saves
its impression (``g:``-prefixed fields of the experiment's counters hash); a search whose
experiment served nothing, and a control search, add them in one pipelined round trip
(:mod:`service.store.placements`). The counts are per call of a ranker: ``calls``,
``failures`` (errors, timeouts, and a chosen ranker skipped because its circuit breaker is
open: for the user it failed), ``empty`` and the latency bucket of the fetch that called
it (a duel's rankers are called concurrently: each is given the slower of the two, which
only errs towards caution).

:func:`check` runs at most every ``guardrail_interval_s`` per API process and placement
(after a search of the placement, :mod:`service.placements.search`), at once for an
experiment that could not serve a search, and for every placement at each sweep of the
workers (:func:`check_all`): for each running experiment it reads
the counters, :func:`rollout.guardrails.evaluate`, and on a trip pauses the experiment
(its lifecycle, audit entry ``guardrail_tripped``, its share to control at once, the
reason kept on the placement for the experiment's state, its report, ``/ui/`` and the
metric ``rankduel_guardrail_tripped``).

The abandonment rule compares the experiment's pages with the control's **over the same
period**, since the experiment's counts last started (its start, or its resume): its own
pages are its credited impressions (``g:pages``) and those without any click reported
(``g:abandoned``), counted by the credit step; the control's are the control pages
served in that period whose buckets have settled (``g:control_pages``, and
``g:control_clicked`` those with a click reported with their ``page_token``), added to it
by the fold of the worker's sweep (:mod:`service.placements.control_pages`). Both sides count a page
as abandoned when no click at all was reported for it (the dwell rule does not apply).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from rollout.call_counts import ranker_counters
from rollout.control_pages import page_counters
from rollout.guardrails import PageCounters, RankerCounters, Trip, evaluate
from service.errors import Conflict
from service.placements import control_pages
from service.placements.traffic import pause
from service.queue import TaskQueue
from service.store import Contention, Store, audit_entry
from service.store.control_pages import CONTROL_CLICKED, CONTROL_PAGES
from service.store.placements import ABANDONED, GUARD_PREFIX, PAGES
from service.store.snapshot import ExperimentMissing
from service.webhooks import outbox

log = logging.getLogger("rankduel.guardrails")

def _experiment_rankers(counts: dict[str, int]) -> dict[str, RankerCounters]:
    names = {k[len(GUARD_PREFIX):].rsplit(":", 1)[0] for k in counts
             if k.startswith(GUARD_PREFIX) and k.endswith(":calls")}
    return {n: ranker_counters(counts, f"{GUARD_PREFIX}{n}:") for n in names}


def experiment_pages(counts: dict[str, int]) -> tuple[PageCounters, PageCounters]:
    """The experiment's pages and the control's over its period, from its counters
    (module docstring)."""
    pages = counts.get(PAGES, 0)
    own = PageCounters(settled=pages, abandoned=min(counts.get(ABANDONED, 0), pages))
    return own, page_counters(counts.get(CONTROL_PAGES, 0), counts.get(CONTROL_CLICKED, 0))


def check(store: Store, name: str, experiments: Iterable[str],
          queue: TaskQueue | None = None) -> list[tuple[str, Trip]]:
    """Evaluate the guardrails of placement ``name``'s running ``experiments``; pause
    each one that trips (module docstring; ``queue``: send the webhooks' delivery at
    once). Returns what tripped."""
    control = ranker_counters(store.placements.control_counters(name))
    out = []
    for exp_id in experiments:
        try:
            meta = store.experiments.snapshot(exp_id).meta
        except ExperimentMissing:
            continue
        counts = store.placements.guard_counters(exp_id)
        pages, control_side = experiment_pages(counts)
        trips = evaluate(meta.get("guardrails"), _experiment_rankers(counts), pages,
                         control, control_side)
        if trips and trip(store, name, exp_id, trips[0], queue):
            out.append((exp_id, trips[0]))
    return out


def check_all(store: Store, inactivity_s: float | None = None) -> int:
    """Check every placement's running experiments (the worker's sweep calls it, so a
    placement is checked even when no API process serves it); returns the trips. With
    ``inactivity_s``, each placement's settled control pages are first folded into its
    running experiments (:func:`service.placements.control_pages.fold`; dropped when none runs, so
    a placement keeps only its unsettled buckets). One unreadable placement does not
    stop the others."""
    tripped = 0
    for name in store.placements.placement_names():
        try:
            data = store.placements.placement(name)
            running = [e["experiment"] for e in (data or {}).get("experiments", [])
                       if e["status"] == "running"]
            if inactivity_s is not None:
                control_pages.fold(store, name, store.placements.control_counters(name), running,
                                   inactivity_s)
            tripped += len(check(store, name, running)) if running else 0
        except Exception:
            log.exception("guardrails of placement %s not checked", name)
    return tripped


def trip(store: Store, name: str, exp_id: str, t: Trip,
         queue: TaskQueue | None = None) -> bool:
    """Pause ``exp_id`` for the guardrail ``t`` (:func:`service.placements.traffic.pause`,
    the operator's pause, with the reason kept on the placement), then the audit entry
    and the webhook event (one script).
    False (nothing more done) when it was no longer running: another process's check,
    or the operator, paused it first."""
    now = time.time()
    exp_name = store.webhooks.experiment_name(exp_id)  # read first: the audit follows the pause
    try:
        pause(store, exp_id, actor="guardrail", queue=queue, tripped={
            "rule": t.rule, "ranker": t.ranker, "reason": t.reason, "observed": t.observed,
            "threshold": t.threshold, "ts": now})
    except (Conflict, ExperimentMissing, Contention):
        return False
    detail = {"rule": t.rule, "ranker": t.ranker, "reason": t.reason, "placement": name}
    # the audit entry and the webhook event in one script
    outbox.record(store, exp_id, "guardrail_tripped", {
        **detail, "observed": float(t.observed), "threshold": float(t.threshold)},
        name=exp_name, queue=queue,
        audit=audit_entry(now, "guardrail_tripped", actor="service", **detail))
    log.warning("guardrail %s tripped: experiment %s paused on placement %s: %s",
                t.rule, exp_id, name, t.reason)
    return True


__all__ = ["check", "check_all", "experiment_pages", "trip"]
