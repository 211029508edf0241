"""One batch of the credit protocol (:mod:`service.credit`, steps 4 to 7): read the
impressions, the pure step against a cached :class:`View` of the policy, the credit
script, and a held outcome decided by the policy's own ``update()``
(:func:`resolve_hold`). Storage calls are plain reads and writes of :mod:`service.store`;
every decision is made here.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import redis

from bandits.base import RETIRED, DuelingBandit
from service import metrics
from service.credit import step as credit
from service.credit.guard import Guard
from service.outcomes.declared import CLICK, learns_clicks
from service.store import MAX_ATTEMPTS, Contention, Store, audit_entry
from service.store.credits import Entry
from service.store.records import Impression
from service.store.snapshot import ExperimentMissing, encode_structure
from service.webhooks import outbox, verdicts

log = logging.getLogger("rankduel.worker")


@dataclass
class View:
    """What a worker needs of an experiment's policy to credit it without updating it:
    which rankers are retired, the batches (for the guard), at structure version ``sv``."""

    sv: int
    bandit: DuelingBandit
    names: dict[int, str]
    dwell_unsatisfied_s: float | None = None  # the experiment's dwell rule
    #: False when the policy learns from another metric (``primary``): the clicks then
    #: go to their own W, with no guard (:func:`service.outcomes.declared.learns_clicks`)
    learns_clicks: bool = True

    def plan_key(self) -> tuple:
        """What :func:`service.credit.step.apply` (``update=False``) reads of the view: the
        arms, which are retired, the dwell rule. A plan made with an equal key holds."""
        retired = np.flatnonzero(self.bandit.status == RETIRED)
        return self.bandit.K, retired.tobytes(), self.dwell_unsatisfied_s


class Views:
    """This process's views by experiment, least recently used dropped beyond ``size``;
    a view is re-read when the credit script reports that the structure moved."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._views: OrderedDict[str, View] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: Store, exp_id: str) -> View:
        with self._lock:
            view = self._views.get(exp_id)
            if view is not None:
                self._views.move_to_end(exp_id)
                return view
        snap = store.experiments.snapshot(exp_id)
        view = View(snap.sv, snap.bandit, snap.names, snap.meta.get("dwell_unsatisfied_s"),
                    learns_clicks(snap.meta))
        with self._lock:
            self._views[exp_id] = view
            while len(self._views) > self.size:
                self._views.popitem(last=False)
        return view

    def put(self, exp_id: str, view: View) -> None:
        """Cache ``view`` (a policy this process just wrote), unless a view of a later
        structure is cached already."""
        with self._lock:
            old = self._views.get(exp_id)
            if old is None or old.sv <= view.sv:
                self._views[exp_id] = view
                self._views.move_to_end(exp_id)
            while len(self._views) > self.size:
                self._views.popitem(last=False)

    def drop(self, exp_id: str) -> None:
        with self._lock:
            self._views.pop(exp_id, None)


#: the views of callers that bring none (tests, scripts)
_DEFAULT_VIEWS = Views(64)


@dataclass
class Resolved:
    """What deciding a hold did: per impression decided its result, and the policy as
    the decision left it (``view``: its structure at the new ``sv``, for the caller's
    cache, so the credit script can go on without reading the snapshot again)."""

    results: dict[str, dict]
    view: View


