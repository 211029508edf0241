"""The Celery application of the workers: late acks, the periodic sweep, reconnection.

Delivery is at least once: ``acks_late`` + ``task_reject_on_worker_lost`` put a task back
on the queue when the worker dies mid-task, and the broker redelivers an unacknowledged
task after ``visibility_timeout``. The tasks are idempotent (see :mod:`workers.tasks`), so
at-least-once delivery yields exactly-once effects.

The worker reconnects after a broker restart: its Redis transport turns the crash of
celery/kombu 5.7 into the connection error it should be (:mod:`workers.transport`), and
retrying the connection never gives up (``broker_connection_max_retries`` None): a worker
waits for its broker rather than exit. ``--sweep`` adds the
:class:`workers.schedule.Sweep` step that publishes the sweep from the main process
every ``sweep_interval_s`` (no Celery beat, no schedule file).

The worker process resolves its configuration once, here (``config``); the tasks and
the readiness marker use it. ``celery -A workers.celery_app worker --sweep`` (what
``rankduel worker`` runs) uses the module-level ``app``. Broker settings shared with the
API's producer come from :mod:`service.queue`.
"""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

from service.config import Config, load_config
from service.queue import QUEUE, broker_settings
from service.store.client import connect_state
from service.store.keys import WORKERS_READY
from workers.schedule import SWEEP_OPTION, Sweep
from workers.transport import TRANSPORT

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
        broker_connection_retry=True,
        broker_connection_max_retries=None,
        rankduel_sweep_interval_s=cfg.sweep_interval_s,
    )
    if cfg.broker_url.startswith(("redis://", "rediss://")):
        # a broker restart is a connection error, not a crash (workers/transport.py)
        app.conf.broker_transport = TRANSPORT
    app.steps["consumer"].add(Sweep)
    app.user_options["worker"].add(SWEEP_OPTION)
    return app


app = make_celery(config)

# ---------------------------------------------------------------------- readiness marker
#: a Redis set of the pids of workers that are consuming (``rankduel demo`` and the tests
#: wait on it; a worker removes itself on a clean shutdown)
READY_KEY = WORKERS_READY


def _marker(add: bool) -> None:
    try:
        client = connect_state(config, socket_timeout=2)
        # the pid of the process that was started: ``rankduel worker`` (the supervisor),
        # or this one when it runs unsupervised
        pid = os.environ.get("RANKDUEL_SUPERVISOR_PID") or str(os.getpid())
        (client.sadd if add else client.srem)(READY_KEY, pid)
        client.close()
    except Exception:  # a marker is a convenience; never fail the worker for it
        pass


worker_ready.connect(lambda **_kw: _marker(True), weak=False)
worker_shutdown.connect(lambda **_kw: _marker(False), weak=False)

import workers.health  # noqa: E402 - the sweep's heartbeat, /healthz
import workers.monitoring  # noqa: E402 - task metrics and the worker's exporter

workers.health.configure(config)
workers.health.quiet_sweep_logs()

__all__ = ["QUEUE", "READY_KEY", "app", "config", "make_celery"]
