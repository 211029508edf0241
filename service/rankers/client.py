"""Calling the rankers: concurrent HTTP fetches, each bounded in time and size.

A ranker is an HTTP endpoint called as ``GET URL?q=TEXT&k=K`` that returns
``{"results": [{"id": ..., ...}, ...]}``, or, with a ``request`` template and a
``response`` mapping, a search engine called in its own shape
(:mod:`service.rankers.template`). :class:`RankerClient` fetches all rankers of a
comparison at once. The process keeps idle keep-alive ``http.client`` connections per
origin, so a steady stream of searches reuses its TCP connections, and a call on one of
them is made by the search's own thread (the requests are sent, then the answers read as
they arrive): no thread hand-off on the request path. Only a call that needs a new
connection goes to a thread pool (the standard library is enough here: no extra
dependency). A ranker that
errs, answers garbage or misses its deadline yields a :class:`RankerFailure` instead of
a list; the caller decides what to serve.

Its limits (time, size, concurrency) are in :mod:`service.rankers`.
"""

from __future__ import annotations

import http.client
import math
import select
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, quote

from service import metrics
from service.rankers import template as ranker_template
from service.rankers.allow_list import RankerPolicy, RankerRefused
from service.rankers.connections import (
    STALE,
    Failed,
    HttpStatus,
    IdleConnections,
    Inline,
    Overloaded,
    Request,
    TooLarge,
    Watchdog,
    split_origin,
)
from service.rankers.http_response import RankerResponse
from service.rankers.parsing import parse_results
from service.store.records import Ranker


@dataclass(frozen=True)
class RankerFailure:
    """Why a ranker gave no list: ``reason`` is a short label (timeout, http_503, ...);
    ``blame`` is False when the failure is not the ranker's (our concurrency cap)."""

    reason: str
    detail: str = ""
    blame: bool = True


def _target(parts: SplitResult, q: str, k: int) -> str:
    path = parts.path or "/"
    query = f"q={quote(q, safe='')}&k={int(k)}"
    if parts.query:
        query = f"{parts.query}&{query}"
    return f"{path}?{query}"


