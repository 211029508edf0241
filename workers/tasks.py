"""Celery tasks: thin and idempotent.

``rankduel.credit_impression(imp_id)`` reads the impression and its clicks, calls the pure
``interleaving.credit`` and ``bandit.update``, and commits the new snapshot together with
the impression's ``credited`` mark in one Redis transaction
(:meth:`service.store.Store.credit_impression`). Running it twice, or after a crash at any
point, is a no-op or a clean redo.

``rankduel.sweep()`` (every ``sweep_interval_s``, from the worker's embedded beat) closes
impressions idle longer than ``inactivity_s`` and re-queues closed ones still uncredited
after ``credit_retry_s`` (a task lost with a dead worker): Redis, not the broker, is the
source of truth for what remains to credit.
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


@lru_cache(maxsize=1)
def _runtime() -> tuple[Config, Store]:
    config = load_config()
    client = redis.Redis.from_url(config.redis_url, socket_timeout=10, socket_connect_timeout=5,
                                  health_check_interval=30)
    return config, Store(client)


def _credit(record, clicked):
    import interleaving

    return interleaving.credit(record, clicked)


@shared_task(
    name="rankduel.credit_impression",
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError, RuntimeError),
    retry_backoff=0.5,
    retry_backoff_max=60,
    retry_jitter=True,
    max_retries=12,
)
def credit_impression(imp_id: str) -> str:
    """Close impression ``imp_id`` and apply its outcome to the experiment, once."""
    config, store = _runtime()
    result = store.credit_impression(imp_id, _credit, delay_s=config.credit_delay_ms / 1000.0)
    status = result["status"]
    metrics.CREDIT_TASKS.labels(status).inc()
    if "created" in result:
        metrics.CREDIT_LAG.observe(max(time.time() - result["created"], 0.0))
    return status


@shared_task(
    name="rankduel.sweep",
    acks_late=True,
    autoretry_for=(redis.ConnectionError, redis.TimeoutError),
    retry_backoff=1,
    max_retries=3,
)
def sweep(limit: int = 5000) -> int:
    """Queue the credit of every impression that is due; return how many."""
    config, store = _runtime()
    due = store.due_impressions(limit=limit, retry_s=config.credit_retry_s)
    for imp_id in due:
        credit_impression.delay(imp_id)
    if due:
        log.info("sweep queued %d impressions", len(due))
    return len(due)
