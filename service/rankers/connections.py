"""The transport's parts: the watchdog that enforces a request's deadline on its socket,
the idle keep-alive connections per origin, a request in flight, and the failures the
transport raises internally (:class:`~service.rankers.client.RankerClient` turns each into a
:class:`~service.rankers.client.RankerFailure`)."""

from __future__ import annotations

import contextlib
import functools
import heapq
import http.client
import socket
import threading
import time
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit


class Watchdog:
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
def split_origin(url: str) -> tuple[SplitResult, Origin]:
    """``url``'s parts and origin, parsed once per URL (a few per experiment)."""
    parts = urlsplit(url)
    return parts, (parts.scheme, parts.hostname or "", parts.port)


@dataclass
class Request:
    """One ranker call, ready to send: its origin, method, target, headers and body."""

    parts: SplitResult
    origin: Origin
    method: str
    target: str
    headers: dict[str, str]
    body: bytes | None


@dataclass(eq=False)
class Inline:
    """A call sent on an idle keep-alive connection by the search's own thread, waiting
    for its answer (:meth:`RankerClient.fetch_timed`)."""

    index: int
    req: Request
    conn: http.client.HTTPConnection
    deadline: float
    t0: float
    token: int


class IdleConnections:
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
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)



class Overloaded(Exception):
    pass


@dataclass(frozen=True)
class Failed:
    """A call made from the search's thread that failed, and when (``perf_counter``)."""

    exc: Exception
    at: float


class TooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


class HttpStatus(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
