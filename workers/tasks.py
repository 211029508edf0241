"""Celery tasks: thin and idempotent.

``rankduel.drain(exp_id, token)`` credits an experiment's due impressions (closed by
``/impressions/ID/end``, or idle for ``inactivity_s``) in batches of ``credit_batch``. A
batch is: claim due impressions with a lease (:meth:`service.store.Store.claim`), read
them with their clicks, apply the pure credit step (:func:`service.credit.apply`, which
turns clicks into outcomes), and commit the outcomes with every impression's
``credited`` mark in one Lua script on the experiment's shard
(:meth:`~service.store.Store.commit_credit`); an outcome that may change the policy's
structure is decided by the policy's own ``update()`` in one transaction
(:meth:`~service.store.Store.resolve_hold`). The design is argued in
:mod:`service.credit`.

A drain holds a lease in the experiment's drain set (``token``; TTL ``credit_retry_s``,
refreshed per batch). ``/end`` queues a drain only when none holds a lease; a drain that
claims a full batch queues one more, up to ``credit_parallelism`` per experiment, so a
backlog is credited by as many workers as there are, each on its own impressions. If a
worker dies mid-drain its lease and its impressions' claims expire, the next sweep queues
a new drain, and the broker redelivers the unacknowledged task (``acks_late``). Running a
drain twice, or after a crash at any point, is a no-op or a clean redo.

``rankduel.credit_impression(imp_id)`` credits one impression the same way (replays,
manual re-queues).

``rankduel.sweep()`` (every ``sweep_interval_s``, published by a timer in the main process
of a worker that sweeps, :mod:`workers.schedule`) queues a drain for every experiment
with due impressions and no drain lease held. Redis, not the broker, is the source of
truth for what remains to credit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

import redis
from celery import shared_task

from bandits.base import DuelingBandit
from service import credit, metrics
from service.queue import CREDIT_IMPRESSION, DRAIN, JUDGING_APPLY, SWEEP
from service.redis_client import connect_state
from service.snapshot import ExperimentMissing, Snapshot
from service.store import Contention, Store
from workers.celery_app import config

log = logging.getLogger("rankduel.worker")


@lru_cache(maxsize=1)
def _store() -> Store:
    """This process's store (built after the pool forks, once)."""
    client = connect_state(config, socket_timeout=10, socket_connect_timeout=5,
                           health_check_interval=30)
    return Store(client)


@dataclass
class View:
    """What a worker needs of an experiment's policy to credit it without updating it:
    which rankers are retired, the batches (for the guard), at structure version ``sv``."""

    sv: int
    bandit: DuelingBandit
    names: dict[int, str]
    dwell_unsatisfied_s: float | None = None  # the experiment's dwell rule


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

    def drop(self, exp_id: str) -> None:
        with self._lock:
            self._views.pop(exp_id, None)


_views = Views(config.state_cache_size)


def _decide(snap: Snapshot, ids: list[str],
            imps: list[credit.Impression | None]) -> credit.Credit:
    """A held impression and the rest of its batch: the policy's own ``update()`` on the
    current state, in order."""
    return credit.apply(snap.bandit, imps, ids=ids, t=snap.selections or 0,
                        names=snap.names, update=True,
                        dwell_unsatisfied_s=snap.meta.get("dwell_unsatisfied_s"))


def credit_batch(store: Store, exp_id: str, imp_ids: list[str], t: int) -> dict[str, dict]:
    """Credit ``imp_ids`` of ``exp_id`` (``t``: its selection count, read at the claim or
    later); per impression credited (or found missing or credited before) its result.
    An impression that got a click since it was read is left pending."""
    results: dict[str, dict] = {}
    todo = list(imp_ids)
    for _round in range(2 * len(todo) + 20):
        try:
            view = _views.get(store, exp_id)
        except ExperimentMissing:
            results.update({i: {"status": "missing"} for i in todo})
            break
        imps = store.read_impressions(exp_id, todo)
        plan = credit.apply(view.bandit, imps, ids=todo, t=t, names=view.names, update=False,
                            dwell_unsatisfied_s=view.dwell_unsatisfied_s)
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
            _views.drop(exp_id)
            continue
        # held by this batch or by another: decide that impression and the rest of ours
        rest = [i for i in todo if i not in done.codes]
        try:
            resolved = store.resolve_hold(exp_id, _decide, more=rest) or {}
        except ExperimentMissing:  # deleted meanwhile: nothing left to credit
            results.update({i: {"status": "missing"} for i in todo if i not in done.codes})
            break
        results.update(resolved)
        todo = [i for i in todo if i not in done.codes and i not in resolved]
        if resolved:
            _views.drop(exp_id)
        if not todo:
            break
    else:
        raise Contention(f"credit of {len(todo)} impressions of {exp_id} did not settle")
    _observe(results)
    return results


