"""Calling the rankers: concurrent HTTP fetches, each bounded in time and size.

A ranker is an HTTP endpoint called as ``GET URL?q=TEXT&k=K`` that returns
``{"results": [{"id": ..., ...}, ...]}``, or, with a ``request`` template and a
``response`` mapping, a search engine called in its own shape
(:mod:`service.ranker_template`). :class:`RankerClient` fetches all rankers of a
comparison at once. The process keeps idle keep-alive ``http.client`` connections per
origin, so a steady stream of searches reuses its TCP connections, and a call on one of
them is made by the search's own thread (the requests are sent, then the answers read as
they arrive): no thread hand-off on the request path. Only a call that needs a new
connection goes to a thread pool (the standard library is enough here: no extra
dependency). A ranker that
errs, answers garbage or misses its deadline yields a :class:`RankerFailure` instead of
a list; the caller decides what to serve.

Limits, so that one ranker cannot hurt anything but its own duels:

* **time**: a ranker's ``timeout_ms`` bounds the whole request (connect, headers, body),
  not each read: a watchdog shuts the socket down at the deadline, so a ranker that
  trickles bytes frees its thread on time;
* **size**: at most ``max_bytes`` of body and ``max_results`` results are read; an id
  longer than ``MAX_DOC_ID_CHARS`` makes the answer invalid;
* **concurrency**: the fetches in flight to one ranker URL are capped (``per_ranker``, half
  the pool by default), whichever thread makes them; a fetch over the cap fails at once
  as ``overloaded`` (counted, but no forfeit and no strike: a burst of traffic is not the
  ranker's fault). With the deadlines, a slow ranker holds at most its cap of pool
  threads for at most its timeout, so the rankers of other experiments always find
  threads.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import http.client
import json
import math
import select
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, quote, urlsplit

from service import metrics, ranker_template
from service.limits import MAX_DOC_ID_CHARS
from service.ranker_http import RankerResponse
from service.ranker_policy import RankerPolicy, RankerRefused
from service.records import Ranker


@dataclass(frozen=True)
class RankerFailure:
    """Why a ranker gave no list: ``reason`` is a short label (timeout, http_503, ...);
    ``blame`` is False when the failure is not the ranker's (our concurrency cap)."""

    reason: str
    detail: str = ""
    blame: bool = True


def validate_url(url: object) -> str:
    """Return ``url`` if it is an absolute http(s) URL, else raise ``ValueError``."""
    if not isinstance(url, str) or not url:
        raise ValueError("url must be a non-empty string")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url must be an absolute http(s) URL, got {url!r}")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"url has an invalid port: {url!r}") from None
    return url


def _target(parts: SplitResult, q: str, k: int) -> str:
    path = parts.path or "/"
    query = f"q={quote(q, safe='')}&k={int(k)}"
    if parts.query:
        query = f"{parts.query}&{query}"
    return f"{path}?{query}"


def parse_results(body: bytes, max_results: int = 1000,
                  response: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The ranker's result list (its first ``max_results`` entries), each a dict with a
    string-able ``id`` of at most :data:`MAX_DOC_ID_CHARS` characters; with ``response``,
    the engine's answer mapped by it (:func:`service.ranker_template.map_results`)."""
    data = json.loads(body)
    if response is not None:
        items = ranker_template.map_results(data, response)
    elif not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError('response is not {"results": [...]}')
    else:
        items = data["results"]
    out = []
    seen = set()
    for item in items[:max_results]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str | int):
            raise ValueError("every result needs an id (string or integer)")
        if isinstance(item["id"], bool):
            raise ValueError("every result needs an id (string or integer)")
        key = str(item["id"])
        if len(key) > MAX_DOC_ID_CHARS:
            raise ValueError(f"a result id is longer than {MAX_DOC_ID_CHARS} characters")
        if key in seen:  # a ranker listing a document twice: keep the first
            continue
        seen.add(key)
        out.append(item)
    return out


