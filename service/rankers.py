"""Calling the rankers: concurrent HTTP fetches, each bounded in time and size.

A ranker is an HTTP endpoint called as ``GET URL?q=TEXT&k=K`` that returns
``{"results": [{"id": ..., ...}, ...]}``, or, with a ``request`` template and a
``response`` mapping, a search engine called in its own shape
(:mod:`service.ranker_template`). :class:`RankerClient` fetches all rankers of a
comparison at once on a thread pool; each thread keeps one persistent
``http.client`` connection per host, so a steady stream of searches reuses its TCP
connections (the standard library is enough here: no extra dependency). A ranker that
errs, answers garbage or misses its deadline yields a :class:`RankerFailure` instead of
a list; the caller decides what to serve.

Limits, so that one ranker cannot hurt anything but its own duels:

* **time**: a ranker's ``timeout_ms`` bounds the whole request (connect, headers, body),
  not each read: a watchdog shuts the socket down at the deadline, so a ranker that
  trickles bytes frees its thread on time;
* **size**: at most ``max_bytes`` of body and ``max_results`` results are read; an id
  longer than ``MAX_DOC_ID_CHARS`` makes the answer invalid;
* **concurrency**: the fetches in flight to one ranker URL are capped (``per_ranker``, half
  the pool by default); a fetch over the cap fails at once as ``overloaded`` (counted,
  but no forfeit and no strike: a burst of traffic is not the ranker's fault). With the
  deadlines, a slow ranker holds at most its cap of threads for at most its timeout, so
  the rankers of other experiments always find threads.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import json
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


class RankerClient:
    """Fetch several rankers concurrently.

    Parameters
    ----------
    max_workers
        Threads for outbound calls (per process).
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
        self._local = threading.local()
        self._watchdog = _Watchdog()
        self._per_ranker = per_ranker or max(1, max_workers // 2)
        self._inflight: dict[str, int] = {}
        self._lock = threading.Lock()
        self.max_bytes, self.max_results = max_bytes, max_results

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _conn(self, parts: SplitResult, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        key = (parts.scheme, parts.hostname, parts.port)
        conn = conns.get(key)
        reused = conn is not None and conn.sock is not None
        if conn is None:
            https = parts.scheme == "https"
            cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
            conn = cls(parts.hostname, parts.port, timeout=timeout)
            conns[key] = conn
        conn.timeout = timeout
        if conn.sock is None:
            conn.connect()
            if self.policy is not None:
                try:
                    self.policy.check_connected(parts.hostname or "", conn.sock)
                except RankerRefused:
                    conn.close()
                    raise
        conn.sock.settimeout(timeout)
        return conn, reused

    def _drop(self, parts: SplitResult) -> None:
        conns = getattr(self._local, "conns", {})
        conn = conns.pop((parts.scheme, parts.hostname, parts.port), None)
        if conn is not None:
            conn.close()

    def _fetch(self, ranker: Ranker, q: str, k: int, deadline: float,
               user: str | None = None, offset: int = 0) -> list[dict[str, Any]]:
        parts = urlsplit(ranker.url)
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
        for attempt in range(2):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("deadline passed")
            token = None
            try:
                conn, reused = self._conn(parts, remaining)
                token = self._watchdog.watch(deadline, conn.sock)
                conn.request(method, target, body=body, headers=headers)
                resp = conn.getresponse()
                length = resp.getheader("Content-Length")
                if length and length.isdigit() and int(length) > self.max_bytes:
                    raise _TooLarge(int(length))
                answer = resp.read(self.max_bytes + 1)
                if len(answer) > self.max_bytes:
                    raise _TooLarge(len(answer))
                if not resp.isclosed():  # a body we did not read to its end
                    self._drop(parts)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._drop(parts)
                if reused and attempt == 0 and time.monotonic() < deadline:
                    continue  # a keep-alive connection the server closed
                raise
            except Exception:
                self._drop(parts)
                raise
            finally:
                if token is not None:
                    self._watchdog.cancel(token)
            if time.monotonic() > deadline:
                raise TimeoutError("deadline passed")
            if resp.status != 200:
                raise _HttpStatus(resp.status)
            return parse_results(answer, self.max_results, ranker.response)
        raise AssertionError("unreachable")

    def _timed_fetch(self, ranker: Ranker, q: str, k: int, deadline: float,
                     user: str | None, offset: int = 0) -> tuple[list[dict[str, Any]], float]:
        t0 = time.perf_counter()
        return self._fetch(ranker, q, k, deadline, user, offset), time.perf_counter() - t0

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
        timed inside its pool task (request to parsed answer), a failed one until it was
        given up. That is the rankers' share of a search's time (``Server-Timing:
        rankers``)."""
        slowest = 0.0
        start = time.perf_counter()
        now = time.monotonic()
        futures: list[Future | None] = []
        for r in rankers:
            if not self._admit(r.url):
                futures.append(None)
                continue
            fut = self._pool.submit(self._timed_fetch, r, q, k,
                                    now + r.timeout_s, user, offset)
            fut.add_done_callback(lambda f, u=r.url: self._release(u, f))
            futures.append(fut)
        out: list[list[dict[str, Any]] | RankerFailure] = []
        for r, fut in zip(rankers, futures, strict=True):
            remaining = start + r.timeout_s - time.perf_counter()
            elapsed = None
            try:
                if fut is None:
                    raise _Overloaded
                results, elapsed = fut.result(timeout=max(remaining, 0.0))
                out.append(results)
            except _Overloaded:
                out.append(RankerFailure("overloaded", "too many fetches in flight to "
                                         "this ranker", blame=False))
            except TimeoutError:
                out.append(RankerFailure("timeout", f"no answer within {r.timeout_ms} ms"))
            except _HttpStatus as exc:
                out.append(RankerFailure(f"http_{exc.status}", f"HTTP {exc.status}"))
            except RankerRefused as exc:
                out.append(RankerFailure("refused", str(exc)))
            except ranker_template.MissingSecret as exc:
                out.append(RankerFailure("missing_secret", str(exc)))
            except _TooLarge as exc:
                out.append(RankerFailure("too_large", f"body over {self.max_bytes} bytes "
                                         f"({exc.size})"))
            except (ValueError, UnicodeDecodeError) as exc:
                out.append(RankerFailure("bad_response", str(exc)))
            except OSError as exc:
                reason = "timeout" if isinstance(exc, TimeoutError) else "connection"
                if time.perf_counter() - start >= r.timeout_s:
                    reason = "timeout"  # the watchdog closed it at the deadline
                out.append(RankerFailure(reason, str(exc) or type(exc).__name__))
            except Exception as exc:  # an upstream fault must never fail the request
                out.append(RankerFailure("error", f"{type(exc).__name__}: {exc}"))
            result = out[-1]
            if elapsed is None:  # failed: time until we gave up on it
                elapsed = time.perf_counter() - start
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


class _Overloaded(Exception):
    pass


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


class _HttpStatus(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
