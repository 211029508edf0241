"""Celery tasks: thin and idempotent, each a few lines that call the credit package, as
Celery's task guide has them. What they do, and why running one twice or after a crash
is safe, is the protocol told in :mod:`service.credit`:

* ``rankduel.drain(exp_id, token)``: credit an experiment's due impressions
  (:meth:`service.credit.drains.Crediting.drain`);
* ``rankduel.credit_impression(imp_id)``: credit one impression the same way (replays,
  manual re-queues);
* ``rankduel.sweep()``: queue a drain for every experiment with due impressions and no
  drain lease held (published every ``sweep_interval_s`` by a timer in the main process
  of a worker that sweeps, :mod:`workers.schedule`);
* ``rankduel.judging_apply(campaign_id)``: apply a judging campaign's submitted tasks;
* ``rankduel.webhooks_deliver(exp_id)``: deliver an experiment's due webhook events
  (:func:`service.webhooks.delivery.run`), queued when an event is recorded and by the
  sweep.
"""

from __future__ import annotations

from functools import lru_cache

import redis
from celery import shared_task

from service.credit.drains import Crediting
from service.queue import (
    CREDIT_IMPRESSION,
    DRAIN,
    JUDGING_APPLY,
    SWEEP,
    WEBHOOKS_DELIVER,
    TaskQueue,
)
from service.store import Contention, Store
from service.store.client import connect_state
from workers.celery_app import app, config


@lru_cache(maxsize=1)
def _store() -> Store:
    """This process's store (built after the pool forks, once)."""
    client = connect_state(config, socket_timeout=10, socket_connect_timeout=5,
                           health_check_interval=30)
    return Store(client)


@lru_cache(maxsize=1)
def _crediting() -> Crediting:
    """This process's crediting: its store, its policy views, the worker's own app to
    queue more drains with."""
    return Crediting(_store(), TaskQueue(config, app=app), batch=config.credit_batch,
                     lease_s=config.drain_lease_s, full_sweep_s=config.credit_retry_s,
                     follow_s=config.sweep_interval_s,
                     parallelism=config.credit_parallelism,
                     cache_size=config.state_cache_size)


#: what a task retries with backoff: Redis unreachable, a cluster shard down or moving
#: (a master restarting, a failover), an optimistic transaction that kept losing
TRANSIENT = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterDownError,
             redis.exceptions.TryAgainError, redis.exceptions.SlotNotCoveredError,
             redis.exceptions.RedisClusterUnreachableError)

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
    return _crediting().credit_impression(imp_id)


@shared_task(name=DRAIN, **RETRY)
def drain(exp_id: str, token: str | None = None) -> int:
    """Credit due impressions of ``exp_id`` while any are due; how many
    (:meth:`service.credit.drains.Crediting.drain`)."""
    return _crediting().drain(exp_id, token)


@shared_task(name=SWEEP, acks_late=True, autoretry_for=TRANSIENT, retry_backoff=1,
             max_retries=3)
def sweep() -> int:
    """Queue a drain for each experiment with due impressions and no drain in flight
    (:meth:`service.credit.drains.Crediting.sweep`), then check the placements'
    guardrails (:func:`service.placements.guardrails.check_all`) and the webhooks' ramp
    steps and deliveries due (:func:`service.webhooks.sweep.sweep`), and once a minute
    trim what is older than ``retention_s`` (:mod:`service.store.retention`)."""
    from service.placements.guardrails import check_all
    from service.reports.splits import flagged_splits
    from service.webhooks.delivery import Settings
    from service.webhooks.sweep import sweep as webhooks_sweep

    queued = _crediting().sweep()
    check_all(_store(), inactivity_s=config.inactivity_s)
    webhooks_sweep(_store(), _crediting().queue, Settings.of(config).lease_s,
                   config.credit_retry_s, flagged=flagged_splits(_store()))
    _store().retention.trim_due(config.retention_s)  # the event logs and outboxes, by time
    return queued


@shared_task(name=JUDGING_APPLY, **RETRY)
def judging_apply(campaign_id: str) -> int:
    """Apply the submitted tasks of a judging campaign (service.campaigns.operations), each once."""
    from service.campaigns.operations import Campaigns

    return Campaigns(_store()).apply_submitted(campaign_id)


@shared_task(name=WEBHOOKS_DELIVER, **RETRY)
def webhooks_deliver(exp_id: str) -> int:
    """Deliver the due webhook events of ``exp_id`` to each hook, in order; how many
    (:func:`service.webhooks.delivery.run`)."""
    from service.rankers.allow_list import RankerPolicy
    from service.webhooks.delivery import Settings, run

    return run(_store(), exp_id, Settings.of(config), RankerPolicy(config.ranker_allow),
               _crediting().queue, config.sweep_interval_s)