class _Watchdog:
    """Shuts down sockets whose request deadline has passed (one thread per process)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, socket.socket]] = []
        self._live: set[int] = set()
        self._next = 0
        self._cond = threading.Condition()
        threading.Thread(target=self._run, name="ranker-watchdog", daemon=True).start()

    def watch(self, deadline: float, sock: socket.socket) -> int:
        with self._cond:
            self._next += 1
            heapq.heappush(self._heap, (deadline, self._next, sock))
            self._live.add(self._next)
            if self._heap[0][1] == self._next:  # the earliest deadline: wake the loop
                self._cond.notify()
            return self._next

    def cancel(self, token: int) -> None:
        with self._cond:
            self._live.discard(token)

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                _, token, sock = heapq.heappop(self._heap)
                self._live.discard(token)
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


Origin = tuple[str, str, int | None]  # scheme, host, port


@functools.lru_cache(maxsize=4096)
def _split(url: str) -> tuple[SplitResult, Origin]:
    """``url``'s parts and origin, parsed once per URL (a few per experiment)."""
    parts = urlsplit(url)
    return parts, (parts.scheme, parts.hostname or "", parts.port)


@dataclass
class _Request:
    """One ranker call, ready to send: its origin, method, target, headers and body."""

    parts: SplitResult
    origin: Origin
    method: str
    target: str
    headers: dict[str, str]
    body: bytes | None


@dataclass(eq=False)
class _Inline:
    """A call sent on an idle keep-alive connection by the search's own thread, waiting
    for its answer (:meth:`RankerClient.fetch_timed`)."""

    index: int
    req: _Request
    conn: http.client.HTTPConnection
    deadline: float
    t0: float
    token: int


