"""The worker's health: the sweep's heartbeat, ``/healthz``, and quiet idle logs.

* **Heartbeat.** Every ``rankduel.sweep`` that completes, in whichever process runs it,
  stores the time in Redis (:data:`SWEEP_HEARTBEAT`, with a TTL). A sweep that no longer
  runs — its timer gone, the pool stuck, every sweep failing — leaves it to age.
* **/healthz**, served with ``/metrics`` by the worker's main process on
  ``RANKDUEL_WORKER_METRICS_BIND`` (:mod:`workers.monitoring`): 200 when the consumer is
  connected to the broker and, on a worker started with the sweep, the last sweep
  completed less than ``sweep_stale_s`` ago (counted from the worker's start while there
  is none); 503 otherwise. The body says which check failed::

      {"status": "ok", "broker": "connected",
       "sweep": {"enabled": true, "age_s": 0.4, "stale_after_s": 60.0}}

* **Quiet idle workers.** The sweep runs every few seconds; Celery would log its
  "received" and "succeeded" lines each time. :class:`QuietSweep` drops Celery's INFO
  records of the sweep task, and turns the "received" and "succeeded" lines of every
  other task (two per drain) into DEBUG records: at INFO a worker logs its start, its
  stop, errors, retries and one line a minute of totals (:mod:`workers.monitoring`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import Any

import redis
from celery.signals import task_success

from service.config import Config
from service.queue import SWEEP
from service.store.client import Client, connect_state
from service.store.keys import SWEEP_HEARTBEAT

log = logging.getLogger("rankduel.worker.health")


_started = time.time()
_client: tuple[int, Client] | None = None
_lock = threading.Lock()
_config: Config | None = None


def configure(config: Config) -> None:
    """The worker's configuration (:mod:`workers.celery_app` calls this once)."""
    global _config
    _config = config


def _redis(config: Config) -> Client:
    """This process's small client for the heartbeat (a new one after a fork)."""
    global _client
    with _lock:
        if _client is None or _client[0] != os.getpid():
            # the state store's client, a cluster's too (from_url cannot parse a URL that
            # lists the cluster's nodes: the scheduler's /healthz answered 500 there)
            _client = (os.getpid(), connect_state(config, socket_timeout=2,
                                                  socket_connect_timeout=2))
        return _client[1]


def record_sweep(config: Config, now: float | None = None) -> None:
    """Store the time of a completed sweep."""
    ttl = max(int(config.sweep_stale_s * 10), 60)
    _redis(config).set(SWEEP_HEARTBEAT, repr(time.time() if now is None else now), ex=ttl)


def last_sweep(config: Config) -> float | None:
    """Epoch seconds of the last completed sweep, None if there is none."""
    raw = _redis(config).get(SWEEP_HEARTBEAT)
    return float(raw) if raw else None


def _on_success(sender=None, **_kw) -> None:
    if getattr(sender, "name", None) != SWEEP or _config is None:
        return
    try:
        record_sweep(_config)
    except redis.RedisError as exc:  # the next sweep tries again; /healthz sees the age
        log.warning("cannot record the sweep's heartbeat: %r", exc)


task_success.connect(_on_success, weak=False)


# ---------------------------------------------------------------------------- /healthz
class State:
    """What ``/healthz`` reads in the main process: the consumer, set when ready."""

    consumer: Any = None
    sweep: bool = False


state = State()


def check(config: Config, now: float | None = None) -> tuple[bool, dict[str, Any]]:
    """The worker's health: ``(ok, body)``."""
    now = time.time() if now is None else now
    consumer = state.consumer
    connected = consumer is not None and getattr(consumer, "connection", None) is not None
    body: dict[str, Any] = {"broker": "connected" if connected else "disconnected"}
    ok = connected
    sweep: dict[str, Any] = {"enabled": state.sweep}
    if state.sweep:
        sweep["stale_after_s"] = config.sweep_stale_s
        try:
            last = last_sweep(config)
        except redis.RedisError as exc:
            sweep["error"] = f"cannot read the heartbeat: {type(exc).__name__}"
            ok = False
        else:
            sweep["last"] = last
            sweep["age_s"] = round(now - max(last or 0.0, _started), 3)
            if sweep["age_s"] > config.sweep_stale_s:
                sweep["error"] = "no sweep completed recently"
                ok = False
    body["sweep"] = sweep
    body["status"] = "ok" if ok else "failing"
    return ok, body


def healthz_response(config: Config) -> tuple[str, bytes]:
    """The HTTP status line and JSON body of ``/healthz``."""
    ok, body = check(config)
    status = "200 OK" if ok else "503 Service Unavailable"
    return status, json.dumps(body).encode()


# ---------------------------------------------------------------------- quiet idle logs
class QuietSweep(logging.Filter):
    """Drop Celery's INFO records of the sweep task: "received", "succeeded", and
    "Discarding revoked task" (a sweep that expired waiting in the queue); demote the
    "received" and "succeeded" records of the other tasks to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO:
            return True
        args = record.args
        if isinstance(args, dict):
            name = args.get("name")
        else:
            name = args[0] if isinstance(args, tuple) and args else None
        if name == SWEEP:
            return False
        text = str(record.msg)
        if "received" in text or "succeeded" in text:  # one task run: DEBUG detail
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def quiet_sweep_logs() -> None:
    """Install :class:`QuietSweep` on the Celery loggers that log every task run."""
    for name in ("celery.worker.strategy", "celery.app.trace", "celery.worker.request"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietSweep) for f in logger.filters):
            logger.addFilter(QuietSweep())