def _observe(results: dict) -> None:
    now = time.time()
    statuses: dict[str, int] = {}
    for result in results.values():
        statuses[result["status"]] = statuses.get(result["status"], 0) + 1
        if result.get("created"):
            metrics.CREDIT_LAG.observe(max(now - result["created"], 0.0))
    for status, n in statuses.items():  # one increment per status and batch
        metrics.CREDIT_TASKS.labels(status).inc(n)


#: what a task retries with backoff: Redis unreachable, a cluster shard down or moving
#: (a master restarting, a failover), an optimistic transaction that kept losing
TRANSIENT = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterDownError,
             redis.exceptions.TryAgainError, redis.exceptions.SlotNotCoveredError)

RETRY = dict(
    acks_late=True,
    autoretry_for=(*TRANSIENT, Contention),
    retry_backoff=0.5,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=12,
)


@shared_task(name=CREDIT_IMPRESSION, **RETRY)
def credit_impression(imp_id: str) -> str:
    """Close impression ``imp_id`` and apply its outcome to its experiment, once."""
    store = _store()
    exp_id = store.experiment_of(imp_id)
    if exp_id is None:
        _observe({imp_id: {"status": "missing"}})
        return "missing"
    results = credit_batch(store, exp_id, [imp_id], store.selections(exp_id))
    return results.get(imp_id, {"status": "pending"})["status"]


@shared_task(name=DRAIN, **RETRY)
def drain(exp_id: str, token: str | None = None) -> int:
    """Credit due impressions of ``exp_id``, a batch per script, while any are due;
    return how many. ``token`` is the drain lease taken for this task (None: take one).

    For a deleted experiment it removes what a request running during the deletion left
    (:meth:`Store.purge_orphan`) and returns 0 at once: no credit, no retry."""
    store = _store()
    purged = store.purge_orphan(exp_id)
    if purged is not None:
        if purged:
            log.info("experiment %s is deleted: %d keys it left removed", exp_id, purged)
        return 0
    ttl = config.credit_retry_s
    limit = config.credit_parallelism
    if token is None:
        token = store.take_drain(exp_id, ttl, limit=limit)
        if token is None:
            return 0  # as many drains as allowed already work on it
    else:
        store.refresh_drain(exp_id, token, ttl)
    done = 0
    while True:
        t, ids = store.claim(exp_id, config.credit_batch, lease_s=ttl)
        if not ids:
            store.release_drain(exp_id, token)
            # an /end between our claim and the release saw our lease and queued nothing:
            # look once more, and keep draining if we can take a lease back
            if store.due(exp_id, 1) and store.take_drain(exp_id, ttl, token=token):
                continue
            return done
        if len(ids) == config.credit_batch:  # a backlog: let one more drain help
            more = store.take_drain(exp_id, ttl, limit=limit)
            if more is not None:
                drain.delay(exp_id, more)
        credit_batch(store, exp_id, ids, t)
        store.refresh_drain(exp_id, token, ttl)
        done += len(ids)


@shared_task(
    name=SWEEP,
    acks_late=True,
    autoretry_for=TRANSIENT,
    retry_backoff=1,
    max_retries=3,
)
def sweep() -> int:
    """Queue a drain for each experiment with due impressions and no drain in flight.

    Reads the experiments the due index lists, and every experiment once per
    ``credit_retry_s`` (:meth:`Store.experiments_with_due`)."""
    store = _store()
    queued = 0
    full = store.take_full_sweep(config.credit_retry_s)
    for exp_id in store.experiments_with_due(full=full):
        token = store.take_drain(exp_id, config.credit_retry_s)
        if token is not None:
            drain.delay(exp_id, token)
            queued += 1
    if queued:
        log.debug("sweep queued %d drains", queued)
    from service.judging import Campaigns

    for cid in Campaigns(store).with_submitted():  # a judging_apply lost on the way
        judging_apply.delay(cid)
    return queued


@shared_task(name=JUDGING_APPLY, **RETRY)
def judging_apply(campaign_id: str) -> int:
    """Apply the submitted tasks of a judging campaign (service.judging), each once."""
    from service.judging import Campaigns

    return Campaigns(_store()).apply_submitted(campaign_id)