def resolve_hold(store: Store, exp_id: str, more: Sequence[str] = (),
                 held: str | None = None) -> Resolved | None:
    """Decide the impression that holds ``exp_id``, if any, then the impressions ``more``
    (in order): the policy's own ``update()`` on the current state at the global ``t``,
    in one optimistic transaction that commits ``W``, ``n``, the structure, the marks,
    counters and audit and clears the hold. While the hold is set no credit script runs,
    so the held outcome is decided at exactly its place in the shard's order.
    :func:`credit_batch` passes ``more`` (the rest of its batch) only for a policy none
    of whose outcomes commutes (``serial_updates``), where it saves a round per outcome;
    for the others the rest goes back to the credit script, which adds it to ``W`` in
    parallel. Returns what it decided, or None when nothing was held (or another worker
    resolved it meanwhile). ``held``: the held impression as the credit script named it
    (saves reading it: the transaction checks it is still the hold)."""
    held = held or store.credits.hold(exp_id)
    if not held:
        return None
    ids = [held, *(i for i in dict.fromkeys(more) if i != held)]
    for _attempt in range(MAX_ATTEMPTS):
        with store.pipeline(transaction=True) as pipe:
            try:
                store.credits.watch_hold(pipe, exp_id, ids)
                snap = store.experiments.snapshot(exp_id, full=True)
                if snap.hold != held:
                    return None  # resolved by another worker meanwhile
                imps = store.credits.read_impressions(exp_id, ids)
                bandit = snap.bandit
                # the stored structure is the policy's own encoding (decoding and encoding
                # again gives it back: tests/unit/test_structure_round_trip.py), so the
                # hold compares with it instead of encoding the policy before update()
                before = snap.state_json
                told = verdicts.verdicts(bandit)  # before: the webhooks tell changes
                result = credit.apply(bandit, imps, ids=ids, t=snap.selections or 0,
                                      names=snap.names, update=True,
                                      dwell_unsatisfied_s=snap.meta.get("dwell_unsatisfied_s"))
                pipe.multi()
                moved = _write_resolution(store, pipe, exp_id, bandit, result, ids,
                                          structure_before=before,
                                          segments={i: m.segments for i, m in zip(
                                              ids, imps, strict=True) if m is not None})
                commit_and_tell(store, pipe, exp_id, snap, bandit, told, moved=moved,
                                decided_by=held)
                return Resolved(result.results,
                                View(snap.sv + int(moved), bandit, snap.names,
                                     snap.meta.get("dwell_unsatisfied_s"),
                                     learns_clicks(snap.meta)))
            except redis.WatchError:
                store.credits.count_conflict(exp_id)
    raise Contention(f"gave up resolving the hold of {exp_id} after {MAX_ATTEMPTS} attempts")


def commit_and_tell(store: Store, pipe, exp_id: str, snap, bandit: DuelingBandit,
                    told: dict, *, moved: bool, decided_by: str | None = None) -> None:
    """Execute a transaction that updated the policy, with the webhooks' verdict changes
    (``told``: the verdicts before) queued in it when the structure ``moved``, and wake
    the outbox when there are some. A newly certified champion is recorded with where it
    came: the comparisons, the searches and the impression (``decided_by``) then."""
    after = verdicts.verdicts(bandit) if moved else None
    changed = moved and verdicts.queue_changes(
        store, pipe, exp_id, told, after, names=snap.names,
        name=snap.meta.get("name"), comparisons=bandit.n_updates)
    if (after is not None and after.certified is not None
            and after.certified != (told.certified if told else None)):
        # where the verdict came: what the speed-up of GET /agreements compares with
        # the A/B test's sample (service.reports.speedup)
        # the searches: up to the deciding one (its selection count), else all so far
        step = store.impressions.selection_of(exp_id, decided_by) if decided_by else None
        store.experiments.write_certification(pipe, exp_id, {
            "champion": snap.names.get(after.certified, str(after.certified)),
            "comparisons": int(bandit.n_updates),
            "searches": max(step or int(snap.selections or 0), int(bandit.n_updates)),
            "error_rate": snap.meta.get("error_rate"), "ts": store.clock(),
            "impression": decided_by})
    pipe.execute()
    if changed:
        outbox.mark_due(store, exp_id)


def _write_resolution(store: Store, pipe, exp_id: str, bandit: DuelingBandit,
                      result: credit.Credit, ids: Sequence[str], *,
                      structure_before: str,
                      segments: dict[str, tuple[str, ...]] | None = None) -> bool:
    """Queue on ``pipe`` (in MULTI) what deciding a hold wrote: the policy's state if it
    changed (its structure, ``sv`` + 1, only if that differs from ``structure_before``),
    the audit events, each impression's mark, counters and per-segment counts
    (``segments``: id -> labels), the hold cleared. Whether the structure moved."""
    moved = False
    if result.changed:
        encoded = encode_structure(bandit)  # once: compared, then written if it moved
        moved = encoded["state"] != structure_before
        store.experiments.write_state(pipe, exp_id, bandit, structure=moved, encoded=encoded)
        store.experiments.add_audit(
            exp_id, *(audit_entry(store.clock(), **e) for e in result.audit), pipe=pipe)
    store.credits.write_marks(pipe, exp_id, result.results, result.counted, ids,
                              state_written=result.changed, segments=segments)
    return moved


