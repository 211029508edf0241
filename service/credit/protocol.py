"""The credit protocol: how a click reaches ``W``, in one place.

A batch of an experiment's impressions is credited in four steps:

1. **claim** due impressions with a lease (:meth:`Crediting.drain`, storage:
   :meth:`service.store.Store.claim`), so several drains credit one experiment without
   overlapping;
2. **read** them with their clicks (:meth:`~service.store.Store.read_impressions`);
3. the **pure credit step** (:func:`service.credit.step.apply` with ``update=False``) turns
   clicks into outcomes without touching the policy, against a cached :class:`View` of
   the policy's structure;
4. **commit** the outcomes with every impression's ``credited`` mark in one Lua script on
   the experiment's shard (:meth:`~service.store.Store.commit_credit`). Additions to
   ``W`` commute, so workers interleave freely; the script stops at an outcome that the
   policy declares may change its structure (the :class:`~service.credit.step.Guard` built
   from :meth:`bandits.base.DuelingBandit.volatility`) and records it as the
   experiment's hold.

A **held outcome** is decided here (:func:`resolve_hold`): the policy's own ``update()``
on the current state, in one optimistic transaction whose reads and writes are plain
storage operations (:meth:`~service.store.Store.read_hold`,
:meth:`~service.store.Store.write_resolution`). So eliminations happen at exactly the
comparison the serial ``update()`` gives. Only the held impression takes that path; the
rest of its batch goes back to the credit script against the policy the decision left
(which the deciding worker caches), so a policy with a structure credits in parallel
except at the few outcomes that may change it. (A policy none of whose outcomes commutes,
``serial_updates``, decides the rest of the batch in the same transaction.) The design
is argued in :mod:`service.credit.step`.

The Celery tasks (:mod:`workers.tasks`) are thin wrappers over :class:`Crediting`; the
store never calls back into this module.
"""

from __future__ import annotations

import contextlib
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
from service.queue import TaskQueue
from service.store import MAX_ATTEMPTS, Contention, Store
from service.store.snapshot import ExperimentMissing, encode_structure

log = logging.getLogger("rankduel.worker")


@dataclass
class View:
    """What a worker needs of an experiment's policy to credit it without updating it:
    which rankers are retired, the batches (for the guard), at structure version ``sv``."""

    sv: int
    bandit: DuelingBandit
    names: dict[int, str]
    dwell_unsatisfied_s: float | None = None  # the experiment's dwell rule

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
        snap = store.snapshot(exp_id)
        view = View(snap.sv, snap.bandit, snap.names, snap.meta.get("dwell_unsatisfied_s"))
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


def resolve_hold(store: Store, exp_id: str, more: Sequence[str] = ()) -> Resolved | None:
    """Decide the impression that holds ``exp_id``, if any, then the impressions ``more``
    (in order): the policy's own ``update()`` on the current state at the global ``t``,
    in one optimistic transaction that commits ``W``, ``n``, the structure, the marks,
    counters and audit and clears the hold. While the hold is set no credit script runs,
    so the held outcome is decided at exactly its place in the shard's order.
    :func:`credit_batch` passes ``more`` (the rest of its batch) only for a policy none
    of whose outcomes commutes (``serial_updates``), where it saves a round per outcome;
    for the others the rest goes back to the credit script, which adds it to ``W`` in
    parallel. Returns what it decided, or None when nothing was held (or another worker
    resolved it meanwhile)."""
    held = store.hold(exp_id)
    if not held:
        return None
    ids = [held, *(i for i in dict.fromkeys(more) if i != held)]
    for _attempt in range(MAX_ATTEMPTS):
        with store.pipeline(transaction=True) as pipe:
            try:
                snap, imps = store.read_hold(pipe, exp_id, held, ids)
                if snap.hold != held:
                    return None  # resolved by another worker meanwhile
                bandit = snap.bandit
                before = encode_structure(bandit)["state"]
                result = credit.apply(bandit, imps, ids=ids, t=snap.selections or 0,
                                      names=snap.names, update=True,
                                      dwell_unsatisfied_s=snap.meta.get("dwell_unsatisfied_s"))
                pipe.multi()
                moved = store.write_resolution(pipe, exp_id, bandit, result, ids,
                                               structure_before=before)
                pipe.execute()
                return Resolved(result.results,
                                View(snap.sv + int(moved), bandit, snap.names,
                                     snap.meta.get("dwell_unsatisfied_s")))
            except redis.WatchError:
                store.count_conflict(exp_id)
    raise Contention(f"gave up resolving the hold of {exp_id} after {MAX_ATTEMPTS} attempts")


#: consecutive rounds in which other workers' holds kept a batch from progressing, after
#: which it goes through the serial path with the next hold (progress guaranteed)
STALL_ROUNDS = 8