class RankerClient:
    """Fetch several rankers concurrently.

    A call whose origin has an idle keep-alive connection is made by the search's own
    thread: every such request is sent first, then the answers are read as they arrive
    (one ``poll`` over their sockets), so the calls overlap without a thread hand-off.
    A call that needs a new connection (the first to an origin, one more than the idle
    ones, or a retry after the server closed an idle one) goes to a thread pool, which
    connects (name resolution, connect, TLS, the allow-list check) under the same
    deadline, as all calls did before; its connection then joins the idle ones. The
    watchdog bounds both kinds by their deadline.

    Parameters
    ----------
    max_workers
        Threads for outbound calls that need a new connection (per process).
    per_ranker
        Fetches one ranker URL may have in flight at once (per process; default half the
        pool).
    max_bytes, max_results
        The most body bytes and results read from one answer.
    policy
        The allow-list every new connection is checked against
        (:mod:`service.rankers.allow_list`); None for none (the API always passes one).
    """

    def __init__(self, max_workers: int = 64, *, per_ranker: int | None = None,
                 max_bytes: int = 1 << 20, max_results: int = 1000,
                 policy: RankerPolicy | None = None) -> None:
        self.policy = policy
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ranker")
        self._idle = IdleConnections()
        self._watchdog = Watchdog()
        self._per_ranker = per_ranker or max(1, max_workers // 2)
        self._inflight: dict[str, int] = {}
        self._lock = threading.Lock()
        self.max_bytes, self.max_results = max_bytes, max_results

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._idle.close()

    def connect(self, req: Request, timeout: float) -> http.client.HTTPConnection:
        """A new connection to ``req``'s origin, checked against the allow-list."""
        parts = req.parts
        cls = (http.client.HTTPSConnection if parts.scheme == "https"
               else http.client.HTTPConnection)
        conn = cls(parts.hostname, parts.port, timeout=timeout)
        conn.response_class = RankerResponse
        conn.connect()
        if self.policy is not None:
            try:
                self.policy.check_connected(parts.hostname or "", conn.sock)
            except RankerRefused:
                conn.close()
                raise
        return conn

    def prepare(self, ranker: Ranker, q: str, k: int, user: str | None = None,
                 offset: int = 0) -> Request:
        parts, origin = split_origin(ranker.url)
        template = ranker.request
        method, body = "GET", None
        headers = {"Accept": "application/json"}
        if template is None:
            target = _target(parts, q, k)
        else:
            target = ranker_template.request_target(parts.path, parts.query, template,
                                                    q=q, k=k, user=user, offset=offset)
            headers.update(ranker_template.request_headers(template, q=q, k=k, user=user,
                                                           offset=offset))
            method = template.get("method", "GET")
            body = ranker_template.request_body(template, q=q, k=k, user=user, offset=offset)
            if body is not None:
                headers["Content-Type"] = "application/json"
        return Request(parts, origin, method, target, headers, body)

    def _read(self, req: Request, conn: http.client.HTTPConnection, ranker: Ranker,
              deadline: float) -> list[dict[str, Any]]:
        """Read the answer to the request just sent on ``conn`` (at most ``max_bytes``),
        give the connection back when it was read to its end, and parse it. Raises
        what :meth:`fetch_timed` turns into a :class:`RankerFailure` (a timeout past the
        deadline: the watchdog's cut ends a body that its close delimits as if whole)."""
        try:
            resp = conn.getresponse()
            length = resp.getheader("Content-Length")
            if length and length.isdigit() and int(length) > self.max_bytes:
                raise TooLarge(int(length))
            answer = resp.read(self.max_bytes + 1)
            if len(answer) > self.max_bytes:
                raise TooLarge(len(answer))
        except BaseException:
            conn.close()
            raise
        if resp.isclosed():
            self._idle.give(req.origin, conn)
        else:  # a body we did not read to its end
            conn.close()
        if time.monotonic() > deadline:
            raise TimeoutError("deadline passed")
        if resp.status != 200:
            raise HttpStatus(resp.status)
        return parse_results(answer, self.max_results, ranker.response)

    def _fetch(self, ranker: Ranker, req: Request, deadline: float,
               fresh: bool = False) -> list[dict[str, Any]]:
        """One call on a pool thread: an idle connection (unless ``fresh``) or a new one."""
        for attempt in range(2):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("deadline passed")
            conn = None if fresh or attempt else self._idle.take(req.origin)
            reused = conn is not None
            token = None
            try:
                if conn is None:
                    conn = self.connect(req, remaining)
                conn.sock.settimeout(remaining)
                token = self._watchdog.watch(deadline, conn.sock)
                try:
                    conn.request(req.method, req.target, body=req.body, headers=req.headers)
                except BaseException:
                    conn.close()
                    raise
                results = self._read(req, conn, ranker, deadline)
            except STALE:
                if reused and attempt == 0 and time.monotonic() < deadline:
                    continue  # a keep-alive connection the server closed
                raise
            finally:
                if token is not None:
                    self._watchdog.cancel(token)
            return results  # read within the deadline (_read)
        raise AssertionError("unreachable")

    def _timed_fetch(self, ranker: Ranker, req: Request, deadline: float,
                     fresh: bool = False) -> tuple[list[dict[str, Any]], float]:
        t0 = time.perf_counter()
        return self._fetch(ranker, req, deadline, fresh), time.perf_counter() - t0

    def _send_inline(self, index: int, req: Request, deadline: float,
                     timeout_s: float) -> Inline | None:
        """Send ``req`` on an idle connection from this thread; None when there is none
        (or the one taken turned out closed by its server: the pool retries)."""
        conn = self._idle.take(req.origin)
        if conn is None:
            return None
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self._idle.give(req.origin, conn)
            raise TimeoutError("deadline passed")
        t0 = time.perf_counter()
        token = self._watchdog.watch(deadline, conn.sock)
        try:
            # each socket operation may wait up to the call's whole timeout (the watchdog
            # ends the call at its deadline): changed only when shorter, as settimeout
            # is a system call, made without the GIL, that a busy process pays for
            if (conn.sock.gettimeout() or 0.0) < remaining:
                conn.sock.settimeout(timeout_s)
            conn.request(req.method, req.target, body=req.body, headers=req.headers)
        except STALE:
            self._watchdog.cancel(token)
            conn.close()
            return None
        except BaseException:
            self._watchdog.cancel(token)
            conn.close()
            raise
        return Inline(index, req, conn, deadline, t0, token)

    def _admit(self, url: str) -> bool:
        with self._lock:
            n = self._inflight.get(url, 0)
            if n >= self._per_ranker:
                return False
            self._inflight[url] = n + 1
            return True

    def _release(self, url: str, _fut: Future | None = None) -> None:
        with self._lock:
            n = self._inflight.get(url, 1) - 1
            if n:
                self._inflight[url] = n
            else:
                self._inflight.pop(url, None)

    def fetch_all(
        self, rankers: Sequence[Ranker], q: str, k: int, *, experiment: str = "",
        observe: bool = True, user: str | None = None, offset: int = 0,
    ) -> list[list[dict[str, Any]] | RankerFailure]:
        """Fetch every ranker's list concurrently; a failure in place of a list when it
        errs or misses its ``timeout_ms``. Never raises for a ranker's fault. ``user``
        fills a template's ``{user}`` (empty when None), ``offset`` its ``{offset}`` (the
        results already shown, on a next page: :mod:`service.search.paging`)."""
        return self.fetch_timed(rankers, q, k, experiment=experiment, observe=observe,
                                user=user, offset=offset)[0]

    def fetch_timed(
        self, rankers: Sequence[Ranker], q: str, k: int, *, experiment: str = "",
        observe: bool = True, user: str | None = None, offset: int = 0,
    ) -> tuple[list[list[dict[str, Any]] | RankerFailure], float]:
        """:meth:`fetch_all`, and the seconds of its slowest ranker call: each call is
        timed from its request to its parsed answer (in this thread, or inside its pool
        task), a failed one until it was given up. That is the rankers' share of a
        search's time (``Server-Timing: rankers``)."""
        start = time.perf_counter()
        now = time.monotonic()
        # per ranker: (results, elapsed), an exception, a pool future, or an inline call
        slots: list[Any] = [None] * len(rankers)
        inline: list[Inline] = []
        for i, r in enumerate(rankers):
            if not self._admit(r.url):
                slots[i] = Overloaded()
                continue
            deadline = now + r.timeout_s
            try:
                req = self.prepare(r, q, k, user, offset)
                call = self._send_inline(i, req, deadline, r.timeout_s)
            except Exception as exc:
                self._release(r.url)
                slots[i] = exc
                continue
            if call is not None:
                inline.append(call)
                continue
            fut = self._pool.submit(self._timed_fetch, r, req, deadline)
            fut.add_done_callback(lambda f, u=r.url: self._release(u, f))
            slots[i] = fut
        if inline:
            self._receive(rankers, inline, slots)
        out: list[list[dict[str, Any]] | RankerFailure] = []
        slowest = 0.0
        for r, slot in zip(rankers, slots, strict=True):
            elapsed = None
            given_up = None  # when a call made from this thread failed
            try:
                if isinstance(slot, Failed):
                    given_up = slot.at
                    raise slot.exc
                if isinstance(slot, BaseException):
                    raise slot
                if isinstance(slot, Future):
                    remaining = start + r.timeout_s - time.perf_counter()
                    slot = slot.result(timeout=max(remaining, 0.0))
                results, elapsed = slot
                out.append(results)
            except Exception as exc:
                out.append(self._failure(exc, r, (given_up or time.perf_counter()) - start))
            result = out[-1]
            if elapsed is None:  # failed: time until we gave up on it
                elapsed = (given_up or time.perf_counter()) - start
                if (result.reason in ("connection", "error")
                        and elapsed >= r.timeout_s):
                    # the watchdog cut the socket at the deadline, mid-read
                    result = out[-1] = RankerFailure("timeout", f"no answer within "
                                                     f"{r.timeout_ms} ms")
            slowest = max(slowest, elapsed)
            if not observe:
                continue
            metrics.labelled(metrics.RANKER_LATENCY, experiment, r.name).observe(elapsed)
            if isinstance(result, RankerFailure):
                metrics.RANKER_FAILURES.labels(experiment, r.name, result.reason).inc()
        return out, slowest

    def _receive(self, rankers: Sequence[Ranker], inline: list[Inline],
                 slots: list[Any]) -> None:
        """Read the answers of the calls sent from this thread, in the order they arrive
        (each timed to its own answer), into ``slots``. A call whose idle connection
        turns out closed by its server is sent again on a new one, by the pool.

        Every system call here releases the GIL, and under load each one can wait for
        it again up to the switch interval: so there are few of them (one ``poll`` per
        answer but the last, which is read directly)."""
        poller = select.poll()
        waiting = {call.conn.sock.fileno(): call for call in inline}
        for fd in waiting:
            poller.register(fd, select.POLLIN | select.POLLPRI)
        while waiting:
            if len(waiting) == 1:  # the last one: read it (the watchdog keeps its deadline)
                fd, call = waiting.popitem()
                self._finish(rankers, call, slots)
                return
            wait = min(c.deadline for c in waiting.values()) - time.monotonic()
            ready = poller.poll(max(0, math.ceil(wait * 1000))) if wait > 0 else []
            if not ready:  # past a deadline with no answer: those calls time out
                now = time.monotonic()
                for fd, call in list(waiting.items()):
                    if call.deadline <= now:
                        poller.unregister(fd)
                        del waiting[fd]
                        self._finish(rankers, call, slots, TimeoutError("deadline passed"))
                continue
            for fd, _ in ready:
                call = waiting.pop(fd, None)
                if call is not None:
                    poller.unregister(fd)
                    self._finish(rankers, call, slots)

    def _finish(self, rankers: Sequence[Ranker], call: Inline, slots: list[Any],
                failure: BaseException | None = None) -> None:
        r = rankers[call.index]
        try:
            if failure is not None:
                call.conn.close()
                raise failure
            results = self._read(call.req, call.conn, r, call.deadline)
            slots[call.index] = (results, time.perf_counter() - call.t0)
        except STALE as exc:
            if time.monotonic() < call.deadline:  # the server closed the idle connection
                fut = self._pool.submit(self._timed_fetch, r, call.req, call.deadline, True)
                fut.add_done_callback(lambda f, u=r.url: self._release(u, f))
                slots[call.index] = fut
                return
            slots[call.index] = Failed(exc, time.perf_counter())
        except Exception as exc:
            slots[call.index] = Failed(exc, time.perf_counter())
        finally:
            self._watchdog.cancel(call.token)
        self._release(r.url)

    def _failure(self, exc: Exception, r: Ranker, waited: float) -> RankerFailure:
        """The :class:`RankerFailure` for what a call raised after ``waited`` seconds."""
        try:
            raise exc
        except Overloaded:
            return RankerFailure("overloaded", "too many fetches in flight to this ranker",
                                 blame=False)
        except TimeoutError:
            return RankerFailure("timeout", f"no answer within {r.timeout_ms} ms")
        except HttpStatus as e:
            return RankerFailure(f"http_{e.status}", f"HTTP {e.status}")
        except RankerRefused as e:
            return RankerFailure("refused", str(e), blame=False)  # our configuration
        except ranker_template.MissingSecret as e:
            return RankerFailure("missing_secret", str(e))
        except TooLarge as e:
            return RankerFailure("too_large", f"body over {self.max_bytes} bytes ({e.size})")
        except (ValueError, UnicodeDecodeError) as e:
            return RankerFailure("bad_response", str(e))
        except OSError as e:
            reason = "timeout" if isinstance(e, TimeoutError) else "connection"
            if waited >= r.timeout_s:
                reason = "timeout"  # the watchdog closed it at the deadline
            return RankerFailure(reason, str(e) or type(e).__name__)
        except Exception as e:  # an upstream fault must never fail the request
            return RankerFailure("error", f"{type(e).__name__}: {e}")


