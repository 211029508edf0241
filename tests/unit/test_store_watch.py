"""The pure parts of issue 49's checks: what the store watch makes of its pings
(service/search/outage.py) and what counts as an evicting or non-persistent Redis
(service/store/server_checks.py)."""

from __future__ import annotations

import redis

from service.config import Config
from service.search.outage import SLOW_PINGS, StoreWatch
from service.store.server_checks import ServerFacts, eviction_problem, persistence_problem


class Pings:
    def __init__(self, *answers) -> None:
        self.answers = list(answers)

    def ping(self) -> bool:
        a = self.answers.pop(0)
        if isinstance(a, Exception):
            raise a
        return True


def test_a_refused_connection_is_down_at_once_and_a_ping_brings_it_back():
    w = StoreWatch(Config())
    client = Pings(redis.ConnectionError("refused"), True)
    w.ping(client)
    assert w.down_since is not None
    w.ping(client)
    assert w.down_since is None


def test_slow_pings_in_a_row_are_down_one_is_not():
    w = StoreWatch(Config(store_budget_ms=50))
    assert w.budget_s == 0.05
    client = Pings(redis.TimeoutError(), True, *[redis.TimeoutError()] * SLOW_PINGS)
    w.ping(client)
    assert w.down_since is None  # one slow ping: a busy moment
    w.ping(client)
    for _ in range(SLOW_PINGS):
        w.ping(client)
    assert w.down_since is not None


def test_an_unreachable_cluster_is_down_and_a_request_answers_503():
    # no node of a Redis Cluster answers: redis-py raises RedisClusterUnreachableError,
    # which is no RedisError; the watch logged a traceback five times a second instead
    # of marking the store down, and a request answered 500
    unreachable = redis.exceptions.RedisClusterUnreachableError("no node answers")
    w = StoreWatch(Config())
    w.ping(Pings(unreachable))
    assert w.down_since is not None

    from service.app import create_app

    app = create_app(Config(redis_url="redis://127.0.0.1:1/0", admin_token="a" * 24,
                            secret_key="s" * 24))

    @app.get("/cluster-gone")
    def gone():
        raise unreachable

    resp = app.test_client().get("/cluster-gone")
    assert resp.status_code == 503 and "state store unavailable" in resp.get_json()["error"]
    assert resp.headers["Retry-After"]


def test_a_search_error_marks_it_down():
    w = StoreWatch(Config())
    w.failed(redis.ConnectionError("x"))
    assert w.down_since is not None


def _facts(**kw) -> ServerFacts:
    base = dict(version="7.2", policy="noeviction", maxmemory=0, used_memory=1,
                aof=True, aof_fsync="everysec", save="3600 1", evicted_keys=0, time_s=0.0)
    return ServerFacts(**{**base, **kw})


def test_what_is_an_evicting_or_forgetful_redis():
    assert eviction_problem(_facts()) is None
    assert eviction_problem(_facts(policy=None)) is None  # CONFIG refused: unknown
    for policy in ("allkeys-lru", "volatile-ttl", "allkeys-random"):
        line = eviction_problem(_facts(policy=policy))
        assert policy in line and "noeviction" in line and "RANKDUEL_ALLOW_EVICTION=1" in line
        assert "\n" not in line
    assert persistence_problem(_facts()) is None
    assert persistence_problem(_facts(aof=False)) is None  # RDB alone: snapshots
    assert "save ''" in persistence_problem(_facts(aof=False, save=""))
    assert "appendfsync no" in persistence_problem(_facts(aof_fsync="no"))


def test_the_watch_thread_ends_with_its_watch(tmp_path):
    # a process that builds many apps (a test session) kept one thread per app pinging
    # for ever; the thread holds its watch weakly and ends once the watch is gone
    import gc
    import threading

    from helpers.wait import wait_for

    def watches() -> set[threading.Thread]:
        return {t for t in threading.enumerate() if t.name == "rankduel-store-watch"}

    before = watches()
    held = [StoreWatch(Config(redis_url=f"unix://{tmp_path}/no-redis.sock"))]
    held[0].up()  # starts the thread; nothing listens: its pings fail (maybe already)
    wait_for(lambda: held[0].down_since is not None, 10, "the first ping to fail")
    [thread] = watches() - before  # (other tests' watches may start and end meanwhile)
    held.clear()  # the app that owned it is gone
    gc.collect()
    wait_for(lambda: not thread.is_alive(), 10, "the watch's thread to end")
