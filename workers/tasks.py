"""Celery tasks: thin and idempotent.

``rankduel.drain(exp_id)`` credits an experiment's due impressions (closed by
``/impressions/ID/end``, or idle for ``inactivity_s``) in batches. A batch is one
optimistic transaction (:meth:`service.store.Store.transact`): read the snapshot, the
selection count and the impressions with their clicks, apply the pure credit step
(:func:`service.credit.apply`), and commit the new state with every impression's
``credited`` mark. A drain holds the experiment's drain flag (a Redis key with a TTL of
``credit_retry_s``, refreshed per batch) so that at most one is queued or running per
experiment; if a worker dies mid-drain, the flag expires and the next sweep queues a new
drain, and the broker redelivers the unacknowledged task (``acks_late``). Running a drain
twice, or after a crash at any point, is a no-op or a clean redo.

``rankduel.credit_impression(imp_id)`` credits one impression the same way (replays,
manual re-queues).

``rankduel.sweep()`` (every ``sweep_interval_s``, from the worker's embedded beat) queues a
drain for every experiment with due impressions whose drain flag is free. Redis, not the
broker, is the source of truth for what remains to credit.
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache

import redis
from celery import shared_task

from service import credit, metrics
from service.queue import CREDIT_IMPRESSION, DRAIN, SWEEP
from service.store import Contention, CreditInputs, Store
from workers.celery_app import config

log = logging.getLogger("rankduel.worker")

#: impressions credited per transaction
BATCH = 200


@lru_cache(maxsize=1)
def _store() -> Store:
    """This process's store (built after the pool forks, once)."""
    client = redis.Redis.from_url(config.redis_url, socket_timeout=10, socket_connect_timeout=5,
                                  health_check_interval=30)
    return Store(client)


def credit_batch(store: Store, exp_id: str, imp_ids: list[str]) -> dict[str, dict]:
    """Credit ``imp_ids`` of ``exp_id`` in one transaction; per impression its result."""

    def write(inputs: CreditInputs, pipe) -> dict[str, dict]:
        snap = inputs.snapshot
        result = credit.apply(snap.bandit, inputs.impressions, ids=inputs.ids, t=inputs.t,
                              names=snap.names)
        store.write_credit(pipe, inputs, result)
        return result.results

    def read() -> CreditInputs:
        return store.read_credit(exp_id, imp_ids)

    results = store.transact(store.credit_watch(exp_id, imp_ids), read, write,
                             on_conflict=lambda: store.count_conflict(exp_id))
    _observe(results)
    return results


def _observe(results: dict) -> None:
    now = time.time()
    for result in results.values():
        metrics.CREDIT_TASKS.labels(result["status"]).inc()
        if result.get("created"):
            metrics.CREDIT_LAG.observe(max(now - result["created"], 0.0))


RETRY = dict(
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError, Contention),
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
    return credit_batch(store, exp_id, [imp_id])[imp_id]["status"]


@shared_task(name=DRAIN, **RETRY)
def drain(exp_id: str) -> int:
    """Credit every due impression of ``exp_id``, a batch per transaction; return how many."""
    store = _store()
    ttl = config.credit_retry_s
    done = 0
    while True:
        ids = store.due(exp_id, BATCH)
        if not ids:
            store.release_drain(exp_id)
            # an /end between our scan and the release saw the flag and queued nothing:
            # look once more, and keep draining if we can take the flag back
            if store.due(exp_id, 1) and store.take_drain(exp_id, ttl):
                continue
            return done
        store.refresh_drain(exp_id, ttl)
        credit_batch(store, exp_id, ids)
        done += len(ids)


@shared_task(
    name=SWEEP,
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError),
    retry_backoff=1,
    max_retries=3,
)
def sweep() -> int:
    """Queue a drain for each experiment with due impressions and no drain in flight."""
    store = _store()
    queued = 0
    for exp_id in store.experiments_with_due():
        if store.take_drain(exp_id, config.credit_retry_s):
            drain.delay(exp_id)
            queued += 1
    if queued:
        log.info("sweep queued %d drains", queued)
    return queued
