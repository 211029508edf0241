"""The event log as OpenSearch User Behavior Insights (UBI 1.3.0) documents: a query per
impression (index ``ubi_queries``), an event per click and per UBI event received
(index ``ubi_events``). Pure: no Redis, no HTTP; ``rankduel export --format ubi`` and
``GET /experiments/ID/ubi`` both feed it the log's events in order.

The mapping (docs/ubi.md has the table):

* an ``impression`` is a query: ``query_id`` the impression id, ``user_query`` the
  search's text (``""`` for an event saved before the text was kept),
  ``query_response_hit_ids`` the interleaved list in the order shown, ``client_id`` the
  keyed hash of the search's user (stable within the experiment; ``anonymous`` for a
  search without a user), ``timestamp`` when it was saved, and ``query_attributes``: the
  experiment, its arms, their rankers (name, version), the interleaving method and each
  shown document's team (the ranker a click on it credits; null where a slot has no
  team: a shared top, or a method without teams);
* a ``click`` report is one event per position clicked: ``action_name`` ``click``,
  ``event_attributes.object.object_id`` the document, ``event_attributes.position.
  ordinal`` its 1-based rank as shown, ``event_attributes.team`` its team;
* a ``ubi`` event (received by ``POST /ubi/events`` and not a click: ``add_to_cart``,
  ``purchase``, ...) is given back as received (its token left out), with the team of
  its ordinal's slot added;
* an ``outcome`` (the credit) is rankduel's inference, not a user's behaviour: no
  document.

Every ``timestamp`` is ISO 8601 in UTC ending with ``Z`` (OpenSearch needs a zone).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

#: the OpenSearch indices of UBI
QUERIES, EVENTS = "ubi_queries", "ubi_events"
#: the ``application`` of the documents rankduel writes
APPLICATION = "rankduel"
#: the ``client_id`` of a search without a user
ANONYMOUS = "anonymous"
#: the name of the document id field, as UBI's ``object_id_field``
OBJECT_ID_FIELD = "id"
#: separates a ranker's name from its version (service.experiments.ranker_versions)
_VERSION = "@v"
#: impressions remembered for the events that follow them (the oldest forgotten first)
REMEMBER = 200_000

Doc = tuple[str, str, dict[str, Any]]  # (index, _id, document)


def iso(seconds: float) -> str:
    """Epoch seconds as UBI's timestamp, UTC, milliseconds, ``Z``.

    >>> iso(1700000000.25)
    '2023-11-14T22:13:20.250Z'
    """
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def cursor_time(cursor: str) -> float:
    """When a log entry was written: its cursor's millisecond part.

    >>> cursor_time("1700000000250-3")
    1700000000.25
    """
    return int(cursor.partition("-")[0]) / 1000


def utc(stamp: Any, fallback: float) -> str:
    """A received ISO timestamp in UTC with ``Z`` (one without a zone read as UTC);
    ``fallback`` (epoch seconds) when it is not one.

    >>> utc("2025-01-02T03:04:05+01:00", 0), utc("2025-01-02T03:04:05", 0), utc("x", 0)
    ('2025-01-02T02:04:05.000Z', '2025-01-02T03:04:05.000Z', '1970-01-01T00:00:00.000Z')
    """
    try:
        when = datetime.fromisoformat(str(stamp).upper().replace("Z", "+00:00"))
    except ValueError:
        return iso(fallback)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return iso(when.timestamp())


def ranker(name: str) -> dict[str, Any]:
    """A ranker's plain name and version from its name in the log.

    >>> ranker("bm25@v3"), ranker("bm25")
    ({'name': 'bm25', 'version': 3}, {'name': 'bm25', 'version': 1})
    """
    plain, sep, version = name.rpartition(_VERSION)
    if sep and plain and version.isdigit():
        return {"name": plain, "version": int(version)}
    return {"name": name, "version": 1}


def teams(imp: dict[str, Any]) -> list[str | None]:
    """Each shown slot's team, the name of the ranker a click on it credits (None: no
    team), from the interleaving record; a page served alone is its ranker's.

    >>> teams({"shown": ["a", "b", "c"], "rankers": ["x", "y"],
    ...        "record": {"teams": [-1, 1, 0]}})
    [None, 'y', 'x']
    """
    names, shown = imp.get("rankers") or [], imp.get("shown") or []
    record = imp.get("record")
    if record is None:  # one ranker served alone
        return [names[0] if len(names) == 1 else None for _ in shown]
    slots = record.get("teams") if isinstance(record, dict) else None
    if slots is None:
        return [None for _ in shown]
    return [names[int(t)] if 0 <= int(t) < len(names) else None
            for t in (list(slots) + [-1] * len(shown))[:len(shown)]]


class Converter:
    """The log's events, fed in order, as UBI documents. Impressions are remembered (up
    to :data:`REMEMBER`, the oldest forgotten first) for the clicks and events that
    follow them; :meth:`remember` adds impressions read elsewhere (an earlier page)."""

    def __init__(self, experiment: str, interleaving: str | None = None) -> None:
        self.experiment = experiment
        self.interleaving = interleaving
        self.impressions: OrderedDict[str, dict[str, Any]] = OrderedDict()

    def remember(self, imp: dict[str, Any]) -> None:
        self.impressions[imp["id"]] = imp
        self.impressions.move_to_end(imp["id"])
        while len(self.impressions) > REMEMBER:
            self.impressions.popitem(last=False)

    def feed(self, events: Iterable[dict[str, Any]]) -> Iterator[Doc]:
        """The documents of ``events`` (``(index, _id, document)``), in order."""
        for e in events:
            kind = e.get("type")
            if kind == "impression":
                self.remember(e)
                yield QUERIES, e["id"], self.query(e)
            elif kind == "click":
                yield from self.clicks(e)
            elif kind == "ubi":
                yield EVENTS, e["cursor"], self.received(e)

    def query(self, imp: dict[str, Any]) -> dict[str, Any]:
        """The UBI query of an impression event."""
        names = imp.get("rankers") or []
        return {
            "application": APPLICATION,
            "query_id": imp["id"],
            "client_id": imp.get("user") or ANONYMOUS,
            "user_query": imp.get("q") or "",
            "timestamp": iso(float(imp.get("created") or cursor_time(imp["cursor"]))),
            "object_id_field": OBJECT_ID_FIELD,
            "query_response_id": imp["id"],
            "query_response_hit_ids": [str(d) for d in imp.get("shown") or []],
            "query_attributes": {
                "experiment": self.experiment,
                "arms": imp.get("arms") or [],
                "rankers": [{**ranker(n), "arm": a}
                            for n, a in zip(names, imp.get("arms") or [], strict=False)],
                "interleaving": self.interleaving if imp.get("duel") else None,
                "teams": teams(imp),
                "duel": bool(imp.get("duel")),
                "t": imp.get("t"),
                "segments": imp.get("seg") or [],
            },
        }

    def _base(self, e: dict[str, Any], imp: dict[str, Any] | None) -> dict[str, Any]:
        return {"application": APPLICATION, "query_id": e["id"],
                "client_id": (imp or {}).get("user") or ANONYMOUS,
                "user_query": (imp or {}).get("q") or "",
                "timestamp": iso(cursor_time(e["cursor"]))}

    def clicks(self, e: dict[str, Any]) -> Iterator[Doc]:
        """One event per position of a click report."""
        imp = self.impressions.get(e["id"])
        shown = (imp or {}).get("shown") or []
        team = teams(imp) if imp else []
        dwell = e.get("dwell") or {}
        for n, pos in enumerate(e.get("positions") or []):
            attrs: dict[str, Any] = {"position": {"ordinal": pos + 1},
                                     "experiment": self.experiment}
            if pos < len(shown):
                attrs["object"] = {"object_id": str(shown[pos]),
                                   "object_id_field": OBJECT_ID_FIELD}
                attrs["team"] = team[pos]
            ms = dwell.get(pos, dwell.get(str(pos)))
            if ms is not None:
                attrs["dwell_ms"] = ms
            yield EVENTS, f"{e['cursor']}.{n}", {
                **self._base(e, imp), "action_name": "click", "message_type": "CLICK",
                "event_attributes": attrs}

    def received(self, e: dict[str, Any]) -> dict[str, Any]:
        """A UBI event as ``POST /ubi/events`` received it, its token left out, in UTC,
        with the team of its ordinal's slot.

        UBI 1.3.0 requires ``event_attributes.position`` (an ``ordinal`` or an ``xy``,
        not both), which ``ubi.js`` does not send: a missing ordinal is the rank the
        impression showed the event's object at; when there is none (an object not
        shown), the attributes go to a top-level ``attributes`` instead. A position with
        both keeps the ordinal (its ``xy`` moves beside it)."""
        imp = self.impressions.get(e["id"])
        data = dict(e.get("data") or {})
        attrs = dict(data.get("event_attributes") or {})
        attrs.pop("token", None)
        attrs["experiment"] = self.experiment
        position = dict(attrs.get("position") or {})
        shown = [str(d) for d in (imp or {}).get("shown") or []]
        doc = (attrs.get("object") or {}).get("object_id")
        if position.get("ordinal") is None and "xy" not in position and str(doc) in shown:
            position["ordinal"] = shown.index(str(doc)) + 1
        if position.get("ordinal") is not None and "xy" in position:
            attrs["xy"] = position.pop("xy")
        ordinal = position.get("ordinal")
        team = teams(imp) if imp else []
        if isinstance(ordinal, int) and 1 <= ordinal <= len(team):
            attrs["team"] = team[ordinal - 1]
        base = self._base(e, imp)
        out = {**base, **{k: v for k, v in data.items() if v is not None},
               "query_id": e["id"], "action_name": e.get("action") or data.get("action_name"),
               "timestamp": utc(data.get("timestamp"), cursor_time(e["cursor"]))}
        out.pop("event_attributes", None)
        if position.get("ordinal") is not None or "xy" in position:
            out["event_attributes"] = {**attrs, "position": position}
        else:
            out["attributes"] = attrs
        return out


def bulk_lines(docs: Iterable[Doc]) -> Iterator[str]:
    """OpenSearch ``_bulk`` lines: an action line (its index and ``_id``, so a load run
    twice overwrites rather than duplicates) before each document.

    >>> list(bulk_lines([("ubi_queries", "e.1", {"query_id": "e.1"})]))
    ['{"index":{"_index":"ubi_queries","_id":"e.1"}}', '{"query_id":"e.1"}']
    """
    for index, doc_id, doc in docs:
        yield json.dumps({"index": {"_index": index, "_id": doc_id}}, separators=(",", ":"))
        yield json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