def credit_batch(store: Store, exp_id: str, imp_ids: list[str], t: int,
                 views: Views | None = None) -> dict[str, dict]:
    """Credit ``imp_ids`` of ``exp_id`` (``t``: its selection count, read at the claim or
    later); per impression credited (or found missing or credited before) its result.
    An impression that got a click since it was read is left pending.

    The batch goes to the credit script; when the script holds an outcome (this batch's
    or another's), that impression alone is decided by :func:`resolve_hold` and the rest
    goes back to the script, computed once per view (an impression's outcomes depend on
    the view only through which rankers are retired)."""
    views = _DEFAULT_VIEWS if views is None else views
    results: dict[str, dict] = {}
    todo = list(imp_ids)
    read: dict[str, credit.Impression | None] = {}
    plan, planned = credit.Credit(), None  # the plan and View.plan_key it was made with
    reread = False
    stalled = 0
    for _round in range((STALL_ROUNDS + 2) * len(todo) + 20):
        try:
            view = views.get(store, exp_id)
        except ExperimentMissing:
            results.update({i: {"status": "missing"} for i in todo})
            break
        if not read:
            read = dict(zip(todo, store.read_impressions(exp_id, todo), strict=True))
        imps = [read[i] for i in todo]
        key = view.plan_key()
        if planned != key:
            if _newer_than(imps, view.bandit.K) and not reread:
                reread = True
                # an impression of a ranker added since the view was read (the script
                # would refuse the batch for its sv anyway): read the view again
                views.drop(exp_id)
                continue
            plan = credit.apply(view.bandit, imps, ids=todo, t=t, names=view.names,
                                update=False, dwell_unsatisfied_s=view.dwell_unsatisfied_s)
            planned = key
        done = store.commit_credit(exp_id, sv=view.sv, guard=credit.Guard.of(view.bandit, t),
                                   ids=todo, impressions=imps, result=plan)
        for i, code in done.codes.items():
            if code == "ok":
                results[i] = plan.results[i]
            elif code in ("missing", "already"):
                results[i] = {"status": code}
        if done.status == "ok":
            break
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
            resolved = resolve_hold(store, exp_id, more=rest if serial else ())
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
        if store.hold(exp_id) != held:
            return True
        pause = min(2 * pause, 0.008)
    return False


def _newer_than(imps: Sequence[credit.Impression | None], k: int) -> bool:
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


class Lease:
    """A drain's heartbeat: while the drain works, a thread renews its drain lease and
    the claims of the batch in hand every third of ``ttl_s``.

    Leases are short (``drain_lease_s``, seconds) because a lease with no live drain
    behind it blocks the experiment until it expires: ``/end`` queues no drain and the
    sweep skips the experiment while one is held. A drain that was never queued (the
    broker away when ``/end`` published it), was rejected, or died with its worker stops
    renewing, and the next sweep after the lease runs out queues a new one, whatever
    ``credit_retry_s`` is. A drain renews its lease per batch as well, so a lease only
    lapses when the drain's process stops (or is starved for ``ttl_s``; a second drain
    then credits beside it, which the claims and credited marks make safe).
    """

    def __init__(self, store: Store, exp_id: str, token: str, ttl_s: float) -> None:
        self.store, self.exp_id, self.token, self.ttl = store, exp_id, token, ttl_s
        self.claimed: list[str] = []
        self.held = True
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Lease:
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name=f"lease-{self.exp_id}")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.ttl)

    def renew(self) -> None:
        """Extend the drain lease and the claims in hand by ``ttl_s`` from now."""
        with self._lock:
            if not self.held:
                return
            self.store.refresh_drain(self.exp_id, self.token, self.ttl)
            if self.claimed:
                self.store.extend_claims(self.exp_id, self.claimed, self.ttl)

    def release(self) -> None:
        """Give the lease back; the heartbeat renews nothing after this."""
        with self._lock:
            self.held = False
            self.store.release_drain(self.exp_id, self.token)

    def take_back(self) -> bool:
        """Take the released lease again if no drain holds one; True if taken."""
        with self._lock:
            self.held = self.store.take_drain(self.exp_id, self.ttl,
                                              token=self.token) is not None
            return self.held

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            # Redis away: the drain itself fails and retries, or its lease lapses
            with contextlib.suppress(redis.RedisError):
                self.renew()


#: how long after an impression falls due its follow-up drain runs (the clocks of the
#: worker and of Redis may differ by this much before the impression is seen as due)
FOLLOW_LAG_S = 0.05


