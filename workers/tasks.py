"""Celery tasks: thin and idempotent.

``rankduel.drain(exp_id)`` credits an experiment's due impressions (closed by
``/impressions/ID/end``, or idle for ``inactivity_s``) in batches: for each batch it reads
the impressions and their clicks, calls the pure ``interleaving.credit`` and
``bandit.update``, and commits the new snapshot together with every impression's
``credited`` mark in one Redis transaction (:meth:`service.store.Store.credit_batch`).
A drain holds the experiment's drain flag (a Redis key with a TTL of ``credit_retry_s``,
refreshed per batch) so that at most one is queued or running per experiment; if a worker
dies mid-drain, the flag expires and the next sweep queues a new drain, and the broker
redelivers the unacknowledged task (``acks_late``). Running a drain twice, or after a
crash at any point, is a no-op or a clean redo.

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

from service import metrics
from service.config import Config, load_config
from service.store import Store

log = logging.getLogger("rankduel.worker")

#: impressions credited per transaction
BATCH = 200


@lru_cache(maxsize=1)
def _runtime() -> tuple[Config, Store]:
    config = load_config()
    client = redis.Redis.from_url(config.redis_url, socket_timeout=10, socket_connect_timeout=5,
                                  health_check_interval=30)
    return config, Store(client)


def _credit(record, clicked):
    import interleaving

    return interleaving.credit(record, clicked)


def _observe(results: dict) -> None:
    now = time.time()
    for result in results.values():
        metrics.CREDIT_TASKS.labels(result["status"]).inc()
        if result.get("created"):
            metrics.CREDIT_LAG.observe(max(now - result["created"], 0.0))


RETRY = dict(
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError, RuntimeError),
    retry_backoff=0.5,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=12,
)


@shared_task(name="rankduel.credit_impression", **RETRY)
def credit_impression(imp_id: str) -> str:
    """Close impression ``imp_id`` and apply its outcome to its experiment, once."""
    config, store = _runtime()
    result = store.credit_impression(imp_id, _credit, delay_s=config.credit_delay_ms / 1000.0)
    _observe({imp_id: result})
    return result["status"]


@shared_task(name="rankduel.drain", **RETRY)
def drain(exp_id: str) -> int:
    """Credit every due impression of ``exp_id``, a batch per transaction; return how many."""
    config, store = _runtime()
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
        results = store.credit_batch(exp_id, ids, _credit,
                                     delay_s=config.credit_delay_ms / 1000.0)
        _observe(results)
        done += len(ids)


@shared_task(
    name="rankduel.sweep",
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError),
    retry_backoff=1,
    max_retries=3,
)
def sweep() -> int:
    """Queue a drain for each experiment with due impressions and no drain in flight."""
    config, store = _runtime()
    queued = 0
    for exp_id in store.experiments_with_due():
        if store.take_drain(exp_id, config.credit_retry_s):
            drain.delay(exp_id)
            queued += 1
    if queued:
        log.info("sweep queued %d drains", queued)
    return queued
