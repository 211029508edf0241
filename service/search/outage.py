"""A search while Redis is down or slow: the search box keeps its results.

rankduel sits in front of production search, so a Redis outage must not become a search
outage. Each API process watches its state store (:class:`StoreWatch`): a thread pings
Redis every :data:`PING_EVERY_S` on a client of its own whose socket timeout is the
search's budget (``RANKDUEL_STORE_BUDGET_MS``, 50 ms by default). The store is **down**
from a refused connection, a search's Redis error, or :data:`SLOW_PINGS` pings in a row
slower than the budget (a socket timeout: a process busy elsewhere does not count as a
slow Redis), and **up** again from the first ping within budget. While it is down a search
makes no Redis call:

* **a placement's search** (:mod:`service.placements.search`) answers 200 with its control
  ranker's list, fetched as a control search is, from the process's last view of the
  placement, with ``"degraded": "store"``, no impression, no token and no page token
  (:func:`control_answer`): nothing is compared, nothing counted, and no click can come
  back for it;
* **an experiment's search** (``?experiment=ID``) answers, by default
  (``fallback=first``), the experiment's first ranker's list the same way, from the
  process's cached snapshot of the experiment; ``fallback=none``, or an experiment this
  process has not seen, answers 503 with ``Retry-After`` (:func:`search_experiment`);
* clicks, ends and outcomes answer 503 with ``Retry-After`` (:mod:`service.app`), and
  ``rankduel.js`` sends them again with backoff within the token's life.

A search that meets a Redis error halfway (Redis died during it) is answered the same way
and marks the store down at once. Every degraded answer counts in
``rankduel_degraded_searches_total{kind}`` (``placement``, ``experiment``, and
``refused`` for a 503).
docs/operations/outages.md tells the operator's side.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from typing import Any

import redis

from service import metrics
from service.errors import BadGateway, Unavailable
from service.rankers.client import RankerFailure
from service.runtime import Runtime
from service.search import serve as searching
from service.search.ranker_health import SearchTiming
from service.store.client import STORE_ERRORS, connect_state
from service.store.records import Ranker

log = logging.getLogger("rankduel.outage")

#: how often the watch pings Redis
PING_EVERY_S = 0.2
#: pings in a row over the budget (socket timeouts) that mark the store down
SLOW_PINGS = 2
#: the ``Retry-After`` of a 503 while the store is down (seconds)
RETRY_AFTER_S = 1
#: the values of ``?fallback=`` of an experiment's search, the default first
FALLBACKS = ("first", "none")


class StoreWatch:
    """One process's view of whether Redis answers within the search's budget."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.budget_s = config.store_budget_ms / 1e3
        self.down_since: float | None = None
        self._slow = 0
        self._started = False
        self._lock = threading.Lock()
        # a forked process (a gunicorn worker) starts its own thread on its first search;
        # held weakly, as the thread holds the watch (:meth:`_run`)
        ref = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: (w := ref()) is not None and w._forked())
        #: ``[period_s, fn, next_at]``: work the watch's thread does while the store is up
        self._tasks: list[list[Any]] = []

    def every(self, period_s: float, fn: Any) -> None:
        """Call ``fn()`` from the watch's thread every ``period_s`` while the store is
        up (e.g. every placement's view read, :mod:`service.placements.search`)."""
        self._tasks.append([period_s, fn, 0.0])

    def up(self) -> bool:
        """Whether a search may use Redis now (starts the watch in this process)."""
        if not self._started:
            self._start()
        return self.down_since is None

    def _forked(self) -> None:
        self._started, self._lock = False, threading.Lock()

    def failed(self, exc: BaseException) -> None:
        """A search's Redis call failed: the store is down until a ping answers."""
        if self.down_since is None:
            self.down_since = time.monotonic()
            log.warning("state store down (%s): placement searches answer their control",
                        type(exc).__name__)

    def _recovered(self) -> None:
        if self.down_since is not None:
            log.warning("state store back after %.2f s", time.monotonic() - self.down_since)
        self.down_since = None

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            threading.Thread(target=StoreWatch._run, args=(weakref.ref(self),),
                             name="rankduel-store-watch", daemon=True).start()

    @staticmethod
    def _run(ref: weakref.ref[StoreWatch]) -> None:
        """The watch's thread: a ping and the due tasks every :data:`PING_EVERY_S`, for as
        long as the watch is in use. It holds the watch weakly, so that the thread ends
        once the app (its runtime) that owns the watch is gone, rather than pinging for
        the life of the process: a process that builds many apps (a test session)
        otherwise keeps one pinging thread per app, and the ones whose Redis is gone
        fail, with a log line, five times a second."""
        watch = ref()
        if watch is None:
            return
        client = connect_state(watch.config, socket_timeout=watch.budget_s,
                               socket_connect_timeout=watch.budget_s)
        try:
            while watch is not None:
                watch._tick(client)
                watch = None  # not held while asleep
                time.sleep(PING_EVERY_S)
                watch = ref()
        finally:
            client.close()

    def _tick(self, client: Any) -> None:
        """One ping, then the tasks that are due while the store is up."""
        self.ping(client)
        now = time.monotonic()
        for task in list(self._tasks):
            if self.down_since is None and now >= task[2]:
                task[2] = now + task[0]
                try:
                    task[1]()
                except Exception as exc:  # the next period tries again
                    log.warning("store watch: %s failed: %s", task[1], exc)

    def ping(self, client: Any) -> None:
        """One ping: within budget, up; refused or failing, down; too slow
        :data:`SLOW_PINGS` times in a row, down."""
        try:
            client.ping()
        except redis.TimeoutError as exc:
            self._slow += 1
            if self._slow >= SLOW_PINGS:
                self.failed(exc)
            return
        except STORE_ERRORS as exc:  # refused, or no node of a cluster answers
            self.failed(exc)
            return
        except Exception:  # never let the watch die
            log.exception("store watch")
            return
        self._slow = 0
        self._recovered()