class _IdleConnections:
    """The process's idle keep-alive connections to rankers, per origin, shared by its
    threads: a connection is taken for one exchange and given back once its answer was
    read to the end."""

    def __init__(self, per_origin: int = 64) -> None:
        self.per_origin = per_origin
        self._idle: dict[tuple, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def take(self, origin: tuple) -> http.client.HTTPConnection | None:
        with self._lock:
            idle = self._idle.get(origin)
            return idle.pop() if idle else None

    def give(self, origin: tuple, conn: http.client.HTTPConnection) -> None:
        if conn.sock is None:  # the server ended it (Connection: close)
            return
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self.per_origin:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for c in conns:
            c.close()


#: what a reused keep-alive connection raises when its server closed it while idle
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


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
        (:mod:`service.ranker_policy`); None for none (the API always passes one).
    """

    def __init__(self, max_workers: int = 64, *, per_ranker: int | None = None,
                 max_bytes: int = 1 << 20, max_results: int = 1000,
                 policy: RankerPolicy | None = None) -> None:
        self.policy = policy
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ranker")
        self._idle = _IdleConnections()
        self._watchdog = _Watchdog()
        self._per_ranker = per_ranker or max(1, max_workers // 2)
        self._inflight: dict[str, int] = {}
        self._lock = threading.Lock()
        self.max_bytes, self.max_results = max_bytes, max_results

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._idle.close()

    def _connect(self, req: _Request, timeout: float) -> http.client.HTTPConnection:
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

    def _prepare(self, ranker: Ranker, q: str, k: int, user: str | None = None,
                 offset: int = 0) -> _Request:
        parts, origin = _split(ranker.url)
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
        return _Request(parts, origin, method, target, headers, body)

    def _read(self, req: _Request, conn: http.client.HTTPConnection,
              ranker: Ranker) -> list[dict[str, Any]]:
        """Read the answer to the request just sent on ``conn`` (at most ``max_bytes``),
        give the connection back when it was read to its end, and parse it. Raises
        what :meth:`fetch_timed` turns into a :class:`RankerFailure`."""
        try:
            resp = conn.getresponse()
            length = resp.getheader("Content-Length")
            if length and length.isdigit() and int(length) > self.max_bytes:
                raise _TooLarge(int(length))
            answer = resp.read(self.max_bytes + 1)
            if len(answer) > self.max_bytes:
                raise _TooLarge(len(answer))
        except BaseException:
            conn.close()
            raise
        if resp.isclosed():
            self._idle.give(req.origin, conn)
        else:  # a body we did not read to its end
            conn.close()
        if resp.status != 200:
            raise _HttpStatus(resp.status)
        return parse_results(answer, self.max_results, ranker.response)

    def _fetch(self, ranker: Ranker, req: _Request, deadline: float,
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
                    conn = self._connect(req, remaining)
                conn.sock.settimeout(remaining)
                token = self._watchdog.watch(deadline, conn.sock)
                try:
                    conn.request(req.method, req.target, body=req.body, headers=req.headers)
                except BaseException:
                    conn.close()
                    raise
                results = self._read(req, conn, ranker)
            except _STALE:
                if reused and attempt == 0 and time.monotonic() < deadline:
                    continue  # a keep-alive connection the server closed
                raise
            finally:
                if token is not None:
                    self._watchdog.cancel(token)
            if time.monotonic() > deadline:
                raise TimeoutError("deadline passed")
            return results
        raise AssertionError("unreachable")

    def _timed_fetch(self, ranker: Ranker, req: _Request, deadline: float,
                     fresh: bool = False) -> tuple[list[dict[str, Any]], float]:
        t0 = time.perf_counter()
        return self._fetch(ranker, req, deadline, fresh), time.perf_counter() - t0

    def _send_inline(self, index: int, req: _Request, deadline: float,
                     timeout_s: float) -> _Inline | None:
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
        except _STALE:
            self._watchdog.cancel(token)
            conn.close()
            return None
        except BaseException:
            self._watchdog.cancel(token)
            conn.close()
            raise
        return _Inline(index, req, conn, deadline, t0, token)

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
        results already shown, on a next page: :mod:`service.paging`)."""
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
        inline: list[_Inline] = []
        for i, r in enumerate(rankers):
            if not self._admit(r.url):
                slots[i] = _Overloaded()
                continue
            deadline = now + r.timeout_s
            try:
                req = self._prepare(r, q, k, user, offset)
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
                if isinstance(slot, _Failed):
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
            metrics.RANKER_LATENCY.labels(experiment, r.name).observe(elapsed)
            if isinstance(result, RankerFailure):
                metrics.RANKER_FAILURES.labels(experiment, r.name, result.reason).inc()
        return out, slowest

    def _receive(self, rankers: Sequence[Ranker], inline: list[_Inline],
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

    def _finish(self, rankers: Sequence[Ranker], call: _Inline, slots: list[Any],
                failure: BaseException | None = None) -> None:
        r = rankers[call.index]
        try:
            if failure is not None:
                call.conn.close()
                raise failure
            results = self._read(call.req, call.conn, r)
            if time.monotonic() > call.deadline:
                raise TimeoutError("deadline passed")
            slots[call.index] = (results, time.perf_counter() - call.t0)
        except _STALE as exc:
            if time.monotonic() < call.deadline:  # the server closed the idle connection
                fut = self._pool.submit(self._timed_fetch, r, call.req, call.deadline, True)
                fut.add_done_callback(lambda f, u=r.url: self._release(u, f))
                slots[call.index] = fut
                return
            slots[call.index] = _Failed(exc, time.perf_counter())
        except Exception as exc:
            slots[call.index] = _Failed(exc, time.perf_counter())
        finally:
            self._watchdog.cancel(call.token)
        self._release(r.url)

    def _failure(self, exc: Exception, r: Ranker, waited: float) -> RankerFailure:
        """The :class:`RankerFailure` for what a call raised after ``waited`` seconds."""
        try:
            raise exc
        except _Overloaded:
            return RankerFailure("overloaded", "too many fetches in flight to this ranker",
                                 blame=False)
        except TimeoutError:
            return RankerFailure("timeout", f"no answer within {r.timeout_ms} ms")
        except _HttpStatus as e:
            return RankerFailure(f"http_{e.status}", f"HTTP {e.status}")
        except RankerRefused as e:
            return RankerFailure("refused", str(e))
        except ranker_template.MissingSecret as e:
            return RankerFailure("missing_secret", str(e))
        except _TooLarge as e:
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


class _Overloaded(Exception):
    pass


@dataclass(frozen=True)
class _Failed:
    """A call made from the search's thread that failed, and when (``perf_counter``)."""

    exc: Exception
    at: float


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


class _HttpStatus(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
