"""UBI out without a server: the schemas' reading (tests/ubi_schemas.py) and the
conversion of log events to UBI documents (service.events.ubi), old events included."""

from __future__ import annotations

import json

import jsonschema

from service.events import ubi
from tests.ubi_schemas import SCHEMAS, anyof_names, check_documents


def test_the_released_oneof_rejects_click_and_anyof_reads_it():
    schema = json.loads((SCHEMAS / "event.schema.json").read_text())
    event = {"action_name": "click", "timestamp": "2025-01-01T00:00:00Z"}
    strict = jsonschema.Draft202012Validator(schema)
    assert not strict.is_valid(event)  # both branches match: oneOf fails
    assert strict.is_valid({**event, "action_name": "rankduel_custom"})
    assert jsonschema.Draft202012Validator(anyof_names(schema)).is_valid(event)
    # the position's oneOf stays strict: an event without an ordinal or x,y is refused
    assert not jsonschema.Draft202012Validator(anyof_names(schema)).is_valid(
        {**event, "event_attributes": {"position": {}}})



def _imp(**kw):
    e = {"cursor": "1700000000000-0", "type": "impression", "id": "e1.aa", "t": 3,
         "arms": [0, 2], "rankers": ["bm25", "vec@v2"], "shown": ["d1", "d2", "d3"],
         "record": {"teams": [-1, 1, 0]}, "duel": 1, "forfeits": [], "seg": [],
         "user": "abc", "created": 1700000000.5}
    return {**e, **kw}


def test_a_log_converts_to_valid_documents_old_events_included():
    conv = ubi.Converter("e1", "team_draft")
    log = [_imp(),  # an event saved before the query text was kept: no "q"
           {"cursor": "1700000001000-0", "type": "click", "id": "e1.aa",
            "positions": [1, 2], "dwell": {1: 4000}},
           {"cursor": "1700000002000-0", "type": "outcome", "id": "e1.aa",
            "mark": {"outcomes": [[2, 0, 1.0]]}, "seg": []},
           {"cursor": "1700000003000-0", "type": "ubi", "id": "e1.aa", "action": "purchase",
            "data": {"action_name": "purchase", "query_id": "e1.aa",
                     "timestamp": "2025-01-01T12:00:00", "event_attributes": {
                         "object": {"object_id": "d3"}, "position": {"ordinal": 3}}}},
           # ubi.js sends no position: the rank the object was shown at is added...
           {"cursor": "1700000003500-0", "type": "ubi", "id": "e1.aa", "action": "add_to_cart",
            "data": {"action_name": "add_to_cart", "query_id": "e1.aa",
                     "event_attributes": {"object": {"object_id": "d2"}}}},
           # ... and where there is none, the attributes stand beside the event
           {"cursor": "1700000003600-0", "type": "ubi", "id": "e1.aa", "action": "watch",
            "data": {"action_name": "watch", "query_id": "e1.aa",
                     "event_attributes": {"object": {"object_id": "elsewhere"}}}},
           # a position with both an ordinal and x,y (UBI's oneOf takes one) keeps the first
           {"cursor": "1700000003700-0", "type": "ubi", "id": "e1.aa", "action": "view",
            "data": {"action_name": "view", "query_id": "e1.aa",
                     "event_attributes": {"position": {"ordinal": 1,
                                                       "xy": {"x": 1, "y": 2}}}}},
           # a click of an impression the converter never saw: no object, no team
           {"cursor": "1700000004000-0", "type": "click", "id": "e1.zz", "positions": [0],
            "dwell": {}},
           _imp(id="e1.bb", cursor="1700000005000-0", q="boots", record=None, duel=0,
                arms=[1], rankers=["bm25"], shown=["d9"])]
    docs = list(conv.feed(log))
    by = {"ubi_queries": [d for i, _, d in docs if i == "ubi_queries"],
          "ubi_events": [d for i, _, d in docs if i == "ubi_events"]}
    check_documents(by)
    q, q2 = by["ubi_queries"]
    assert q["user_query"] == "" and q2["user_query"] == "boots"
    assert q["query_response_hit_ids"] == ["d1", "d2", "d3"]
    assert q["timestamp"] == "2023-11-14T22:13:20.500Z" and q["client_id"] == "abc"
    assert q["query_attributes"]["rankers"] == [{"name": "bm25", "version": 1, "arm": 0},
                                                {"name": "vec", "version": 2, "arm": 2}]
    assert q["query_attributes"]["teams"] == [None, "vec@v2", "bm25"]
    assert q2["query_attributes"]["teams"] == ["bm25"]  # served alone: its ranker's
    assert q2["query_attributes"]["interleaving"] is None
    c1, c2, buy, cart, watch, view, lost = by["ubi_events"]
    assert cart["event_attributes"]["position"] == {"ordinal": 2}
    assert cart["event_attributes"]["team"] == "vec@v2"
    assert "event_attributes" not in watch
    assert watch["attributes"]["object"] == {"object_id": "elsewhere"}
    assert view["event_attributes"]["position"] == {"ordinal": 1}
    assert view["event_attributes"]["xy"] == {"x": 1, "y": 2}
    assert (c1["event_attributes"]["object"]["object_id"], c1["event_attributes"]["team"],
            c1["event_attributes"]["position"]["ordinal"], c1["event_attributes"]["dwell_ms"]
            ) == ("d2", "vec@v2", 2, 4000)
    assert c2["event_attributes"]["team"] == "bm25"
    assert buy["action_name"] == "purchase" and buy["timestamp"] == "2025-01-01T12:00:00.000Z"
    assert buy["event_attributes"]["team"] == "bm25"
    assert "object" not in lost["event_attributes"] and lost["client_id"] == "anonymous"
    ids = [i for _, i, _ in docs]
    assert len(set(ids)) == len(ids)


def test_methods_without_teams_have_no_team():
    imp = _imp(record={"post": []})
    assert ubi.teams(imp) == [None, None, None]
    assert json.loads(next(ubi.bulk_lines(ubi.Converter("e1").feed([imp])))) == {
        "index": {"_index": "ubi_queries", "_id": "e1.aa"}}


def test_the_schemas_are_schemas():
    for name in ("query.request.schema.json", "event.schema.json"):
        jsonschema.Draft202012Validator.check_schema(
            json.loads((SCHEMAS / name).read_text()))
