"""What the Redis server under rankduel is set to do with its data, read from ``INFO`` and
``CONFIG GET``, and the checks ``rankduel serve``, ``rankduel worker``, ``/readyz`` and
``rankduel doctor`` make of it.

* **Eviction**: a ``maxmemory-policy`` other than ``noeviction`` lets Redis drop
  rankduel's keys under memory pressure (W, a pending impression, an experiment) without
  an error. ``serve`` and ``worker`` refuse such a Redis unless ``RANKDUEL_ALLOW_EVICTION=1``
  (Sidekiq refuses it too; Celery's docs warn of it).
* **Evictions seen**: ``INFO stats evicted_keys`` above zero means keys were already
  dropped: ``/readyz`` answers 503 and ``rankduel_redis_evicted_keys`` says how many.
* **Persistence**: neither AOF nor RDB snapshots (``--save ''``, the quick start's Redis)
  loses every experiment with the process; a warning, not a refusal.

A hosted Redis may refuse ``CONFIG GET``; what ``INFO`` does not say is then unknown and
no check fails on it (docs/operations/outages.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from service.store.client import Client


@dataclass(frozen=True)
class ServerFacts:
    """One Redis server's settings and counters that bear on rankduel's data."""

    version: str
    policy: str | None  # maxmemory-policy, None when CONFIG GET is refused
    maxmemory: int  # bytes, 0 for no limit
    used_memory: int
    aof: bool
    aof_fsync: str | None
    save: str | None  # the RDB schedule, "" for none
    evicted_keys: int
    time_s: float  # the server's clock (TIME)


def nodes(client: Client) -> list[redis.Redis]:
    """The servers holding rankduel's state: the one Redis, or each cluster primary."""
    if isinstance(client, redis.Redis):
        return [client]
    return [client.get_redis_connection(n) for n in client.get_primaries()]


def _config(server: redis.Redis, name: str) -> str | None:
    try:
        value = server.config_get(name).get(name)
    except redis.ResponseError:  # a hosted Redis that renames or refuses CONFIG
        return None
    return value.decode() if isinstance(value, bytes) else value


def facts(server: redis.Redis) -> ServerFacts:
    """Read one server's :class:`ServerFacts` (``INFO`` and ``CONFIG GET``)."""
    info: dict[str, Any] = server.info()
    policy = info.get("maxmemory_policy") or _config(server, "maxmemory-policy")
    secs, micros = server.time()
    fsync = _config(server, "appendfsync")
    return ServerFacts(
        version=str(info.get("redis_version", "?")),
        policy=str(policy) if policy is not None else None,
        maxmemory=int(info.get("maxmemory", 0) or 0),
        used_memory=int(info.get("used_memory", 0) or 0),
        aof=bool(int(info.get("aof_enabled", 0) or 0)),
        aof_fsync=fsync,
        save=_config(server, "save"),
        evicted_keys=int(info.get("evicted_keys", 0) or 0),
        time_s=secs + micros / 1e6,
    )


def eviction_problem(f: ServerFacts) -> str | None:
    """One line naming an evicting policy and the fix, or None for ``noeviction``."""
    if f.policy is None or f.policy == "noeviction":
        return None
    return (f"Redis has maxmemory-policy {f.policy}, which evicts rankduel's keys (W, "
            f"pending impressions, experiments) when memory is full: set "
            f"`maxmemory-policy noeviction` (redis.conf, or CONFIG SET), or "
            f"RANKDUEL_ALLOW_EVICTION=1 to run anyway")


def persistence_problem(f: ServerFacts) -> str | None:
    """One line when the server keeps nothing on disk (no AOF, no RDB schedule), or
    when its AOF fsyncs less than every second."""
    if not f.aof and f.save == "":
        return ("Redis persistence is off (no AOF, save ''): a restart loses every "
                "experiment; run it with --appendonly yes --appendfsync everysec and an "
                "RDB schedule (docs/operations/backup.md)")
    if f.aof and f.aof_fsync == "no":
        return ("Redis AOF has appendfsync no: a crash of the machine loses up to 30 s "
                "of writes; use appendfsync everysec (docs/operations/backup.md)")
    return None


def start_checks(client: Client, allow_eviction: bool) -> tuple[list[str], str | None]:
    """The warnings and the refusal (or None) of ``rankduel serve``/``worker`` for the
    servers of ``client``; an unreachable Redis is a warning (``/readyz`` tells)."""
    warnings: list[str] = []
    try:
        all_facts = [facts(s) for s in nodes(client)]
    except redis.RedisError as exc:
        return [f"could not check Redis at start ({type(exc).__name__}): its eviction "
                f"policy and persistence are unchecked"], None
    for f in all_facts:
        problem = eviction_problem(f)
        if problem and not allow_eviction:
            return warnings, "refusing to start: " + problem
        if problem:
            warnings.append(problem + " (allowed by RANKDUEL_ALLOW_EVICTION)")
        if f.evicted_keys:
            warnings.append(f"Redis has evicted {f.evicted_keys} keys since it started: "
                            f"some of rankduel's state may be gone")
        if (p := persistence_problem(f)) is not None:
            warnings.append(p)
    return list(dict.fromkeys(warnings)), None


def evicted_keys(client: Client) -> int:
    """Keys the servers have evicted since they started (``INFO stats``)."""
    return sum(int(s.info("stats").get("evicted_keys", 0) or 0) for s in nodes(client))


class EvictionCollector:
    """``rankduel_redis_evicted_keys``: keys Redis has evicted since it started, read at
    scrape time (nothing when Redis does not answer: ``/readyz`` says so)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        try:
            n = evicted_keys(self.client)
        except redis.RedisError:
            return
        yield GaugeMetricFamily(
            "rankduel_redis_evicted_keys",
            "Keys Redis has evicted since it started (INFO stats): above 0, rankduel's "
            "state may have lost W, impressions or experiments.", value=n)


__all__ = ["EvictionCollector", "ServerFacts", "evicted_keys", "eviction_problem", "facts", "nodes",
           "persistence_problem", "start_checks"]