def _entries(plan: credit.Credit, guard: Guard | None, ids: Sequence[str],
             imps: Sequence[Impression | None], *, learns_clicks: bool = True
             ) -> tuple[list[Entry], dict[str, str]]:
    """The batch as the credit script takes it: an :class:`Entry` per impression to
    credit, each outcome with the guard's code for its pair; and the impressions with
    nothing to credit (missing or credited before) by status. Without
    ``learns_clicks`` each mark names its outcomes the click metric's (the log's
    ``metric`` event, as :mod:`service.events.replay` reads it)."""
    entries, gone = [], {}
    for imp_id, imp in zip(ids, imps, strict=True):
        res = plan.results[imp_id]
        if imp is None or res["status"] in ("missing", "already"):
            gone[imp_id] = res["status"]
            continue
        outcomes = [(int(i), int(j), float(s), 0 if guard is None else guard.watches(i, j))
                    for i, j, s in res.get("outcomes", ())]
        mark = res if learns_clicks or "outcomes" not in res else {
            **res, "outcomes": {CLICK: res["outcomes"]}}
        entries.append(Entry(imp_id, json.dumps(mark), imp.reports,
                             tuple(plan.counted.get(imp_id, ())), tuple(outcomes)))
    return entries, gone


#: consecutive rounds in which other workers' holds kept a batch from progressing, after
#: which it goes through the serial path with the next hold (progress guaranteed)
STALL_ROUNDS = 8

#: impressions per credit script call. A script that meets a hold (its own batch's or,
#: with several workers, another's) sends back the rest of what it was given, which goes
#: again after the hold is decided: sending a claimed batch (``credit_batch``, 500) whole
#: re-sent the rest of it at every hold, and every other worker's whole batch at each of
#: them, so a policy that holds often (``recommended``: tens of holds per 6,000
#: impressions) spent most of its worker CPU re-encoding and re-sending, more with each
#: worker (BENCHMARKS.md, "Credit throughput"). A chunk bounds what one hold can make a
#: worker send again; a script call's fixed cost over 64 impressions is small.
CHUNK = 64