class Crediting:
    """A worker process's crediting: its store, its views and where it queues more drains.

    ``batch``: impressions per claim; ``lease_s``: a drain lease's and a claim's TTL
    (``drain_lease_s``, renewed by the drain while it works: :class:`Lease`);
    ``full_sweep_s``: how often the sweep reads every experiment (``credit_retry_s``);
    ``follow_s``: a drain that leaves nothing due schedules the next one for the
    earliest pending impression if it is due within this long (``sweep_interval_s``; 0:
    never), so an idle impression is credited when it is due, not at the next sweep;
    ``parallelism``: drains per experiment at most."""

    def __init__(self, store: Store, queue: TaskQueue, *, batch: int, lease_s: float,
                 parallelism: int, cache_size: int, full_sweep_s: float | None = None,
                 follow_s: float = 0.0) -> None:
        self.follow_s = follow_s
        self.store = store
        self.queue = queue
        self.batch = batch
        self.lease_s = lease_s
        self.full_sweep_s = lease_s if full_sweep_s is None else full_sweep_s
        self.parallelism = parallelism
        self.views = Views(cache_size)

    def credit_batch(self, exp_id: str, imp_ids: list[str], t: int) -> dict[str, dict]:
        return credit_batch(self.store, exp_id, imp_ids, t, self.views)

    def credit_impression(self, imp_id: str) -> str:
        """Close impression ``imp_id`` and apply its outcome to its experiment, once;
        its status."""
        exp_id = self.store.experiment_of(imp_id)
        if exp_id is None:
            observe({imp_id: {"status": "missing"}})
            return "missing"
        results = self.credit_batch(exp_id, [imp_id], self.store.selections(exp_id))
        return results.get(imp_id, {"status": "pending"})["status"]

    def drain(self, exp_id: str, token: str | None = None) -> int:
        """Credit due impressions of ``exp_id``, a batch per script, while any are due;
        return how many. ``token`` is the drain lease taken for this drain (None: take
        one). A drain that claims a full batch queues one more, up to ``parallelism``.

        The lease is renewed while the drain works (:class:`Lease`). A drain that starts
        after its lease ran out (it waited in the broker longer than the lease) takes it
        again only if fewer than ``parallelism`` drains hold one; otherwise enough drains
        work on the experiment and it returns 0. A drain that fails (Redis or the broker
        away) leaves its lease to run out, so the sweep queues a new drain within seconds
        if the task's retry cannot be published.

        For a deleted experiment it removes what a request running during the deletion
        left (:meth:`Store.purge_orphan`) and returns 0 at once."""
        store, ttl = self.store, self.lease_s
        purged = store.purge_orphan(exp_id)
        if purged is not None:
            if purged:
                log.info("experiment %s is deleted: %d keys it left removed", exp_id, purged)
            return 0
        token = store.take_drain(exp_id, ttl, limit=self.parallelism, token=token)
        if token is None:
            return 0  # as many drains as allowed already work on it
        done = 0
        with Lease(store, exp_id, token, ttl) as lease:
            while True:
                t, ids = store.claim(exp_id, self.batch, lease_s=ttl)
                lease.claimed = ids
                if not ids:
                    lease.release()
                    # an /end between our claim and the release saw our lease and queued
                    # nothing, and idle impressions fall due all the time: look once
                    # more, and keep draining if we can take a lease back
                    at = store.next_due(exp_id)
                    if at is not None and at <= store.clock() and lease.take_back():
                        continue
                    self._follow(exp_id, at)
                    return done
                if len(ids) == self.batch:  # a backlog: let one more drain help
                    more = store.take_drain(exp_id, ttl, limit=self.parallelism)
                    if more is not None and not self.queue.drain(exp_id, more):
                        store.release_drain(exp_id, more)
                self.credit_batch(exp_id, ids, t)
                lease.claimed = []
                lease.renew()
                done += len(ids)

    def _follow(self, exp_id: str, at: float | None) -> None:
        """Schedule a drain for ``at``, when the earliest pending impression of ``exp_id``
        is due, if that is within ``follow_s`` (one scheduled drain per experiment at a
        time). An impression already due (it fell due after our last claim, and another
        drain's lease kept us from taking ours back) gets a drain at once: the chain of
        follow-up drains never breaks, so an idle impression is credited when it falls
        due, not at the next sweep."""
        if self.follow_s <= 0 or at is None:
            return
        delay = max(at - self.store.clock(), 0.0)
        if delay <= self.follow_s and self.store.take_follow(exp_id, max(delay, FOLLOW_LAG_S)):
            self.queue.drain_later(exp_id, delay + FOLLOW_LAG_S)

    def sweep(self) -> int:
        """Queue a drain for each experiment with due impressions and no drain in flight
        (the due index's, and every experiment once per ``full_sweep_s``), and an apply
        for each judging campaign with submitted tasks; how many drains.

        "No drain in flight" is "no live drain lease": a lease whose drain was never
        queued, was rejected or died is not renewed (:class:`Lease`), so it lapses within
        ``lease_s`` and the experiment is swept again. A drain that cannot be queued
        gives its lease back (the next sweep tries again)."""
        store = self.store
        queued = 0
        full = store.take_full_sweep(self.full_sweep_s)
        for exp_id in store.experiments_with_due(full=full):
            token = store.take_drain(exp_id, self.lease_s)
            if token is None:
                continue
            if self.queue.drain(exp_id, token):
                queued += 1
            else:
                store.release_drain(exp_id, token)
        if queued:
            log.debug("sweep queued %d drains", queued)
        from service.campaigns import Campaigns

        for cid in Campaigns(store).with_submitted():  # a judging_apply lost on the way
            self.queue.judging_apply(cid)
        return queued
