"""The Celery application: Redis as broker, late acks, the periodic sweep.

Delivery is at least once: ``acks_late`` + ``task_reject_on_worker_lost`` put a task back
on the queue when the worker dies mid-task, and the broker redelivers an unacknowledged
task after ``visibility_timeout``. The tasks are idempotent (see :mod:`workers.tasks`), so
at-least-once delivery yields exactly-once effects.

``celery -A workers.celery_app worker -B`` (what ``rankduel worker`` runs) uses the
module-level ``app``, configured from the environment.
"""

from __future__ import annotations

from celery import Celery

from service.config import Config, load_config

QUEUE = "rankduel"


def make_celery(config: Config | None = None) -> Celery:
    """A Celery app for ``config`` (default: from the environment)."""
    config = config or load_config()
    app = Celery("rankduel", broker=config.redis_url, include=["workers.tasks"])
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_ignore_result=True,
        task_default_queue=QUEUE,
        worker_prefetch_multiplier=4,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": config.visibility_timeout_s},
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        beat_schedule={
            "sweep-impressions": {"task": "rankduel.sweep", "schedule": config.sweep_interval_s},
        },
    )
    return app


app = make_celery()


# ---------------------------------------------------------------------- readiness marker
#: Redis set of the pids of workers that are consuming (``rankduel demo`` and the tests
#: wait on it; a worker removes itself on a clean shutdown)
READY_KEY = "rd:workers:ready"


def _marker(add: bool) -> None:
    import os

    import redis

    try:
        client = redis.Redis.from_url(load_config().redis_url, socket_timeout=2)
        (client.sadd if add else client.srem)(READY_KEY, str(os.getpid()))
        client.close()
    except Exception:  # a marker is a convenience; never fail the worker for it
        pass


def _on_ready(**_kw) -> None:
    _marker(True)


def _on_shutdown(**_kw) -> None:
    _marker(False)


from celery.signals import worker_ready, worker_shutdown  # noqa: E402

worker_ready.connect(_on_ready, weak=False)
worker_shutdown.connect(_on_shutdown, weak=False)

import workers.monitoring  # noqa: E402, F401 - task metrics and the worker's exporter
