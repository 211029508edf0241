"""Configuration of the service and the workers, resolved once at start-up.

Every setting comes from, in increasing priority: its default, an optional file named by
``RANKDUEL_CONFIG`` (TOML, or JSON when the name ends in ``.json``; keys are the field
names below, e.g. ``impression_ttl_s = 86400``), the environment (``REDIS_URL`` and the
``RANKDUEL_*`` variables listed in :data:`ENV`), and finally the ``overrides`` mapping
passed by code (tests, the demo).

Secrets (the admin token and the HMAC key) are never printed: ``repr`` and
:meth:`Config.public` mask them, so logging a ``Config`` is safe.

Examples
--------
>>> cfg = load_config(env={"RANKDUEL_ADMIN_TOKEN": "s3cret", "RANKDUEL_BIND": "127.0.0.1:9000"})
>>> cfg.bind, cfg.admin_token
('127.0.0.1:9000', 's3cret')
>>> "s3cret" in repr(cfg)
False
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: field name -> environment variable
ENV: dict[str, str] = {
    "redis_url": "REDIS_URL",
    "broker_url": "RANKDUEL_BROKER_URL",
    "redis_cluster": "RANKDUEL_REDIS_CLUSTER",
    "redis_timeout_ms": "RANKDUEL_REDIS_TIMEOUT_MS",
    "admin_token": "RANKDUEL_ADMIN_TOKEN",
    "secret_key": "RANKDUEL_SECRET_KEY",
    "bind": "RANKDUEL_BIND",
    "workers": "RANKDUEL_WORKERS",
    "threads": "RANKDUEL_THREADS",
    "impression_ttl_s": "RANKDUEL_IMPRESSION_TTL_S",
    "token_ttl_s": "RANKDUEL_TOKEN_TTL_S",
    "inactivity_s": "RANKDUEL_INACTIVITY_S",
    "sweep_interval_s": "RANKDUEL_SWEEP_INTERVAL_S",
    "credit_retry_s": "RANKDUEL_CREDIT_RETRY_S",
    "drain_lease_s": "RANKDUEL_DRAIN_LEASE_S",
    "ranker_timeout_ms": "RANKDUEL_RANKER_TIMEOUT_MS",
    "events_maxlen": "RANKDUEL_EVENTS_MAXLEN",
    "state_max_age_ms": "RANKDUEL_STATE_MAX_AGE_MS",
    "guardrail_interval_s": "RANKDUEL_GUARDRAIL_INTERVAL_S",
    "default_k": "RANKDUEL_DEFAULT_K",
    "max_k": "RANKDUEL_MAX_K",
    "max_depth": "RANKDUEL_MAX_DEPTH",
    "visibility_timeout_s": "RANKDUEL_VISIBILITY_TIMEOUT_S",
    "ranker_failure_threshold": "RANKDUEL_RANKER_FAILURE_THRESHOLD",
    "ranker_quarantine_s": "RANKDUEL_RANKER_QUARANTINE_S",
    "ranker_retire_after": "RANKDUEL_RANKER_RETIRE_AFTER",
    "probe_query": "RANKDUEL_PROBE_QUERY",
    "log_level": "RANKDUEL_LOG_LEVEL",
    "worker_metrics_bind": "RANKDUEL_WORKER_METRICS_BIND",
    "sweep_stale_s": "RANKDUEL_SWEEP_STALE_S",
    "access_log": "RANKDUEL_ACCESS_LOG",
    "state_cache_size": "RANKDUEL_STATE_CACHE_SIZE",
    "credit_batch": "RANKDUEL_CREDIT_BATCH",
    "credit_parallelism": "RANKDUEL_CREDIT_PARALLELISM",
    "metrics_token": "RANKDUEL_METRICS_TOKEN",
    "ranker_allow": "RANKDUEL_RANKER_ALLOW",
    "clicks_per_client_per_minute": "RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE",
    "clicks_per_impression": "RANKDUEL_CLICKS_PER_IMPRESSION",
    "trusted_proxies": "RANKDUEL_TRUSTED_PROXIES",
    "cors_origins": "RANKDUEL_CORS_ORIGINS",
    "frontend_tokens": "RANKDUEL_FRONTEND_TOKENS",
    "webhook_timeout_s": "RANKDUEL_WEBHOOK_TIMEOUT_S",
    "webhook_backoff_s": "RANKDUEL_WEBHOOK_BACKOFF_S",
    "webhook_backoff_max_s": "RANKDUEL_WEBHOOK_BACKOFF_MAX_S",
    "webhook_max_age_s": "RANKDUEL_WEBHOOK_MAX_AGE_S",
    "webhook_disable_after": "RANKDUEL_WEBHOOK_DISABLE_AFTER",
    "audit_retention_days": "RANKDUEL_AUDIT_RETENTION_DAYS",
    "allow_eviction": "RANKDUEL_ALLOW_EVICTION",
    "store_budget_ms": "RANKDUEL_STORE_BUDGET_MS",
    "retention_s": "RANKDUEL_RETENTION_S",
}

SECRETS = frozenset({"admin_token", "secret_key", "metrics_token", "frontend_tokens"})


@dataclasses.dataclass(frozen=True)
class Config:
    """Settings of one process. Field names are also the config-file keys.

    Parameters
    ----------
    redis_url
        Redis for state (``REDIS_URL``); with ``redis_cluster``, one or more nodes of a
        Redis Cluster, ``redis://host:port[,host:port...]`` (:mod:`service.store.client`).
    broker_url
        The Celery broker (``RANKDUEL_BROKER_URL``), a single Redis; default ``redis_url``,
        except on a cluster (Celery's Redis transport has no cluster), where it is needed.
    redis_cluster
        ``REDIS_URL`` names a Redis Cluster (``RANKDUEL_REDIS_CLUSTER=1``).
    redis_timeout_ms
        Socket timeout of the API's Redis calls: a stalled Redis answers 503 this soon.
    admin_token
        Bearer token of the operator endpoints (``RANKDUEL_ADMIN_TOKEN``).
    secret_key
        HMAC key signing impression tokens (``RANKDUEL_SECRET_KEY``).
    bind
        ``host:port`` of ``rankduel serve`` (``RANKDUEL_BIND``).
    workers, threads
        gunicorn worker processes and threads per worker.
    impression_ttl_s
        How long an impression (and its clicks) lives in Redis.
    token_ttl_s
        How long the token issued by ``/search`` accepts clicks.
    inactivity_s
        An impression without ``/end`` closes this long after its last activity.
    sweep_interval_s
        Period of the worker's sweep for inactive impressions.
    credit_retry_s
        How often the sweep reads every experiment rather than only those its index lists
        as due (which repairs an index entry a crash left out).
    drain_lease_s
        A drain lease's and a claim's lifetime, renewed every third of it by a working
        drain: after any fault, crediting resumes within ``drain_lease_s + sweep_interval_s``.
    ranker_timeout_ms
        Default per-ranker timeout when an experiment's ranker gives none.
    events_maxlen
        Each experiment's event log keeps about this many newest events (0, the default:
        no cap; ``retention_s`` trims it by time).
    state_max_age_ms
        An API process re-reads the bandit state at most this often (delayed feedback),
        and a placement's shares too.
    guardrail_interval_s
        An API process checks a placement's guardrails at most this often (after a
        search of the placement; docs/operations/rollout.md).
    default_k, max_k
        Result-page size when ``/search`` has no ``k``, and its upper limit.
    max_depth
        The deepest result a paged search may reach: page ``N`` of ``k`` results asks the
        rankers for ``N·k`` results and is refused (400) when ``N·k`` exceeds it.
    visibility_timeout_s
        Redis-broker visibility timeout: an unacknowledged task is redelivered after it.
    ranker_failure_threshold
        Consecutive failures after which a ranker is quarantined (not called; one probe
        request per ``ranker_quarantine_s`` after that).
    ranker_quarantine_s
        How long a quarantine lasts before the ranker is probed again. While quarantined
        a ranker is unavailable to selection: the policy compares the healthy rankers.
    ranker_retire_after
        Quarantines in a row (the first, then one per failed probe) after which the
        service retires a ranker for good (a ``ranker_retired`` audit entry).
    probe_query
        The test query sent to a ranker's URL when it is added (unless ``"probe": false``;
        :mod:`service.rankers.probe`).
    log_level
        Python logging level name.
    worker_metrics_bind
        ``host:port`` on which a Celery worker's main process serves its Prometheus
        metrics (aggregated over its pool processes) and its ``/healthz``; empty (the
        default) for none.
    sweep_stale_s
        A sweeping worker's ``/healthz`` answers 503 when no sweep completed this long.
    access_log
        Where ``rankduel serve`` writes its access log: ``-`` (the default) for its
        standard output, a file path, or ``off``.
    state_cache_size
        Experiments whose decoded policy one API process keeps (least recently used
        beyond that are dropped and re-read on their next search).
    credit_batch
        Impressions a worker credits per Lua script.
    credit_parallelism
        Drain tasks that may credit one experiment at once (a drain that finds a full
        batch waiting queues another, up to this many).
    metrics_token
        Bearer token of ``/metrics`` (the API's and a worker's exporter), for the
        scraper; the admin token is accepted too.
    ranker_allow
        Where rankers may live: comma-separated hostnames, IP addresses, CIDR networks,
        or ``*``. Empty (the default): public addresses only, so that an operator token
        cannot make rankduel a proxy to internal services (:mod:`service.rankers.allow_list`).
    clicks_per_client_per_minute
        Click reports (``/clicks`` requests) one client address may send per minute;
        beyond it ``/clicks`` answers 429 with ``Retry-After``. 0 turns the limit off.
    clicks_per_impression
        Clicks one impression may record in all; a report that would go beyond it
        answers 429 (the impression's clicks stay as they were).
    trusted_proxies
        Reverse proxies in front of the API: the client address is the
        ``X-Forwarded-For`` entry this many hops from the right (0, the default: the
        socket's peer address, and the header is ignored).
    cors_origins
        Origins of the search pages that call rankduel from a browser (comma-separated
        ``scheme://host[:port]``; none by default): :mod:`service.api.cors`.
    frontend_tokens
        Bootstrap keys (``frontend`` scope) of server-side front ends, comma-separated for
        rotation: a keyed ``/search``, ``/clicks``, ``/impressions/ID/end`` or ``/r`` skips
        the per-address click limit (the per-impression limit and the impression token
        still apply). A wrong key answers 401 (docs/operations/security.md).
    webhook_timeout_s
        How long a webhook delivery may take to connect, and to each read of the
        answer, before it counts as failed (docs/webhooks.md).
    webhook_backoff_s, webhook_backoff_max_s
        A failed delivery is tried again after ``webhook_backoff_s``, then twice as long
        after each further failure, at most ``webhook_backoff_max_s`` apart.
    webhook_max_age_s
        An event still undelivered this long after its first failed attempt is dropped
        for that webhook (an audit entry ``webhook_event_dropped``).
    webhook_disable_after
        Failures in a row after which a webhook is disabled (an audit entry
        ``webhook_disabled``; ``"disabled": true`` in ``GET /webhooks/ID``).
    audit_retention_days
        How long the audit trail keeps an entry (``GET /audit``; docs/operations/security.md).
    allow_eviction
        Run on a Redis whose ``maxmemory-policy`` evicts (refused otherwise:
        docs/operations/outages.md).
    store_budget_ms
        A search's budget for Redis: slower or unreachable, a placement serves its control
        ``"degraded": "store"`` (:mod:`service.search.outage`).
    retention_s
        How long what outlives its use is kept: the event log, the split check's users,
        outcome events, outboxes (:mod:`service.store.retention`; 30 days).
    """

    redis_url: str = "redis://127.0.0.1:6379/0"
    broker_url: str = ""
    redis_cluster: bool = False
    redis_timeout_ms: float = 250.0
    admin_token: str = ""
    secret_key: str = ""
    bind: str = "127.0.0.1:8000"
    workers: int = 2
    threads: int = 8
    impression_ttl_s: int = 86_400
    token_ttl_s: int = 3_600
    inactivity_s: float = 1_800.0
    sweep_interval_s: float = 5.0
    credit_retry_s: float = 60.0
    drain_lease_s: float = 3.0
    ranker_timeout_ms: int = 300
    events_maxlen: int = 0
    state_max_age_ms: float = 100.0
    guardrail_interval_s: float = 5.0
    default_k: int = 10
    max_k: int = 100
    max_depth: int = 100
    visibility_timeout_s: int = 300
    ranker_failure_threshold: int = 5
    ranker_quarantine_s: float = 30.0
    ranker_retire_after: int = 4
    probe_query: str = "rankduel probe"
    log_level: str = "INFO"
    worker_metrics_bind: str = ""
    sweep_stale_s: float = 60.0
    access_log: str = "-"
    state_cache_size: int = 1000
    credit_batch: int = 500
    credit_parallelism: int = 8
    metrics_token: str = ""
    ranker_allow: str = ""
    clicks_per_client_per_minute: int = 600
    clicks_per_impression: int = 100
    trusted_proxies: int = 0
    cors_origins: str = ""
    frontend_tokens: str = ""
    webhook_timeout_s: float = 5.0
    webhook_backoff_s: float = 1.0
    webhook_backoff_max_s: float = 3600.0
    webhook_max_age_s: float = 86_400.0
    webhook_disable_after: int = 20
    audit_retention_days: float = 365.0
    allow_eviction: bool = False
    store_budget_ms: float = 50.0
    retention_s: int = 2_592_000

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            want = _field_type(field)
            try:
                coerced = want(value)
            except (TypeError, ValueError):
                raise ValueError(
                    f"config {field.name}: expected {want.__name__}, got {value!r}"
                ) from None
            object.__setattr__(self, field.name, coerced)
        if not self.broker_url:
            if self.redis_cluster:
                raise ValueError(
                    "REDIS_URL is a Redis Cluster (RANKDUEL_REDIS_CLUSTER=1) and Celery's "
                    "Redis transport cannot use one: set RANKDUEL_BROKER_URL to a single "
                    "Redis for the task queue")
            object.__setattr__(self, "broker_url", self.redis_url)
        positive = ("workers", "threads", "impression_ttl_s", "token_ttl_s", "inactivity_s",
                    "sweep_interval_s", "credit_retry_s", "drain_lease_s", "ranker_timeout_ms",
                    "default_k", "max_k", "max_depth", "visibility_timeout_s",
                    "redis_timeout_ms", "ranker_failure_threshold", "ranker_quarantine_s",
                    "ranker_retire_after", "sweep_stale_s", "state_cache_size",
                    "credit_batch", "credit_parallelism", "clicks_per_impression",
                    "webhook_timeout_s", "webhook_backoff_s", "webhook_backoff_max_s",
                    "webhook_max_age_s", "webhook_disable_after", "audit_retention_days",
                    "store_budget_ms", "retention_s")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"config {name} must be positive, got {getattr(self, name)}")
        for name in ("clicks_per_client_per_minute", "trusted_proxies"):
            if getattr(self, name) < 0:
                raise ValueError(f"config {name} must be >= 0, got {getattr(self, name)}")
        if self.state_max_age_ms < 0:
            raise ValueError("config state_max_age_ms must be >= 0")
        if self.guardrail_interval_s < 0:
            raise ValueError("config guardrail_interval_s must be >= 0")
        if self.inactivity_s >= self.impression_ttl_s or self.token_ttl_s > self.impression_ttl_s:
            raise ValueError("config impression_ttl_s must exceed inactivity_s and token_ttl_s "
                             "(an impression must outlive its clicks and its credit)")
        if self.sweep_stale_s <= self.sweep_interval_s:
            raise ValueError("config sweep_stale_s must exceed sweep_interval_s")
        if not 1 <= self.default_k <= self.max_k:
            raise ValueError(f"config default_k must be in 1..max_k={self.max_k}")
        for name in ("bind", "worker_metrics_bind"):
            value = getattr(self, name)
            if name == "worker_metrics_bind" and not value:
                continue  # optional
            host, sep, port = value.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ValueError(f"config {name} must be host:port, got {value!r}")

    @property
    def frontend_keys(self) -> tuple[str, ...]:
        """The front-end keys of ``frontend_tokens`` (blank entries dropped)."""
        return tuple(t.strip() for t in self.frontend_tokens.split(",") if t.strip())

    @property
    def host(self) -> str:
        return self.bind.rpartition(":")[0]

    @property
    def port(self) -> int:
        return int(self.bind.rpartition(":")[2])

    def public(self) -> dict[str, Any]:
        """All settings with secrets masked (safe to log or show)."""
        out = dataclasses.asdict(self)
        for name in SECRETS:
            out[name] = _mask(out[name])
        out["redis_url"] = _mask_url(out["redis_url"])
        out["broker_url"] = _mask_url(out["broker_url"])
        return out

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.public().items())
        return f"Config({body})"


def _field_type(field: dataclasses.Field) -> Any:
    return {"str": str, "int": int, "float": float, "bool": boolean}[str(field.type)]


def boolean(value: Any) -> bool:
    """``1/0``, ``true/false``, ``yes/no``, ``on/off`` (any case), or a bool."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(value)


def _mask(secret: str) -> str:
    return "***" if secret else ""


def _mask_url(url: str) -> str:
    """Hide a password in ``redis://user:password@host``."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        cred, _, host = rest.rpartition("@")
        user = cred.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


def read_config_file(path: str | os.PathLike) -> dict[str, Any]:
    """Settings from a TOML or JSON file (a flat table of field names)."""
    p = Path(path)
    try:
        text = p.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read config file {p}: {exc.strerror}") from None
    try:
        data = json.loads(text) if p.suffix == ".json" else tomllib.loads(text.decode())
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"config file {p} is not valid: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config file {p} must hold a table of settings")
    return data


def load_config(
    env: Mapping[str, str] | None = None, overrides: Mapping[str, Any] | None = None
) -> Config:
    """Resolve the configuration: defaults < ``RANKDUEL_CONFIG`` file < environment < overrides."""
    env = os.environ if env is None else env
    known = {f.name for f in dataclasses.fields(Config)}
    values: dict[str, Any] = {}
    if env.get("RANKDUEL_CONFIG"):
        values.update(read_config_file(env["RANKDUEL_CONFIG"]))
    for name, var in ENV.items():
        if env.get(var, "") != "":
            values[name] = env[var]
    values.update(overrides or {})
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown config settings: {', '.join(unknown)}")
    return Config(**values)
