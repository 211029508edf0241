"""Prometheus metrics of the Celery workers.

Task metrics are counted by Celery signals in whichever process runs the task (a prefork
pool process, or the main process with the solo/threads pools): runs processed, failed
for good, retried, and their duration (:mod:`service.metrics`). ``rankduel worker`` sets
``PROMETHEUS_MULTIPROC_DIR`` (emptied at start-up), so each process writes its values to
files there, and the worker's main process serves their aggregate over HTTP on
``RANKDUEL_WORKER_METRICS_BIND`` (``host:port``; off when empty) once the worker is ready:
a scrape sees the sum over the pool processes, including those that were replaced. The
same server answers the worker's health check, ``/healthz`` (:mod:`workers.health`).

At INFO the worker's main process logs what a person needs: its start and stop, and one
line a minute of totals (:class:`Totals`: task runs by task, failures, retries,
impressions credited by status; minutes with nothing done log nothing). Celery's lines
for each task run are DEBUG (:class:`workers.health.QuietSweep`).

The credit task itself counts impressions by outcome and the click-to-credit lag
(``rankduel_credit_tasks_total``, ``rankduel_click_to_credit_seconds``). Queue depth is
read from Redis at scrape time by the API's collector (:mod:`service.experiments.collector`), once,
rather than by every worker.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time

from celery.signals import (
    task_failure,
    task_postrun,
    task_prerun,
    task_retry,
    worker_ready,
    worker_shutdown,
)

from service import metrics

log = logging.getLogger("rankduel.worker.metrics")

_started: dict[str, float] = {}
_lock = threading.Lock()
_server = None
_totals = None


def _task_name(sender) -> str:
    return getattr(sender, "name", None) or "unknown"


def _on_prerun(sender=None, task_id=None, **_kw) -> None:
    with _lock:
        _started[task_id] = time.perf_counter()


def _on_postrun(sender=None, task_id=None, **_kw) -> None:
    name = _task_name(sender)
    with _lock:
        t0 = _started.pop(task_id, None)
    metrics.WORKER_TASKS_PROCESSED.labels(name).inc()
    if t0 is not None:
        metrics.WORKER_TASK_DURATION.labels(name).observe(time.perf_counter() - t0)


def _on_failure(sender=None, **_kw) -> None:
    metrics.WORKER_TASKS_FAILED.labels(_task_name(sender)).inc()


def _on_retry(sender=None, **_kw) -> None:
    metrics.WORKER_TASKS_RETRIED.labels(_task_name(sender)).inc()


def exporter_app(registry, config):
    """WSGI app of the worker's endpoint: ``/healthz`` (:mod:`workers.health`), and the
    metrics of ``registry`` on every other path (``/metrics``), behind a key with the
    ``metrics`` scope (``Authorization: Bearer``): the metrics token, the admin token,
    or a key made by ``POST /keys`` (checked as the API checks it,
    :class:`service.access.gate.Gate`; 401 for a missing, wrong, revoked or expired key,
    403 for one without ``metrics``)."""
    import redis
    from prometheus_client import make_wsgi_app

    from service.access import scopes
    from service.access.gate import Gate
    from service.errors import ApiError, Forbidden
    from service.store.access import AccessStore
    from service.store.base import StoreBase
    from service.store.client import connect_state
    from workers.health import healthz_response

    metrics_app = make_wsgi_app(registry)
    timeout = config.redis_timeout_ms / 1000.0
    try:
        access = AccessStore(StoreBase(connect_state(config, socket_timeout=timeout,
                                                     socket_connect_timeout=timeout)))
    except Exception as exc:
        log.warning("worker exporter: keys unavailable (%s); only the metrics and admin "
                    "tokens are accepted", type(exc).__name__)
        access = None
    gate = Gate(config, access)

    def app(environ, start_response):
        if environ.get("PATH_INFO") == "/healthz":
            status, body = healthz_response(config)
            start_response(status, [("Content-Type", "application/json"),
                                    ("Content-Length", str(len(body)))])
            return [body]
        try:  # the metrics name experiments: never public (service.access)
            principal = gate.principal(environ.get("HTTP_AUTHORIZATION"))
            if not scopes.allows(principal.scopes, "metrics"):
                raise Forbidden(f"{principal.label} may not read the metrics: it needs "
                                "scope 'metrics'")
        except redis.RedisError as exc:  # a stored key cannot be checked now
            body = json.dumps({"error": "state store unavailable "
                                        f"({type(exc).__name__})"}).encode()
            start_response("503 Service Unavailable", [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        except ApiError as exc:
            body = json.dumps({"error": exc.message}).encode()
            reason = "401 Unauthorized" if exc.status == 401 else "403 Forbidden"
            start_response(reason, [
                ("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                *exc.headers.items()])
            return [body]
        return metrics_app(environ, start_response)

    return app


def start_exporter(bind: str, config=None):
    """Serve the worker's metrics and ``/healthz`` on ``bind`` (``host:port``) from a
    daemon thread.

    Aggregates ``PROMETHEUS_MULTIPROC_DIR`` when it is set (every pool process), else
    serves this process's registry only. Returns the server, or None when it cannot
    listen (the worker goes on without it; the error is logged).
    """
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess
    from prometheus_client.exposition import ThreadingWSGIServer

    from service.config import load_config

    config = config or load_config()
    host, _, port = bind.rpartition(":")
    if metrics.multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        log.warning("PROMETHEUS_MULTIPROC_DIR is not set: the worker's metrics cover its "
                    "main process only (start it with `rankduel worker`)")
        registry = REGISTRY

    class Quiet(WSGIRequestHandler):
        def log_message(self, format, *args):  # scrapes and health checks: no log
            pass

    try:
        server = make_server(host, int(port), exporter_app(registry, config),
                             ThreadingWSGIServer, handler_class=Quiet)
    except OSError as exc:
        log.error("cannot serve worker metrics on %s: %s", bind, exc)
        return None
    threading.Thread(target=server.serve_forever, name="rankduel-exporter",
                     daemon=True).start()
    log.info("worker metrics on http://%s/metrics, health on /healthz (pid %d)",
             bind, os.getpid())
    return server


def _registry():
    """The registry with every process's values (the pool's too, when the worker runs
    with ``PROMETHEUS_MULTIPROC_DIR``)."""
    from prometheus_client import REGISTRY, CollectorRegistry, multiprocess

    if metrics.multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return REGISTRY


def read_totals(registry=None) -> dict[str, float]:
    """The worker's counters summed over its processes: ``runs:<task>``, ``failed``,
    ``retried`` and ``credited:<status>``."""
    wanted = {"rankduel_worker_tasks_processed_total": ("runs:", "task"),
              "rankduel_worker_tasks_failed_total": ("failed", None),
              "rankduel_worker_tasks_retried_total": ("retried", None),
              "rankduel_credit_tasks_total": ("credited:", "status")}
    out: dict[str, float] = {}
    for family in (registry or _registry()).collect():
        for sample in family.samples:
            if sample.name not in wanted:
                continue
            prefix, label = wanted[sample.name]
            key = prefix + (sample.labels.get(label, "?").removeprefix("rankduel.")
                            if label else "")
            out[key] = out.get(key, 0.0) + sample.value
    return out


class Totals:
    """One INFO line a minute of what the worker did in that minute (nothing when it did
    nothing): task runs by task, failures, retries, impressions credited by status."""

    def __init__(self, read=read_totals, interval_s: float = 60.0, logger=None) -> None:
        self.read, self.interval_s = read, interval_s
        self.log = logger or log
        self.last = read()
        self._stop = threading.Event()

    def tick(self) -> str | None:
        """Log (and return) the line for the counts since the last tick."""
        now = self.read()
        delta = {k: v - self.last.get(k, 0.0) for k, v in now.items()}
        self.last = now
        runs = {k[5:]: v for k, v in delta.items() if k.startswith("runs:") and v > 0}
        if not runs:
            return None
        credited = {k[9:]: v for k, v in delta.items() if k.startswith("credited:") and v > 0}
        line = (f"last {self.interval_s:.0f} s: {sum(runs.values()):,.0f} task runs ("
                + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(runs.items()))
                + f"), {delta.get('failed', 0):,.0f} failed, {delta.get('retried', 0):,.0f} "
                  "retried; impressions credited: "
                + (", ".join(f"{k} {v:,.0f}" for k, v in sorted(credited.items())) or "none"))
        self.log.info("%s", line)
        return line

    def run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception as exc:  # a log line is never worth the worker
                self.log.warning("cannot read the worker's totals: %r", exc)

    def start(self) -> Totals:
        threading.Thread(target=self.run, name="rankduel-totals", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()


def _on_ready(sender=None, **_kw) -> None:
    global _server, _totals
    from service.config import load_config
    from workers.health import state

    state.consumer = sender  # /healthz reads its broker connection

    # every task's series exist from the start, at 0 (a failure panel shows 0, not
    # "no data", and rate() sees the first failure)
    app = getattr(sender, "app", None)
    for name in getattr(app, "tasks", {}):
        if name.startswith("rankduel."):
            for counter in (metrics.WORKER_TASKS_PROCESSED, metrics.WORKER_TASKS_FAILED,
                            metrics.WORKER_TASKS_RETRIED):
                counter.labels(name)
    bind = load_config().worker_metrics_bind
    if bind and _server is None:
        _server = start_exporter(bind)
    hostname = getattr(sender, "hostname", "?")
    log.info("worker %s started (pid %d)", hostname, os.getpid())
    if _totals is None:
        _totals = Totals().start()


def _on_shutdown(sender=None, **_kw) -> None:
    if _totals is not None:
        _totals.stop()
        _totals.tick()  # what the last part of a minute did
    log.info("worker stopping (pid %d)", os.getpid())


task_prerun.connect(_on_prerun, weak=False)
task_postrun.connect(_on_postrun, weak=False)
task_failure.connect(_on_failure, weak=False)
task_retry.connect(_on_retry, weak=False)
worker_ready.connect(_on_ready, weak=False)
worker_shutdown.connect(_on_shutdown, weak=False)
