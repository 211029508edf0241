"""The audit trail's reads: every trail (:mod:`service.store.trail`, one per hash tag that
was changed) merged in time order, filtered and paged.

An entry's ``id`` is its cursor, ``<stream id>~<trail key>``: stream ids are
milliseconds and a sequence, unique within a trail, so ``(stream id, trail)`` orders every
entry once. ``after`` takes the cursor of the last entry read (the answer's ``next``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from service.errors import BadRequest
from service.store import trail

#: entries read from one trail per round trip
CHUNK = 200
#: a stream id as a cursor holds it (19 digits a part: below 2^64, as Redis takes it)
_CURSOR_SID = re.compile(r"[0-9]{1,19}-[0-9]{1,19}")


@dataclass(frozen=True)
class Filters:
    """What ``GET /audit`` keeps: entries by a key (its id or name; ``admin``,
    ``frontend`` or ``metrics`` for a bootstrap token), on an experiment, on a placement,
    since a time (unix seconds)."""

    key: str | None = None
    experiment: str | None = None
    placement: str | None = None
    since: float | None = None

    def keep(self, e: dict[str, Any]) -> bool:
        who, target = e.get("who") or {}, e.get("target") or {}
        if self.key is not None and self.key not in (
                who.get("key"), who.get("name"), who.get("bootstrap")):
            return False
        if self.experiment is not None and target.get("experiment") != self.experiment:
            return False
        if self.placement is not None and target.get("placement") != self.placement:
            return False
        return self.since is None or e.get("ts", 0) >= self.since


def _sid(sid: str) -> tuple[int, int]:
    ms, _, seq = sid.partition("-")
    return int(ms), int(seq or 0)


def parse_cursor(cursor: str) -> tuple[str, str]:
    """``(stream id, trail key)`` of a cursor; 400 for anything else.

    >>> parse_cursor("1765100000123-0~rd:trail:{3fa2}")
    ('1765100000123-0', 'rd:trail:{3fa2}')
    """
    sid, sep, key = cursor.partition("~")
    ok = (bool(_CURSOR_SID.fullmatch(sid)) and bool(sep) and key.endswith("}")
          and key.startswith(trail.PREFIX + "trail:{"))
    if not ok:
        raise BadRequest("after: not a cursor of GET /audit (pass the answer's 'next', "
                         "e.g. 1765100000123-0~rd:trail:{3fa2})")
    return sid, key


def _trails(access: Any, f: Filters) -> list[str]:
    if f.experiment is not None and f.placement is None:  # its trail, and refusals
        return sorted({f"{trail.PREFIX}trail:{{{f.experiment}}}", trail.ACCESS_TRAIL})
    return access.trails()


def _one(access: Any, key: str, f: Filters, start: str, limit: int
         ) -> Iterator[tuple[tuple[int, int], str, str, dict[str, Any]]]:
    found = 0
    while found < limit:
        chunk = access.trail_page(key, start, CHUNK)
        for sid, e in chunk:
            # its time is when it committed, the stream id's (the order entries are read
            # in): the time the API process wrote into it may be a millisecond off that
            # order between two trails (two cluster masters) in the same millisecond
            e = {**e, "ts": _sid(sid)[0] / 1000}
            if f.keep(e):
                found += 1
                yield _sid(sid), key, sid, e
                if found >= limit:
                    return
        if len(chunk) < CHUNK:
            return
        start = "(" + chunk[-1][0]


def page(access: Any, f: Filters, *, after: str | None = None, limit: int = 100
         ) -> tuple[list[dict[str, Any]], str | None]:
    """Up to ``limit`` entries oldest first (after the cursor ``after``, from ``since``),
    each with its ``id`` (cursor); and the cursor to pass next (the last entry's, or
    ``after`` when there is nothing new)."""
    c_sid, c_key = parse_cursor(after) if after else (None, None)
    base = f"{int(f.since * 1000)}-0" if f.since is not None else "-"
    rows = []
    for key in _trails(access, f):
        # after the cursor: (stream id, trail) greater than the cursor's
        start = base if c_sid is None else c_sid if key > c_key else "(" + c_sid
        rows += list(_one(access, key, f, start, limit))
    rows.sort(key=lambda r: (r[0], r[1]))
    out = [{"id": f"{sid}~{key}", **e} for _, key, sid, e in rows[:limit]]
    return out, (out[-1]["id"] if out else after)


def every(access: Any, f: Filters, *, after: str | None = None) -> Iterator[dict[str, Any]]:
    """Every entry the filters keep, oldest first (the NDJSON export), page by page."""
    while True:
        entries, nxt = page(access, f, after=after, limit=500)
        yield from entries
        if len(entries) < 500:
            return
        after = nxt
