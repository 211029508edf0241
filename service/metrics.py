"""Prometheus metrics of the API and the workers (declared once, here).

gunicorn and Celery run several processes; when ``PROMETHEUS_MULTIPROC_DIR`` is set
(``rankduel serve`` and ``rankduel worker`` set it), prometheus-client writes each
process's values to files in that folder and :func:`render` aggregates them at scrape time.
Labels are bounded: endpoint names are the Flask endpoints, experiment and ranker names are
what operators registered.

This module holds the request-path, credit and worker metrics; the experiment-state
collector (:mod:`service.experiments.collector`: regret, ranker status, champion, queue depth, read
from Redis at scrape time) is added to the API's ``/metrics`` by :func:`render`, and the
Celery worker exports its aggregate on its own port (:mod:`workers.monitoring`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

HTTP_REQUESTS = Counter(
    "rankduel_http_requests_total",
    "HTTP requests served, by endpoint, method and status code.",
    ["endpoint", "method", "status"],
)
HTTP_LATENCY = Histogram(
    "rankduel_http_request_duration_seconds",
    "Wall time to serve an HTTP request, by endpoint and status code.",
    ["endpoint", "status"],
    buckets=LATENCY_BUCKETS,
)
SEARCH_OVERHEAD = Histogram(
    "rankduel_search_overhead_seconds",
    "Wall time of a /search answer spent outside ranker calls: what rankduel adds to a "
    "search (the request's time minus its slowest ranker call; Server-Timing: rankduel).",
    buckets=(0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05, 0.1,
             0.25, 1.0),
)
SELECTION_CPU = Histogram(
    "rankduel_selection_cpu_seconds",
    "CPU time of the controller's choice of a comparison (cache lookup + bandit select).",
    buckets=(0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01),
)
RANKER_LATENCY = Histogram(
    "rankduel_ranker_request_duration_seconds",
    "Wall time of a call to a ranker, by experiment and ranker.",
    ["experiment", "ranker"],
    buckets=LATENCY_BUCKETS,
)
RANKER_FAILURES = Counter(
    "rankduel_ranker_failures_total",
    "Ranker calls that failed or timed out, by experiment, ranker and reason.",
    ["experiment", "ranker", "reason"],
)
FALLBACKS = Counter(
    "rankduel_fallbacks_total",
    "Searches served from fewer rankers than chosen (a ranker failed; no duel recorded).",
    ["experiment"],
)
FORFEITS = Counter(
    "rankduel_ranker_forfeits_total",
    "Duels a ranker lost by failing to answer while an opponent answered, by reason.",
    ["experiment", "ranker", "reason"],
)
QUARANTINES = Counter(
    "rankduel_ranker_quarantines_total",
    "Times a ranker was put in quarantine after consecutive failures (or a failed probe).",
    ["experiment", "ranker"],
)
OUTCOMES = Counter(
    "rankduel_outcome_events_total",
    "POST /outcomes events, by experiment and result (attributed, duplicate, or why not "
    "attributed: no_impression, outside_window, not_shown, impression_expired).",
    ["experiment", "result"],
)
IMPRESSIONS = Counter(
    "rankduel_impressions_total",
    "Impressions served, by experiment and kind (duel, single, fallback).",
    ["experiment", "kind"],
)
TOKENS_REFUSED = Counter(
    "rankduel_tokens_refused_total",
    "Clicks or ends refused for a missing, forged or expired token.",
)
CREDIT_TASKS = Counter(
    "rankduel_credit_tasks_total",
    "Impressions processed by the credit task, by result status.",
    ["status"],
)
CREDIT_LAG = Histogram(
    "rankduel_click_to_credit_seconds",
    "Seconds from an impression's creation to its credit.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600),
)
WORKER_TASKS_PROCESSED = Counter(
    "rankduel_worker_tasks_processed_total",
    "Celery task runs finished (succeeded, failed or retried), by task name.",
    ["task"],
)
WORKER_TASKS_FAILED = Counter(
    "rankduel_worker_tasks_failed_total",
    "Celery task runs that failed for good (no retry left), by task name.",
    ["task"],
)
WORKER_TASKS_RETRIED = Counter(
    "rankduel_worker_tasks_retried_total",
    "Celery task runs that raised and were scheduled again, by task name.",
    ["task"],
)
WORKER_TASK_DURATION = Histogram(
    "rankduel_worker_task_duration_seconds",
    "Wall time of one Celery task run, by task name.",
    ["task"],
    buckets=LATENCY_BUCKETS,
)
DEGRADED_SEARCHES = Counter(
    "rankduel_degraded_searches_total",
    "Searches answered while the state store was down or over its budget, by kind "
    "(placement: the control's list; experiment: its first ranker's; refused: a 503).",
    ["kind"],
)
WEBHOOK_DELIVERIES = Counter(
    "rankduel_webhook_deliveries_total",
    "Webhook delivery attempts by result (delivered, failed, refused by the allow-list, "
    "dropped after webhook_max_age_s) and the receiver's HTTP status (none: no answer).",
    ["result", "status"],
)


@functools.lru_cache(maxsize=8192)
def labelled(metric: Any, *values: str) -> Any:
    """``metric.labels(*values)``, looked up once per label set: the request path takes
    the same few label sets on every request, and ``labels()`` costs a lock and a few
    allocations each time. Safe because no label set of these metrics is ever removed."""
    return metric.labels(*values)


def multiprocess_dir() -> str | None:
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def render(collectors: Iterable[Any] = ()) -> tuple[bytes, str]:
    """The exposition text (aggregated over processes in multiprocess mode), followed by
    what ``collectors`` (e.g. :class:`service.experiments.collector.StateCollector`) read at scrape
    time. They are registered in a registry built for this scrape only, never in the
    per-process ones, so their values appear once whatever the number of processes."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    body = generate_latest(registry)
    extra = CollectorRegistry(auto_describe=True)
    rendered = []
    for collector in collectors:
        if hasattr(collector, "exposition"):  # renders its own text, faster
            rendered.append(collector.exposition())
        else:
            extra.register(collector)
    return body + generate_latest(extra) + b"".join(rendered), CONTENT_TYPE_LATEST


def mark_process_dead(pid: int) -> None:
    """gunicorn ``child_exit`` hook: drop a dead worker's live gauges."""
    if multiprocess_dir():
        multiprocess.mark_process_dead(pid)
