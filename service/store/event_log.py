"""The event log of an experiment: a Redis Stream, ``rd:{e}:events`` (hash-tagged with the
experiment), to which every impression saved (``save.lua``), click report recorded
(``click.lua``) and impression credited (``credit.lua``, or the hold's transaction) is
appended **by the same script or transaction that writes it**: nothing is logged that
did not happen, nothing happens unlogged.

Each entry has a ``type`` and the impression ``id``:

* ``impression``: ``data``, JSON: ``t``, ``arms`` (indices in ``W``), ``rankers`` (their
  names), ``shown`` (document ids), ``record`` (the interleaving record: its teams),
  ``duel``, ``forfeits``, ``seg`` (segment labels), ``user`` (a keyed hash, or null),
  ``created``, ``q`` (the query text; absent from events saved before it was kept);
* ``click``: ``positions`` (0-based, comma-separated), ``dwell`` (``position:ms,...``);
* ``outcome``: ``mark`` (the credit result, JSON: ``status``, ``outcomes`` ``[[i, j, s],
  ...]``, ``t``) and ``seg``;
* ``metric`` (an outcome event of ``POST /outcomes`` credited to the experiment's metrics,
  ``id`` its pending member ``~<digest>``; :mod:`service.credit.outcome_events`):
  ``mark`` (JSON: ``status``, ``outcomes`` per metric ``{name: [[i, j, s], ...]}``,
  ``values``, ``impression``, ``position``, ``action``, ``value``, ``at``) and ``seg``.
* ``ubi``: a UBI event received by ``POST /ubi/events`` that is not a click
  (:mod:`service.ubi`): ``action`` (its ``action_name``) and ``data`` (the event's JSON as
  received), stored uncredited, appended without a trim like a click.

**Retention** (``RANKDUEL_EVENTS_MAXLEN``, ``events_maxlen``): the impression's save
appends with ``MAXLEN ~ N``, which trims the whole stream, click and outcome events
included; so while searches arrive the log holds about ``N`` events. The click script,
the credit script and the hold's transaction append without a trim: after the last
search they add at most the click reports and one outcome of each impression still
pending (bounded by the pending set, not by traffic), which the next save trims. Giving
them the setting too would add an argument to the click and credit scripts and the
setting to the worker, for a bound the next search restores anyway
(``tests/service/test_events_retention.py`` checks both).

The stream entry id is the cursor: paging with ``XRANGE (cursor + limit`` returns every
entry once, in order, however the pages are cut. Its millisecond part is the time the
entry was written.
"""

from __future__ import annotations

import json
from typing import Any

from service.store.base import StorePart
from service.store.keys import events_key
from service.store.snapshot import text


def event(entry_id: Any, fields: dict[Any, Any]) -> dict[str, Any]:
    """One stream entry as the JSON object the API pages: ``cursor``, ``type``, ``id``,
    and the entry's fields, its JSON ones decoded.

    >>> event(b"5-0", {b"type": b"click", b"id": b"e.1", b"positions": b"0,2",
    ...                b"dwell": b""})
    {'cursor': '5-0', 'type': 'click', 'id': 'e.1', 'positions': [0, 2], 'dwell': {}}
    """
    f = {text(k): text(v) for k, v in fields.items()}
    out: dict[str, Any] = {"cursor": text(entry_id), "type": f.get("type"), "id": f.get("id")}
    kind = out["type"]
    if kind == "impression":
        out.update(json.loads(f.get("data") or "{}"))
        out["seg"] = [x for x in (out.get("seg") or "").split(",") if x]
    elif kind == "click":
        out["positions"] = [int(p) for p in (f.get("positions") or "").split(",") if p]
        out["dwell"] = {int(p): int(ms) for p, ms in (
            x.split(":") for x in (f.get("dwell") or "").split(",") if x)}
    elif kind in ("outcome", "metric"):
        out["mark"] = json.loads(f.get("mark") or "null")
        out["seg"] = [x for x in (f.get("seg") or "").split(",") if x]
    elif kind == "ubi":
        out["action"] = f.get("action")
        out["data"] = json.loads(f.get("data") or "null")
    return out


class EventStore(StorePart):
    """Reading an experiment's event log."""

    def events(self, exp_id: str, after: str = "0", limit: int = 1000
               ) -> list[dict[str, Any]]:
        """Up to ``limit`` events after the cursor ``after`` (``0``: from the start), in
        order (:func:`event`)."""
        start = "-" if after == "0" else f"({after}"
        rows = self.r.xrange(events_key(exp_id), min=start, max="+", count=int(limit))
        return [event(i, f) for i, f in rows]

    def append_ubi_events(self, exp_id: str, events: list[tuple[str, str, str]]) -> None:
        """Append UBI events ``(impression id, action name, the event's JSON)`` to the
        log of ``exp_id`` (type ``ubi``), in one round trip."""
        pipe = self.r.pipeline(transaction=False)
        for imp_id, action, data in events:
            pipe.xadd(events_key(exp_id), {"type": "ubi", "id": imp_id, "action": action,
                                           "data": data})
        pipe.execute()

    def impression_events(self, exp_id: str, ids: set[str], before: str,
                          scan: int = 10_000) -> list[dict[str, Any]]:
        """The impression events of ``ids`` among the ``scan`` entries before the cursor
        ``before`` (newest first: a click comes soon after its impression)."""
        want, found, end = set(ids), [], f"({before}"
        while want and scan > 0:
            rows = self.r.xrevrange(events_key(exp_id), max=end, min="-",
                                    count=min(1000, scan))
            if not rows:
                break
            for i, f in rows:
                if text(f.get(b"type", f.get("type"))) == "impression":
                    e = event(i, f)
                    if e["id"] in want:
                        want.discard(e["id"])
                        found.append(e)
            scan -= len(rows)
            end = f"({text(rows[-1][0])}"
        return found[::-1]

    def event_count(self, exp_id: str) -> int:
        """Events the log holds now."""
        return int(self.r.xlen(events_key(exp_id)))
