"""Serving a search of a placement (``GET /search?placement=web&q=…``).

1. The placement's view (:class:`service.placements.operations.PlacementCache`: no Redis call while
   it is fresh) and the search's experiment: :func:`rollout.assign` of the ``user`` id
   and the placement's salt (sticky), or of a random bucket without one.
2. **In an experiment**: that experiment's search (:func:`service.search.serve.search`, as
   ``?experiment=ID``), with ``"placement"`` added to the answer and the rankers' calls
   counted for the guardrails in the impression's own write.
3. **Fallback**: if the experiment cannot serve (every ranker failed, timed out or is in
   quarantine, the experiment was deleted, anything but rankduel's own storage failing),
   the user gets the control's list and no comparison is recorded.
4. **In control**: the control ranker's list, unchanged (its first ``k`` results, each
   with its ``rank``), ``"experiment": null``, ``"impression_id": null``,
   ``"token": null``, ``"rankers": [control]``: no impression, no interleaving; and a
   ``"page_token"`` to report the page's clicks with, for the abandonment guardrail
   (:mod:`service.placements.control_pages`: one MAC, the page counted with the control's
   counts). A control ranker that fails is a 502 naming it.
5. After the answer is built, at most every ``guardrail_interval_s`` per process, the
   placement's guardrails are checked (:func:`service.placements.guardrails.check`); an experiment
   that fell back to control is checked at once, on that search. The control's
   counts are gathered in memory and written at most every second (no Redis call per
   control search); an experiment's go with its impression's write.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

from rollout import call_counts
from rollout.assignment import assign
from service.errors import BadGateway
from service.placements import control_pages, guardrails, splits
from service.placements.operations import PlacementCache, View
from service.rankers.client import RankerFailure
from service.runtime import Runtime
from service.search import outage
from service.search import serve as searching
from service.search.ranker_health import SearchTiming
from service.store.client import STORE_ERRORS
from service.store.placements import GUARD_PREFIX

log = logging.getLogger("rankduel.search")
_RNG = random.Random()
#: how often a process reads every placement's view (what an outage's searches serve)
REFRESH_S = 10.0


def cache(rt: Runtime) -> PlacementCache:
    """The process's placement views (kept on its runtime)."""
    if rt.placements is None:
        rt.placements = PlacementCache(rt.store, rt.config.state_max_age_ms / 1e3)
        # every placement's view kept fresh, for the searches of an outage
        outage.watch(rt).every(REFRESH_S, rt.placements.refresh)
    return rt.placements


def search(rt: Runtime, name: str, q: str, k: int, user: str | None,
           timing: SearchTiming, segments: dict[str, str] | None = None) -> dict[str, Any]:
    """Serve one search of placement ``name`` (module docstring); ``segments`` go with
    an experiment's search (:mod:`service.segments.dimensions`)."""
    watch = outage.watch(rt)
    if not watch.up():  # the state store is down or slow: the control's list, no Redis
        return _degraded(rt, name, q, k, user, timing)
    try:
        view = cache(rt).get(name)
    except STORE_ERRORS as exc:
        watch.failed(exc)
        return _degraded(rt, name, q, k, user, timing)
    exp_id = assign(view.ranges, view.salt, user, _RNG) if view.ranges else None
    out = None
    if exp_id is not None:
        calls: list[call_counts.Call] = []
        try:
            out = searching.search(rt, exp_id, q, k, user, timing, calls, segments)
            out["placement"] = name
        except STORE_ERRORS as exc:  # rankduel's store died halfway: the control
            watch.failed(exc)
            return _degraded(rt, name, q, k, user, timing)
        except Exception as exc:  # the experiment cannot serve: the control's list
            log.debug("placement %s: experiment %s fell back to control: %s", name,
                      exp_id, exc)
            if calls:
                rt.store.placements.count_guard(exp_id, call_counts.fields(calls, GUARD_PREFIX))
                # a failing experiment is checked at once: it trips on the search that
                # reaches its threshold (bounded: once paused it takes no searches)
                if guardrails.check(rt.store, name, [exp_id], rt.queue):
                    cache(rt).forget(name)
    if out is None:
        try:
            out = control(rt, view, q, k, user, timing)
        except STORE_ERRORS as exc:  # the control's counts could not be written
            watch.failed(exc)
            return _degraded(rt, name, q, k, user, timing)
    splits.count(rt, view, out["experiment"] or "control", user)  # the SRM check's counts
    _maybe_check(rt, view)
    return out


def _degraded(rt: Runtime, name: str, q: str, k: int, user: str | None,
              timing: SearchTiming) -> dict[str, Any]:
    """The control's list from the process's last view of the placement, while the
    store is down (:func:`service.search.outage.control_answer`); 503 for a placement
    this process has never seen."""
    view = cache(rt).last(name)
    if view is None:
        raise outage.unavailable(f"placement {name!r} is not known to this process yet")
    return outage.control_answer(rt, name, view.control, q, k, user, timing)


def control(rt: Runtime, view: View, q: str, k: int, user: str | None,
            timing: SearchTiming) -> dict[str, Any]:
    """The control ranker's list, unchanged; 502 naming it when it fails."""
    [res], waited = rt.rankers.fetch_timed([view.control], q, k, experiment="", user=user)
    timing.rankers_s += waited
    calls: list[call_counts.Call] = []
    if isinstance(res, RankerFailure):
        call_counts.tally(calls, [], [view.control.name], waited)
        _count_control(rt, view, call_counts.fields(calls))
        raise BadGateway(f"the control ranker {view.control.name!r} of placement "
                         f"{view.name!r} did not answer ({res.reason}); rankduel itself is "
                         f"up")
    call_counts.tally(calls, [(None, view.control, res)], [], waited)
    counts = call_counts.fields(calls)
    page_token, page_field = control_pages.new_page(rt.secret, view.name,
                                                    rt.config.inactivity_s)
    counts[page_field] = 1  # the page, for the abandonment guardrail
    _count_control(rt, view, counts)
    results = []
    for rank, item in enumerate(res[:k], start=1):
        results.append({**item, "rank": rank})
    return {"impression_id": None, "token": None, "experiment": None,
            "placement": view.name, "rankers": [view.control.name], "results": results,
            "page_token": page_token}


#: the longest a process keeps the control's counts before writing them
CONTROL_FLUSH_S = 1.0


def _count_control(rt: Runtime, view: View, counts: dict[str, int]) -> None:
    """Add the control's counts in memory and write them at most every
    :data:`CONTROL_FLUSH_S` (or ``guardrail_interval_s`` if shorter): a control search
    costs no Redis call of its own; a process that dies loses at most that long of
    counts."""
    with view.count_lock:
        for f, n in counts.items():
            view.unsent[f] = view.unsent.get(f, 0) + n
        now = time.monotonic()
        if now - view.sent_at < min(CONTROL_FLUSH_S, rt.config.guardrail_interval_s):
            return
        unsent, view.unsent, view.sent_at = view.unsent, {}, now
    rt.store.placements.count_control(view.name, unsent)


def _maybe_check(rt: Runtime, view: View) -> None:
    """The placement's guardrails, at most every ``guardrail_interval_s`` here."""
    now = time.monotonic()
    if not view.running or now - view.checked_at < rt.config.guardrail_interval_s:
        return
    if not view.lock.acquire(blocking=False):
        return  # another thread of this process is checking
    try:
        view.checked_at = now
        if guardrails.check(rt.store, view.name, view.running, rt.queue):
            cache(rt).forget(view.name)
    except STORE_ERRORS:
        log.warning("placement %s: guardrails not checked", view.name, exc_info=True)
    finally:
        view.lock.release()
