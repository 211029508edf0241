"""The Celery application of the workers: late acks, the periodic sweep.

Delivery is at least once: ``acks_late`` + ``task_reject_on_worker_lost`` put a task back
on the queue when the worker dies mid-task, and the broker redelivers an unacknowledged
task after ``visibility_timeout``. The tasks are idempotent (see :mod:`workers.tasks`), so
at-least-once delivery yields exactly-once effects.

The worker process resolves its configuration once, here (``config``); the tasks and
the readiness marker use it. ``celery -A workers.celery_app worker -B`` (what ``rankduel
worker`` runs) uses the module-level ``app``. Broker settings shared with the API's
producer come from :mod:`service.queue`.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from service.config import Config, load_config
from service.keys import WORKERS_READY
from service.queue import QUEUE, SWEEP, broker_settings
from service.redis_client import connect_state

config: Config = load_config()


def make_celery(cfg: Config) -> Celery:
    """The workers' Celery app for ``cfg``."""
    app = Celery("rankduel", include=["workers.tasks"])
    app.conf.update(
        broker_settings(cfg),
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=4,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        beat_schedule={"sweep-impressions": {"task": SWEEP, "schedule": cfg.sweep_interval_s}},
    )
    return app


app = make_celery(config)

# ---------------------------------------------------------------------- readiness marker
#: a Redis set of the pids of workers that are consuming (``rankduel demo`` and the tests
#: wait on it; a worker removes itself on a clean shutdown)
READY_KEY = WORKERS_READY


def _marker(add: bool) -> None:
    try:
        client = connect_state(config, socket_timeout=2)
        (client.sadd if add else client.srem)(READY_KEY, str(os.getpid()))
        client.close()
    except Exception:  # a marker is a convenience; never fail the worker for it
        pass


worker_ready.connect(lambda **_kw: _marker(True), weak=False)
worker_shutdown.connect(lambda **_kw: _marker(False), weak=False)

import workers.monitoring  # noqa: E402, F401 - task metrics and the worker's exporter

__all__ = ["QUEUE", "READY_KEY", "app", "config", "make_celery"]
