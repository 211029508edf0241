"""Which running experiments declare which action: the request path's view, read from
Redis at most every :data:`REFRESH_S` seconds per process (as the placements' cached view
is), so that ``POST /outcomes`` costs one round trip: the attribution scripts.

An experiment created, paused or stopped is seen by every process within
:data:`REFRESH_S`; an event in between is answered by the view it had.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.outcomes.metrics import Metric, declared

#: how old the view may get before a request reads it again
REFRESH_S = 2.0


@dataclass(frozen=True)
class Candidate:
    """A running experiment that declares the action: its metrics of that action, and
    the longest window among all its metrics (the attribution index's TTL)."""

    exp_id: str
    metrics: tuple[Metric, ...]
    longest_s: int


def view(declarations: Mapping[str, tuple[str | None, str | None]]
         ) -> dict[str, list[Candidate]]:
    """Action -> the running experiments declaring it, from each experiment's ``(meta
    JSON, lifecycle)``.

    >>> meta = {"metrics": [{"name": "click"}, {"name": "rev", "action": "purchase",
    ...                      "value": "sum", "window_s": 60}]}
    >>> out = view({"e1": (json.dumps(meta), "running"), "e2": (json.dumps(meta), "paused")})
    >>> [(c.exp_id, [m.name for m in c.metrics], c.longest_s) for c in out["purchase"]]
    [('e1', ['rev'], 60)]
    """
    out: dict[str, list[Candidate]] = {}
    for exp_id, (meta, lifecycle) in declarations.items():
        if not meta or (lifecycle or "running") != "running":
            continue
        metrics = [m for m in declared(json.loads(meta)) if not m.is_click]
        if not metrics:
            continue
        longest = max(m.window_s for m in metrics)
        for action in dict.fromkeys(m.action for m in metrics):
            out.setdefault(action, []).append(Candidate(
                exp_id, tuple(m for m in metrics if m.action == action), longest))
    return out


class Actions:
    """This process's view (:func:`view`), read again when older than ``refresh_s``
    through ``read`` (every experiment id -> its declaration)."""

    def __init__(self, read: Callable[[], Mapping[str, tuple[str | None, str | None]]],
                 refresh_s: float = REFRESH_S) -> None:
        self.read, self.refresh_s = read, refresh_s
        self._view: dict[str, list[Candidate]] = {}
        self._at = -float("inf")
        self._lock = threading.Lock()

    def candidates(self, action: str) -> list[Candidate]:
        now = time.monotonic()
        if now - self._at > self.refresh_s:
            with self._lock:
                if now - self._at > self.refresh_s:
                    self._view = view(self.read())
                    self._at = time.monotonic()
        return list(self._view.get(action, ()))

    def known(self) -> list[str]:
        """The actions of the current view, sorted."""
        return sorted(self._view)
