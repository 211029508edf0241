"""Which running experiments declare which action: the request path's view, read from
Redis at most every :data:`REFRESH_S` seconds per process (as the placements' cached view
is), so that ``POST /outcomes`` costs one round trip: the attribution scripts.

An experiment paused or stopped is seen by every process within :data:`REFRESH_S`; an
event in between is answered by the view it had. An action (or an impression's
experiment) the view does not hold reads the view again at once if it is older than
:data:`MISS_REFRESH_S`, so a new experiment counts its first events (and a stream of
unknown actions reads the view at most that often).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from service.designs.base import Design
from service.designs.registry import design_of
from service.outcomes.declared import Metric, declared

#: how old the view may get before a request reads it again
REFRESH_S = 2.0
#: how old the view may be when a request it cannot answer reads it again
MISS_REFRESH_S = 0.25


@dataclass(frozen=True)
class Candidate:
    """A running experiment that declares the action: its metrics of that action, the
    longest window among all its metrics (the attribution index's TTL), and its design
    (which builds the event's script call and starts its credit,
    :mod:`service.outcomes.attribution`)."""

    exp_id: str
    metrics: tuple[Metric, ...]
    longest_s: int
    design: Design


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
        data = json.loads(meta)
        metrics = [m for m in declared(data) if not m.is_click]
        if not metrics:
            continue
        longest = max(m.window_s for m in metrics)
        for action in dict.fromkeys(m.action for m in metrics):
            out.setdefault(action, []).append(Candidate(
                exp_id, tuple(m for m in metrics if m.action == action), longest,
                design_of(data)))
    return out


class Actions:
    """This process's view (:func:`view`), read again when older than ``refresh_s``
    through ``read`` (every experiment id -> its declaration)."""

    def __init__(self, read: Callable[[], Mapping[str, tuple[str | None, str | None]]],
                 refresh_s: float = REFRESH_S,
                 read_one: Callable[[str], Mapping[str, tuple[str | None, str | None]]]
                 | None = None) -> None:
        self.read, self.refresh_s, self.read_one = read, refresh_s, read_one
        #: an impression's experiment the view missed: its own view, for ``refresh_s``
        self._one: dict[str, tuple[float, dict[str, list[Candidate]]]] = {}
        self._view: dict[str, list[Candidate]] = {}
        self._at = -float("inf")
        self._lock = threading.Lock()

    def candidates(self, action: str, exp_id: str | None = None) -> list[Candidate]:
        """The running experiments declaring ``action`` (only ``exp_id``, if given)."""
        found = self._pick(action, exp_id, self.refresh_s)
        if found or exp_id is None or self.read_one is None:
            return found or self._pick(action, exp_id, min(MISS_REFRESH_S, self.refresh_s))
        # an impression's experiment created since the view was read: read it alone
        now = time.monotonic()
        at, mine = self._one.get(exp_id, (-float("inf"), {}))
        if now - at > self.refresh_s:
            mine = view(self.read_one(exp_id))
            if len(self._one) > 10_000:  # experiments come and go: a bounded memory
                self._one.clear()
            self._one[exp_id] = (now, mine)
        return list(mine.get(action, ()))

    def _pick(self, action: str, exp_id: str | None, max_age_s: float) -> list[Candidate]:
        now = time.monotonic()
        if now - self._at > max_age_s:
            with self._lock:
                if now - self._at > max_age_s:
                    self._view = view(self.read())
                    self._at = time.monotonic()
        return [c for c in self._view.get(action, ()) if exp_id is None or c.exp_id == exp_id]

    def known(self) -> list[str]:
        """The actions of the current view, sorted."""
        return sorted(self._view)


_BY_STORE: dict[int, Actions] = {}


def for_store(store) -> Actions:
    """This process's view of ``store``'s experiments' actions (one per store), shared by
    ``POST /outcomes`` and the UBI events that are conversions."""
    found = _BY_STORE.get(id(store))
    if found is None:
        declarations = store.outcomes.declarations
        found = _BY_STORE[id(store)] = Actions(lambda: declarations(store.list_ids()),
                                               read_one=lambda e: declarations([e]))
    return found
