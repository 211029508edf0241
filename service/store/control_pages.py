"""A placement's control pages in Redis (:mod:`rollout.control_pages` says what is
counted and when a bucket settles): a click of a control page, counted once per page,
and the settled buckets taken off the placement and added to its running experiments.
Storage only stores: plain reads and writes given plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from service.store.base import StorePart
from service.store.keys import counters_key, placement_control_key, placement_page_key
from service.store.placements import GUARD_PREFIX
from service.store.snapshot import text

#: an experiment's fields: the control's pages and clicked pages over its period, and
#: when its counts last started (unix seconds; absent: since it joined the placement)
CONTROL_PAGES = GUARD_PREFIX + "control_pages"
CONTROL_CLICKED = GUARD_PREFIX + "control_clicked"
SINCE = GUARD_PREFIX + "since"


class ControlPageStore(StorePart):
    """Control pages: their clicks, and the fold of settled buckets."""

    def click_page(self, name: str, page_id: str, field: str, ttl_s: int) -> bool:
        """Count the first click of control page ``page_id`` in ``field`` of the
        placement's control counters; False (nothing counted) when it had one. The mark
        lives ``ttl_s`` seconds (past the page's click window)."""
        if not self.r.set(placement_page_key(name, page_id), 1, nx=True, ex=max(1, ttl_s)):
            return False
        self.r.hincrby(placement_control_key(name), field, 1)
        return True

    def take_control_fields(self, name: str, fields: Iterable[str]) -> dict[str, int]:
        """Take ``fields`` off the placement's control counters, atomically (MULTI:
        read and delete): two processes folding at once never both take a bucket."""
        fields = list(fields)
        if not fields:
            return {}
        pipe = self.r.pipeline(transaction=True)
        pipe.hmget(placement_control_key(name), fields)
        pipe.hdel(placement_control_key(name), *fields)
        values, _ = pipe.execute()
        return {f: int(v) for f, v in zip(fields, values, strict=True) if v is not None}

    def experiments_since(self, exp_ids: Iterable[str]) -> dict[str, float | None]:
        """When each experiment's guardrail counts last started (None: not recorded)."""
        exp_ids = list(exp_ids)
        pipe = self.r.pipeline(transaction=False)
        for e in exp_ids:
            pipe.hget(counters_key(e), SINCE)
        return {e: float(text(v)) if v is not None else None
                for e, v in zip(exp_ids, pipe.execute(), strict=True)}

    def add_control_pages(self, counts: Mapping[str, tuple[int, int]]) -> None:
        """Add (pages, clicked) of the control to each experiment (one round trip)."""
        pipe = self.r.pipeline(transaction=False)
        for e, (pages, clicked) in counts.items():
            if pages:
                pipe.hincrby(counters_key(e), CONTROL_PAGES, pages)
            if clicked:
                pipe.hincrby(counters_key(e), CONTROL_CLICKED, clicked)
        pipe.execute()


__all__ = ["CONTROL_CLICKED", "CONTROL_PAGES", "SINCE", "ControlPageStore"]
