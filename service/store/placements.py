"""Placements in Redis: a placement's definition, its experiments' traffic and the bucket
ranges they hold (one hash), the control ranker's guardrail counters, and the placement
list. Keys in :mod:`service.store.keys` (``rd:{pl-<name>}...``: one hash tag, one slot).

An experiment's own guardrail counters on its placement searches are ``g:``-prefixed
fields of ``rd:{e}:counters`` (``g:<ranker>:calls``, ``:failures``, ``:empty``,
``:lat:<i>``), counted by the script that saves the impression (no extra round trip);
its pages (``g:pages``, ``g:abandoned``: credited impressions, and those without a click)
are counted when credited, the control's pages over its period (``g:control_pages``,
``g:control_clicked``) when the worker's sweep folds them, and ``g:since`` is when its
counts last started (a resume).

Changes of traffic are optimistic transactions of :mod:`service.placements.operations` (WATCH the
placement's hash, read, :func:`rollout.allocate`, MULTI/EXEC): two API processes that
change one placement at once never interleave their writes; the loser reads again.
Storage only stores: plain reads and writes given plain values.
"""

from __future__ import annotations

import json
from typing import Any

from service.store.base import StorePart
from service.store.keys import (
    PLACEMENTS,
    counters_key,
    placement_control_key,
    placement_key,
)
from service.store.snapshot import text

#: the fields of a placement's hash, decoded from JSON by :meth:`PlacementStore.placement`
JSON_FIELDS = ("def", "experiments", "ranges", "tripped")
#: prefix of the guardrail counters in an experiment's counters hash
#: (:mod:`service.placements.guardrails`)
GUARD_PREFIX = "g:"
#: an experiment's settled pages (credited impressions) and those without a click
PAGES, ABANDONED = GUARD_PREFIX + "pages", GUARD_PREFIX + "abandoned"


class PlacementStore(StorePart):
    """Placements: definition, traffic, ranges, control counters."""

    def placement_names(self) -> list[str]:
        return sorted(text(x) for x in self.r.smembers(PLACEMENTS))

    def placement(self, name: str) -> dict[str, Any] | None:
        """The placement's hash, its JSON fields decoded (None: no such placement)."""
        raw = {text(k): text(v) for k, v in self.r.hgetall(placement_key(name)).items()}
        if not raw:
            return None
        out: dict[str, Any] = {k: json.loads(raw[k]) if raw.get(k) else None
                               for k in JSON_FIELDS}
        out["version"] = int(raw.get("version") or 0)
        nxt = raw.get("next_change")
        out["next_change"] = float(nxt) if nxt else None
        return out

    def create_placement(self, name: str, definition: dict[str, Any]) -> bool:
        """Create the placement (False: it exists)."""
        if not self.r.hsetnx(placement_key(name), "def", json.dumps(definition)):
            return False
        self.r.hset(placement_key(name), mapping={
            "experiments": "[]", "ranges": "{}", "tripped": "{}", "version": 1,
            "next_change": ""})
        self.r.sadd(PLACEMENTS, name)
        return True

    def write_placement(self, pipe, name: str, **fields: Any) -> None:
        """Queue fields of the placement (JSON fields given as Python values), with
        ``version`` + 1 (API processes re-read a placement whose version moved)."""
        enc = {k: json.dumps(v) if k in JSON_FIELDS else ("" if v is None else v)
               for k, v in fields.items()}
        pipe.hset(placement_key(name), mapping=enc)
        pipe.hincrby(placement_key(name), "version", 1)

    def reset_control_health(self, pipe, name: str, fields) -> None:
        """Queue the reset of the control ranker's call counters ``fields`` (a new
        control starts its health afresh; same hash tag as the placement)."""
        pipe.hdel(placement_control_key(name), *fields)

    def placement_version(self, name: str) -> int:
        return int(self.r.hget(placement_key(name), "version") or 0)

    def count_control(self, name: str, fields: dict[str, int]) -> None:
        """Add to the control ranker's guardrail counters (one round trip)."""
        if fields:
            pipe = self.r.pipeline(transaction=False)
            for f, n in fields.items():
                pipe.hincrby(placement_control_key(name), f, n)
            pipe.execute()

    def control_counters(self, name: str) -> dict[str, int]:
        return {text(k): int(v) for k, v in
                self.r.hgetall(placement_control_key(name)).items()}

    def count_guard(self, exp_id: str, fields: dict[str, int]) -> None:
        """Add guardrail counters to an experiment (a search that saved no impression)."""
        if fields:
            pipe = self.r.pipeline(transaction=False)
            for f, n in fields.items():
                pipe.hincrby(counters_key(exp_id), f, n)
            pipe.execute()

    def guard_counters(self, exp_id: str) -> dict[str, int]:
        """The experiment's counters (its guardrail counters are the ``g:`` fields)."""
        return {text(k): int(v) for k, v in self.r.hgetall(counters_key(exp_id)).items()}

    def reset_guard(self, exp_id: str, now: float) -> None:
        """Forget the experiment's guardrail counters (it resumes: counts start again)
        and record when they started again (``g:since``), in one transaction."""
        fields = [k for k in self.r.hkeys(counters_key(exp_id))
                  if text(k).startswith(GUARD_PREFIX)]
        pipe = self.r.pipeline(transaction=True)
        if fields:
            pipe.hdel(counters_key(exp_id), *fields)
        pipe.hset(counters_key(exp_id), GUARD_PREFIX + "since", int(now))  # counters: ints
        pipe.execute()


__all__ = ["ABANDONED", "GUARD_PREFIX", "JSON_FIELDS", "PAGES", "PlacementStore"]
