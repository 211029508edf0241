"""The demo's order service: the simulated users' purchases, sent as a back end sends them.

A user who buys a result after clicking it makes an order; the order service reports it
some seconds after the page (``POST /outcomes`` with the ``user`` the search sent, the
document, its price and the order's ``event_id``), on its own connection with the
front-end key, in the order the purchases fall due. Some orders are sent twice with the
same ``event_id``, as a retrying back end would: the API counts them once.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from demo.client import ApiResponseError, Client


class OrderService:
    """Purchases due at a time, sent by one thread (:meth:`place`, then :meth:`close`)."""

    def __init__(self, client: Client, on_sent: Callable[[dict[str, Any], dict[str, Any]], None],
                 on_error: Callable[[Exception], None]) -> None:
        self.client = client
        self.on_sent = on_sent
        self.on_error = on_error
        self._heap: list[tuple[float, int, dict[str, Any], bool]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._closing = False
        self.retried = 0
        self._thread = threading.Thread(target=self._run, name="orders", daemon=True)
        self._thread.start()

    def place(self, delay_s: float, order: dict[str, Any], retry: bool = False) -> None:
        """Send ``order`` (a ``POST /outcomes`` body) in ``delay_s`` seconds; with
        ``retry``, twice."""
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), order,
                                        retry))
            self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._heap)

    def _next(self) -> tuple[dict[str, Any], bool] | None:
        with self._cond:
            while True:
                if self._heap:
                    due = self._heap[0][0] - time.monotonic()
                    if due <= 0:
                        _, _, order, retry = heapq.heappop(self._heap)
                        return order, retry
                elif self._closing:
                    return None
                else:
                    due = None
                self._cond.wait(due)

    def _run(self) -> None:
        while (item := self._next()) is not None:
            order, retry = item
            try:
                answer = self.client.outcome(**order)
                self.on_sent(order, answer)
                if retry:  # a back end retrying the same order: counted once
                    again = self.client.outcome(**order)
                    self.retried += int(bool(again.get("duplicate")))
            except (ApiResponseError, OSError) as exc:
                self.on_error(exc)

    def close(self, timeout: float = 60.0) -> None:
        """Send every order still due (each at its time), then stop the thread."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(timeout)
        self.client.close()