def credit_batch(store: Store, exp_id: str, imp_ids: list[str], t: int,
                 views: Views | None = None) -> dict[str, dict]:
    """Credit ``imp_ids`` of ``exp_id`` (``t``: its selection count, read at the claim or
    later); per impression credited (or found missing or credited before) its result.
    An impression that got a click since it was read is left pending.

    The batch goes to the credit script in chunks of :data:`CHUNK`, in order; when the
    script holds an outcome (this batch's or another's), that impression alone is decided
    by :func:`resolve_hold` and the rest goes back to the script, computed once per view
    (an impression's outcomes depend on the view only through which rankers are
    retired)."""
    views = _DEFAULT_VIEWS if views is None else views
    results: dict[str, dict] = {}
    todo = list(imp_ids)
    read: dict[str, Impression | None] = {}
    plan, planned = credit.Credit(), None  # the plan and View.plan_key it was made with
    reread = False
    stalled = 0
    for _round in range((STALL_ROUNDS + 2) * len(todo) + len(todo) // CHUNK + 20):
        try:
            view = views.get(store, exp_id)
        except ExperimentMissing:
            results.update({i: {"status": "missing"} for i in todo})
            break
        if not read:
            read = dict(zip(todo, store.credits.read_impressions(exp_id, todo), strict=True))
        key = view.plan_key()
        if planned != key:
            imps = [read[i] for i in todo]
            if _newer_than(imps, view.bandit.K) and not reread:
                reread = True
                # an impression of a ranker added since the view was read (the script
                # would refuse the batch for its sv anyway): read the view again
                views.drop(exp_id)
                continue
            plan = credit.apply(view.bandit, imps, ids=todo, t=t, names=view.names,
                                update=False, dwell_unsatisfied_s=view.dwell_unsatisfied_s)
            planned = key
        # clicks the policy does not learn from change no structure: no guard, no hold
        guard = Guard.of(view.bandit, t) if view.learns_clicks else None
        head = todo[:CHUNK]
        entries, gone = _entries(plan, guard, head, [read[i] for i in head],
                                 learns_clicks=view.learns_clicks)
        done = store.credits.commit_credit(
            exp_id, sv=view.sv, guard=None if guard is None else guard.script_arg(),
            entries=entries, gone=gone, target="" if view.learns_clicks else CLICK)
        for i, code in done.codes.items():
            if code == "ok":
                results[i] = plan.results[i]
            elif code in ("missing", "already"):
                results[i] = {"status": code}
        if done.status == "ok":
            todo = todo[len(head):]  # the chunk handled (a click since: left pending)
            stalled = 0
            if not todo:
                break
            continue
        if done.status == "missing":
            results.update({i: {"status": "missing"} for i in todo if i not in done.codes})
            break
        if done.status == "sv":  # an elimination, a merge or an operator changed it
            views.drop(exp_id)
            continue
        # held by this batch or by another: decide the held impression (and, for a
        # policy whose outcomes never commute, or after STALL_ROUNDS rounds without
        # progress, the rest of ours with it); the rest goes back to the script
        rest = [i for i in todo if i not in done.codes]
        serial = view.bandit.serial_updates or stalled >= STALL_ROUNDS
        if (done.status == "hold" and not serial and done.held
                and _wait_hold(store, exp_id, done.held)):
            stalled += 1  # its worker decided it: try the script again
            continue
        try:
            resolved = resolve_hold(store, exp_id, more=rest if serial else (),
                                    held=done.held or None)
        except ExperimentMissing:  # deleted meanwhile: nothing left to credit
            results.update({i: {"status": "missing"} for i in todo if i not in done.codes})
            break
        decided = {} if resolved is None else resolved.results
        results.update(decided)  # another batch's held impression too: counted here
        left = [i for i in todo if i not in done.codes and i not in decided]
        stalled = 0 if len(left) < len(todo) else stalled + 1
        todo = left
        if resolved is not None:
            views.put(exp_id, resolved.view)
        if not todo:
            break
    else:
        raise Contention(f"credit of {len(todo)} impressions of {exp_id} did not settle")
    observe(results)
    return results


#: how long a batch that meets another batch's hold waits for that batch's worker to
#: decide it (deciding it too would only duplicate the work and lose the race) before
#: deciding it itself (its worker may have died)
HOLD_WAIT_S = 0.25


def _wait_hold(store: Store, exp_id: str, held: str) -> bool:
    """Wait up to :data:`HOLD_WAIT_S` for the hold ``held`` of ``exp_id`` to be decided;
    whether it was."""
    deadline = time.monotonic() + HOLD_WAIT_S
    pause = 0.0005
    while time.monotonic() < deadline:
        time.sleep(pause)
        if store.credits.hold(exp_id) != held:
            return True
        pause = min(2 * pause, 0.008)
    return False


def _newer_than(imps: Sequence[Impression | None], k: int) -> bool:
    """Whether an impression names an arm beyond the ``k`` arms of a view."""
    return any(a >= k for imp in imps if imp is not None
               for a in (*imp.arms, *(x for f in imp.forfeits for x in f)))


def observe(results: dict[str, dict]) -> None:
    """Count a batch's results by status, and the click-to-credit lag of each."""
    now = time.time()
    statuses: dict[str, int] = {}
    for result in results.values():
        statuses[result["status"]] = statuses.get(result["status"], 0) + 1
        if result.get("created"):
            metrics.CREDIT_LAG.observe(max(now - result["created"], 0.0))
    for status, n in statuses.items():  # one increment per status and batch
        metrics.CREDIT_TASKS.labels(status).inc(n)