def watch(rt: Runtime) -> StoreWatch:
    """The process's :class:`StoreWatch` (kept on its runtime)."""
    if rt.outage is None:
        rt.outage = StoreWatch(rt.config)
    return rt.outage


def control_answer(rt: Runtime, placement: str, control: Ranker, q: str, k: int,
                   user: str | None, timing: SearchTiming) -> dict[str, Any]:
    """A placement's control list while the store is down: ``"degraded": "store"``, no
    impression, token or page token; 502 naming the control when it fails."""
    [res], waited = rt.rankers.fetch_timed([control], q, k, experiment="", user=user)
    timing.rankers_s += waited
    if isinstance(res, RankerFailure):
        raise BadGateway(f"the control ranker {control.name!r} of placement {placement!r} "
                         f"did not answer ({res.reason}) while rankduel's state store is "
                         f"down")
    metrics.DEGRADED_SEARCHES.labels("placement").inc()
    return {"impression_id": None, "token": None, "experiment": None,
            "placement": placement, "rankers": [control.name],
            "results": [{**item, "rank": rank} for rank, item in enumerate(res[:k], 1)],
            "degraded": "store"}


def unavailable(what: str) -> Unavailable:
    """The 503 of a request that needs the store while it is down."""
    return Unavailable(f"state store unavailable: {what}; retry",
                       headers={"Retry-After": str(RETRY_AFTER_S)})


def search_experiment(rt: Runtime, exp_id: str, q: str, k: int, user: str | None,
                      timing: SearchTiming, segments: dict[str, str] | None = None,
                      fallback: str = "first") -> dict[str, Any]:
    """``GET /search?experiment=ID``: the experiment's search, or while the store is down
    its first ranker's list (``fallback=first``, the default) or a 503 (``none``)."""
    w = watch(rt)
    if w.up():
        try:
            return searching.search(rt, exp_id, q, k, user, timing, segments=segments)
        except STORE_ERRORS as exc:
            w.failed(exc)
    entry = rt.controller.cached(exp_id) if fallback == "first" else None
    if entry is None:
        metrics.DEGRADED_SEARCHES.labels("refused").inc()
        raise unavailable("this search has no fallback (fallback=none, or an experiment "
                          "this process has not served)")
    first = entry.snapshot.rankers[0]
    [res], waited = rt.rankers.fetch_timed([first], q, k, experiment=exp_id, user=user)
    timing.rankers_s += waited
    if isinstance(res, RankerFailure):
        raise BadGateway(f"ranker {first.name!r}, the fallback of experiment {exp_id!r} "
                         f"while rankduel's state store is down, did not answer")
    metrics.DEGRADED_SEARCHES.labels("experiment").inc()
    return {"impression_id": None, "token": None, "experiment": exp_id,
            "rankers": [first.name],
            "results": [{**item, "rank": rank} for rank, item in enumerate(res[:k], 1)],
            "degraded": "store"}


__all__ = ["FALLBACKS", "RETRY_AFTER_S", "StoreWatch", "control_answer",
           "search_experiment", "unavailable", "watch"]
