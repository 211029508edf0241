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

    def watches() -> int:
        return sum(t.name == "rankduel-store-watch" for t in threading.enumerate())

    before = watches()
    held = [StoreWatch(Config(redis_url=f"unix://{tmp_path}/no-redis.sock"))]
    assert held[0].up()  # starts the thread; nothing listens: its pings fail
    wait_for(lambda: held[0].down_since is not None, 10, "the first ping to fail")
    assert watches() == before + 1
    held.clear()  # the app that owned it is gone
    gc.collect()
    wait_for(lambda: watches() == before, 10, "the watch's thread to end")
