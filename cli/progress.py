"""A small progress bar for long commands; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Draw ``label [#####.....] done/total rate ETA`` on one terminal line.

    Updates are throttled to ten redraws a second, so calling ``advance`` in a hot loop
    costs a clock read. ``enabled`` defaults to whether ``stream`` is a terminal.

    The ETA is the remaining work at the average rate since the start, shown once that
    rate means something: after :data:`ETA_AFTER_S` seconds or :data:`ETA_AFTER_FRACTION`
    of the work (the first steps include start-up costs and would promise hours for a
    job of seconds); ``ETA ?`` until then.
    """

    #: seconds of work before an ETA is shown
    ETA_AFTER_S = 3.0
    #: or the fraction of the work done
    ETA_AFTER_FRACTION = 0.1

    def __init__(
        self,
        total: int,
        label: str = "",
        *,
        stream: TextIO | None = None,
        enabled: bool | None = None,
        width: int = 30,
    ) -> None:
        self.total = max(int(total), 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.width = width
        self.done = 0
        self.start = time.monotonic()
        self._last = 0.0

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and (now - self._last >= 0.1 or self.done >= self.total):
            self._last = now
            self._draw(now, note)

    def _draw(self, now: float, note: str) -> None:
        frac = min(self.done / self.total, 1.0)
        filled = int(frac * self.width)
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done}/{self.total} {rate:,.0f}/s "
            f"ETA {self.eta(elapsed)} {note}"
        )
        self.stream.flush()

    def eta(self, elapsed: float) -> str:
        """The remaining time as text (``?`` while too early to tell).

        >>> p = Progress(100, enabled=False)
        >>> p.done = 1
        >>> p.eta(0.5), p.eta(4.0)
        ('?', '396s')
        >>> p.done = 100
        >>> p.eta(0.5)
        '0s'
        """
        frac = self.done / self.total
        if self.done <= 0 or (elapsed < self.ETA_AFTER_S and frac < self.ETA_AFTER_FRACTION):
            return "?"
        remaining = max(self.total - self.done, 0) * elapsed / self.done
        return f"{remaining:,.0f}s"

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic(), "")
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
