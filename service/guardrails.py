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
(after a search of the placement, :mod:`service.placement_search`), at once for an
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
by the fold of the worker's sweep (:mod:`service.control_pages`). Both sides count a page
as abandoned when no click at all was reported for it (the dwell rule does not apply).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from rollout.control_pages import page_counters
from rollout.guardrails import PageCounters, RankerCounters, Trip, evaluate, latency_bucket
from service import control_pages, placements
from service.errors import Conflict, NotFound
from service.experiments import set_lifecycle
from service.store import Contention, Store, audit_entry
from service.store.control_pages import CONTROL_CLICKED, CONTROL_PAGES
from service.store.placements import ABANDONED, GUARD_PREFIX, PAGES
from service.store.snapshot import ExperimentMissing

log = logging.getLogger("rankduel.guardrails")

#: one ranker call: (ranker name, failed, empty, milliseconds)
Call = tuple[str, bool, bool, float]


def tally(calls: list[Call], answered: Iterable[tuple[Any, Any, Sequence[Any]]],
          failed: Iterable[str], waited_s: float) -> None:
    """Add one fetch's calls to ``calls``: ``answered`` as ``(arm, ranker, results)``,
    ``failed`` the names of the rankers that failed or were skipped."""
    ms = waited_s * 1e3
    for _, ranker, results in answered:
        calls.append((ranker.name, False, not results, ms))
    for name in failed:
        calls.append((name, True, False, 0.0))


def fields(calls: Iterable[Call], prefix: str = "") -> dict[str, int]:
    """The counter increments of ``calls`` (``<prefix><ranker>:calls`` ...)."""
    out: dict[str, int] = {}
    for name, failed, empty, ms in calls:
        base = f"{prefix}{name}:" if prefix else ""
        for f in ("calls", "failures" if failed else "empty" if empty else None,
                  None if failed else f"lat:{latency_bucket(ms)}"):
            if f is not None:
                out[base + f] = out.get(base + f, 0) + 1
    return out


def ranker_counters(counts: dict[str, int], prefix: str = "") -> RankerCounters:
    """One ranker's :class:`RankerCounters` from counter fields (``prefix``: its name)."""
    lat = {int(k[len(prefix) + 4:]): v for k, v in counts.items()
           if k.startswith(prefix + "lat:")}
    hist = [lat.get(i, 0) for i in range(max(lat) + 1)] if lat else []
    calls, failures = counts.get(prefix + "calls", 0), counts.get(prefix + "failures", 0)
    return RankerCounters(calls=calls, failures=min(failures, calls),
                          empty=min(counts.get(prefix + "empty", 0), calls - failures),
                          latency=tuple(hist))


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


def check(store: Store, name: str, experiments: Iterable[str]) -> list[tuple[str, Trip]]:
    """Evaluate the guardrails of placement ``name``'s running ``experiments``; pause
    each one that trips (module docstring). Returns what tripped."""
    control = ranker_counters(store.control_counters(name))
    out = []
    for exp_id in experiments:
        try:
            meta = store.snapshot(exp_id).meta
        except ExperimentMissing:
            continue
        counts = store.guard_counters(exp_id)
        pages, control_side = experiment_pages(counts)
        trips = evaluate(meta.get("guardrails"), _experiment_rankers(counts), pages,
                         control, control_side)
        if trips and trip(store, name, exp_id, trips[0]):
            out.append((exp_id, trips[0]))
    return out


def check_all(store: Store, inactivity_s: float | None = None) -> int:
    """Check every placement's running experiments (the worker's sweep calls it, so a
    placement is checked even when no API process serves it); returns the trips. With
    ``inactivity_s``, each placement's settled control pages are first folded into its
    running experiments (:func:`service.control_pages.fold`; dropped when none runs, so
    a placement keeps only its unsettled buckets). One unreadable placement does not
    stop the others."""
    tripped = 0
    for name in store.placement_names():
        try:
            data = store.placement(name)
            running = [e["experiment"] for e in (data or {}).get("experiments", [])
                       if e["status"] == "running"]
            if inactivity_s is not None:
                control_pages.fold(store, name, store.control_counters(name), running,
                                   inactivity_s)
            tripped += len(check(store, name, running)) if running else 0
        except Exception:
            log.exception("guardrails of placement %s not checked", name)
    return tripped


def trip(store: Store, name: str, exp_id: str, t: Trip) -> bool:
    """Pause ``exp_id`` for the guardrail ``t``: its share to control first (at once),
    then its lifecycle, the audit entry and the reason. False (nothing done) when it was
    no longer running: another process's check tripped it first."""
    now = time.time()
    try:
        placements.set_status(store, name, exp_id, "paused", actor="guardrail", tripped={
            "rule": t.rule, "ranker": t.ranker, "reason": t.reason, "observed": t.observed,
            "threshold": t.threshold, "ts": now})
    except (placements.NotRunning, NotFound):
        return False
    # already paused or stopped, or gone: its share went to control all the same
    with contextlib.suppress(Conflict, ExperimentMissing, Contention):
        set_lifecycle(store, exp_id, "pause", actor="guardrail")
    store.add_audit(exp_id, audit_entry(now, "guardrail_tripped", actor="service",
                                        rule=t.rule, ranker=t.ranker, reason=t.reason,
                                        placement=name))
    log.warning("guardrail %s tripped: experiment %s paused on placement %s: %s",
                t.rule, exp_id, name, t.reason)
    return True


__all__ = ["Call", "check", "check_all", "experiment_pages", "fields", "ranker_counters",
           "tally", "trip"]
