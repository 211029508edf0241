"""The one place a Redis client for rankduel's state is built: one server or a cluster.

``REDIS_URL`` names a single Redis (``redis://[:password@]host:port/db``) unless
``RANKDUEL_REDIS_CLUSTER=1``: then it names one or more nodes of a Redis Cluster,
``redis://[:password@]host:port[,host:port...]`` (any node will do; more give the client
somewhere to start when one is down), and the client is redis-py's ``RedisCluster``,
which routes each command to the shard owning its key's slot and follows MOVED/ASK
redirections after a failover or a resharding. rankduel's transactions and scripts only
touch the keys of one experiment, which share its hash tag (:mod:`service.store.keys`), so
they run on one shard. The Celery broker is never a cluster (``RANKDUEL_BROKER_URL``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.cluster import ClusterNode, RedisCluster

#: a client of either kind (they share the command interface rankduel uses)
Client = redis.Redis | RedisCluster

#: what a failing state store raises: every ``redis.RedisError``, and the cluster client's
#: ``RedisClusterException``, which is not one (``RedisClusterUnreachableError`` when no
#: node of the cluster answers)
STORE_ERRORS: tuple[type[Exception], ...] = (redis.RedisError,
                                             redis.exceptions.RedisClusterException)
#: the unreachable ones among them: the store is down, not refusing a command
UNREACHABLE: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError,
                                            redis.exceptions.RedisClusterUnreachableError)


class TaggedCluster(RedisCluster):
    """``RedisCluster`` that routes a script by its first key.

    Every script rankduel runs takes keys of one experiment, all under its hash tag; the
    stock client computes the slot of each of them (a credit batch passes a thousand)
    to check they agree, which the server checks anyway (a script whose keys span slots
    is refused with CROSSSLOT)."""

    def determine_slot(self, *args):
        if (len(args) > 3 and str(args[0]).upper() in ("EVALSHA", "EVAL")
                and int(args[2]) > 1):
            return self.keyslot(args[3])
        return super().determine_slot(*args)


def cluster_nodes(url: str) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The ``(host, port)`` list and the connection options (password, username, TLS)
    of a cluster URL.

    >>> cluster_nodes("redis://:pw@10.0.0.1:7000,10.0.0.2:7001")
    ([('10.0.0.1', 7000), ('10.0.0.2', 7001)], {'password': 'pw'})
    """
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise ValueError(f"a cluster URL is redis://host:port[,host:port...], got {url!r}")
    creds, _, hosts = parts.netloc.rpartition("@")
    options: dict[str, Any] = {}
    if creds:
        user, _, password = creds.partition(":")
        if user:
            options["username"] = unquote(user)
        if password:
            options["password"] = unquote(password)
    if parts.scheme == "rediss":
        options["ssl"] = True
    nodes = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"cluster node {item!r} must be host:port (in {url!r})")
        nodes.append((host.strip("[]"), int(port)))
    if parts.path not in ("", "/", "/0"):
        raise ValueError("a Redis Cluster has database 0 only: drop the /db from REDIS_URL")
    return nodes, options


def connect(url: str, *, cluster: bool = False, **options: Any) -> Client:
    """A client of ``url`` (``options``: socket timeouts, ``health_check_interval`` ...)."""
    if not cluster:
        if "," in urlsplit(url).netloc:
            raise ValueError("REDIS_URL lists several hosts: set RANKDUEL_REDIS_CLUSTER=1 "
                             "for a Redis Cluster")
        return redis.Redis.from_url(url, **options)
    nodes, auth = cluster_nodes(url)
    return TaggedCluster(startup_nodes=[ClusterNode(h, p) for h, p in nodes],
                         **auth, **options)


def connect_state(config, **options: Any) -> Client:
    """The client of the configured state store (``REDIS_URL``,
    ``RANKDUEL_REDIS_CLUSTER``)."""
    return connect(config.redis_url, cluster=config.redis_cluster, **options)
