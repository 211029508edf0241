"""Calling the rankers: concurrent HTTP fetches with per-ranker timeouts and keep-alive.

A ranker is an HTTP endpoint called as ``GET URL?q=TEXT&k=K`` that returns
``{"results": [{"id": ..., ...}, ...]}``. :class:`RankerClient` fetches all rankers of a
comparison at once on a thread pool; each thread keeps one persistent
``http.client`` connection per host, so a steady stream of searches reuses its TCP
connections (the standard library is enough here: no extra dependency). A ranker that
errs, answers garbage or misses its deadline yields a :class:`RankerFailure` instead of
a list; the caller decides what to serve.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, quote, urlsplit

from service import metrics


@dataclass(frozen=True)
class RankerFailure:
    """Why a ranker gave no list: ``reason`` is a short label (timeout, http_503, ...)."""

    reason: str
    detail: str = ""


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


def parse_results(body: bytes) -> list[dict[str, Any]]:
    """The ranker's result list, each entry a dict with a string-able ``id``."""
    data = json.loads(body)
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError('response is not {"results": [...]}')
    out = []
    seen = set()
    for item in data["results"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str | int):
            raise ValueError("every result needs an id (string or integer)")
        if isinstance(item["id"], bool):
            raise ValueError("every result needs an id (string or integer)")
        key = str(item["id"])
        if key in seen:  # a ranker listing a document twice: keep the first
            continue
        seen.add(key)
        out.append(item)
    return out


class RankerClient:
    """Fetch several rankers concurrently.

    Parameters
    ----------
    max_workers
        Threads for outbound calls (per process).
    """

    def __init__(self, max_workers: int = 32) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="ranker")
        self._local = threading.local()

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _conn(self, parts: SplitResult, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        conns = getattr(self._local, "conns", None)
        if conns is None:
            conns = self._local.conns = {}
        key = (parts.scheme, parts.hostname, parts.port)
        conn = conns.get(key)
        reused = conn is not None
        if conn is None:
            https = parts.scheme == "https"
            cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
            conn = cls(parts.hostname, parts.port, timeout=timeout)
            conns[key] = conn
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn, reused

    def _drop(self, parts: SplitResult) -> None:
        conns = getattr(self._local, "conns", {})
        conn = conns.pop((parts.scheme, parts.hostname, parts.port), None)
        if conn is not None:
            conn.close()

    def _fetch(self, url: str, q: str, k: int, timeout: float) -> list[dict[str, Any]]:
        parts = urlsplit(url)
        target = _target(parts, q, k)
        for attempt in range(2):
            conn, reused = self._conn(parts, timeout)
            try:
                conn.request("GET", target, headers={"Accept": "application/json"})
                resp = conn.getresponse()
                body = resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._drop(parts)
                if reused and attempt == 0:  # a keep-alive connection the server closed
                    continue
                raise
            except Exception:
                self._drop(parts)
                raise
            if resp.status != 200:
                raise _HttpStatus(resp.status)
            return parse_results(body)
        raise AssertionError("unreachable")

    def _timed_fetch(self, url: str, q: str, k: int,
                     timeout: float) -> tuple[list[dict[str, Any]], float]:
        t0 = time.perf_counter()
        return self._fetch(url, q, k, timeout), time.perf_counter() - t0

    def fetch_all(
        self, rankers: list[dict[str, Any]], q: str, k: int, *, experiment: str = "",
        observe: bool = True,
    ) -> list[list[dict[str, Any]] | RankerFailure]:
        """Fetch every ranker's list concurrently; a failure in place of a list when it
        errs or misses its ``timeout_ms``. Never raises for a ranker's fault."""
        start = time.perf_counter()
        futures: list[Future] = [
            self._pool.submit(self._timed_fetch, r["url"], q, k, r["timeout_ms"] / 1000.0)
            for r in rankers
        ]
        out: list[list[dict[str, Any]] | RankerFailure] = []
        for r, fut in zip(rankers, futures, strict=True):
            remaining = start + r["timeout_ms"] / 1000.0 - time.perf_counter()
            elapsed = None
            try:
                results, elapsed = fut.result(timeout=max(remaining, 0.0))
                out.append(results)
            except TimeoutError:
                fut.cancel()
                out.append(RankerFailure("timeout", f"no answer within {r['timeout_ms']} ms"))
            except _HttpStatus as exc:
                out.append(RankerFailure(f"http_{exc.status}", f"HTTP {exc.status}"))
            except (ValueError, UnicodeDecodeError) as exc:
                out.append(RankerFailure("bad_response", str(exc)))
            except OSError as exc:
                reason = "timeout" if isinstance(exc, TimeoutError) else "connection"
                out.append(RankerFailure(reason, str(exc) or type(exc).__name__))
            except Exception as exc:  # an upstream fault must never fail the request
                out.append(RankerFailure("error", f"{type(exc).__name__}: {exc}"))
            result = out[-1]
            if elapsed is None:  # failed: time until we gave up on it
                elapsed = time.perf_counter() - start
            if not observe:
                continue
            metrics.RANKER_LATENCY.labels(experiment, r["name"]).observe(elapsed)
            if isinstance(result, RankerFailure):
                metrics.RANKER_FAILURES.labels(experiment, r["name"], result.reason).inc()
        return out


class _HttpStatus(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
