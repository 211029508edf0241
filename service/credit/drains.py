"""Drains (:mod:`service.credit`, steps 1 to 3): the drain task's loop over an experiment's
due impressions (:class:`Crediting`), its lease and heartbeat (:class:`Lease`), the
follow-up drain of an idle impression and the sweep. Each batch goes to
:func:`service.credit.protocol.credit_batch`; the Celery tasks (:mod:`workers.tasks`) are
thin wrappers over :class:`Crediting`.
"""

from __future__ import annotations

import contextlib
import logging
import threading

from service.credit import outcome_events, protocol
from service.queue import TaskQueue
from service.store import Store
from service.store.client import STORE_ERRORS
from service.store.keys import OUTCOME_MEMBER

log = logging.getLogger("rankduel.worker")


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
            self.store.drains.refresh_drain(self.exp_id, self.token, self.ttl)
            if self.claimed:
                self.store.drains.extend_claims(self.exp_id, self.claimed, self.ttl)

    def release(self) -> None:
        """Give the lease back; the heartbeat renews nothing after this."""
        with self._lock:
            self.held = False
            self.store.drains.release_drain(self.exp_id, self.token)

    def take_back(self) -> bool:
        """Take the released lease again if no drain holds one; True if taken."""
        with self._lock:
            self.held = self.store.drains.take_drain(self.exp_id, self.ttl,
                                                     token=self.token) is not None
            return self.held

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            # Redis away: the drain itself fails and retries, or its lease lapses
            with contextlib.suppress(*STORE_ERRORS):
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
        self.views = protocol.Views(cache_size)

    def credit_batch(self, exp_id: str, imp_ids: list[str], t: int) -> dict[str, dict]:
        """Credit a claimed batch: its impressions by :func:`protocol.credit_batch`, its
        outcome events (members ``~<digest>``) by
        :func:`~service.credit.outcome_events.credit_events`."""
        events = [i for i in imp_ids if i.startswith(OUTCOME_MEMBER)]
        if not events:
            return protocol.credit_batch(self.store, exp_id, imp_ids, t, self.views)
        imps = [i for i in imp_ids if not i.startswith(OUTCOME_MEMBER)]
        out = protocol.credit_batch(self.store, exp_id, imps, t, self.views) if imps else {}
        out.update(outcome_events.credit_events(self.store, exp_id, events))
        return out

    def credit_impression(self, imp_id: str) -> str:
        """Close impression ``imp_id`` and apply its outcome to its experiment, once;
        its status."""
        exp_id = self.store.impressions.experiment_of(imp_id)
        if exp_id is None:
            protocol.observe({imp_id: {"status": "missing"}})
            return "missing"
        results = self.credit_batch(exp_id, [imp_id], self.store.drains.selections(exp_id))
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
        left (``store.experiments.purge_orphan``) and returns 0 at once."""
        store, ttl = self.store, self.lease_s
        purged = store.experiments.purge_orphan(exp_id)
        if purged is not None:
            if purged:
                log.info("experiment %s is deleted: %d keys it left removed", exp_id, purged)
            return 0
        token = store.drains.take_drain(exp_id, ttl, limit=self.parallelism, token=token)
        if token is None:
            return 0  # as many drains as allowed already work on it
        done = 0
        with Lease(store, exp_id, token, ttl) as lease:
            while True:
                t, ids = store.drains.claim(exp_id, self.batch, lease_s=ttl)
                lease.claimed = ids
                if not ids:
                    lease.release()
                    # an /end between our claim and the release saw our lease and queued
                    # nothing, and idle impressions fall due all the time: look once
                    # more, and keep draining if we can take a lease back
                    at = store.drains.next_due(exp_id)
                    if at is not None and at <= store.clock() and lease.take_back():
                        continue
                    self._follow(exp_id, at)
                    return done
                if len(ids) == self.batch:  # a backlog: let one more drain help
                    more = store.drains.take_drain(exp_id, ttl, limit=self.parallelism)
                    if more is not None and not self.queue.drain(exp_id, more):
                        store.drains.release_drain(exp_id, more)
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
        if delay <= self.follow_s and self.store.drains.take_follow(exp_id,
                                                                    max(delay, FOLLOW_LAG_S)):
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
        full = store.drains.take_full_sweep(self.full_sweep_s)
        for exp_id in store.drains.experiments_with_due(full=full):
            token = store.drains.take_drain(exp_id, self.lease_s)
            if token is None:
                continue
            if self.queue.drain(exp_id, token):
                queued += 1
            else:
                store.drains.release_drain(exp_id, token)
        if queued:
            log.debug("sweep queued %d drains", queued)
        from service.campaigns.operations import Campaigns

        for cid in Campaigns(store).with_submitted():  # a judging_apply lost on the way
            self.queue.judging_apply(cid)
        return queued
