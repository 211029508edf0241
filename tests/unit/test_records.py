"""The ranker record: parsed from the stored ``rankers`` JSON and written back byte for
byte (the stored field and the API's ranker fields are contracts)."""

from __future__ import annotations

import json
from dataclasses import replace

from service.store.records import Ranker
from service.store.snapshot import decode_rankers, encode_rankers

#: entries as the service has always written them: a plain ranker, a templated one, a
#: retired one, and one with a key this version does not know
STORED = [
    {"name": "bm25", "url": "http://a/r", "timeout_ms": 800, "arm": 0, "status": "active",
     "added_at": 1.5, "retired_at": None},
    {"name": "es", "url": "http://b/_search", "timeout_ms": 5000,
     "request": {"method": "POST", "headers": {"Authorization": "env:ES_TOKEN"},
                 "body": {"size": "{k}"}},
     "response": {"results": "hits.hits", "id": "_id"},
     "arm": 1, "status": "active", "added_at": 2.0, "retired_at": None},
    {"name": "old", "url": "http://c/r", "timeout_ms": 300, "arm": 2, "status": "retired",
     "added_at": 1.5, "retired_at": 9.25},
    {"name": "later", "url": "http://d/r", "timeout_ms": 300, "arm": 3, "status": "active",
     "added_at": 3.0, "retired_at": None, "weight": 2},
]


def test_the_stored_field_round_trips_exactly():
    text = json.dumps(STORED)
    rankers = decode_rankers(text)
    assert [r.name for r in rankers] == ["bm25", "es", "old", "later"]
    assert rankers[1].request["method"] == "POST" and rankers[0].request is None
    assert rankers[2].status == "retired" and rankers[2].retired_at == 9.25
    assert encode_rankers(rankers) == text


def test_a_new_ranker_has_the_fields_of_a_request_body_until_it_gets_an_arm():
    r = Ranker(name="x", url="http://x/r", timeout_ms=100)
    assert r.to_json() == {"name": "x", "url": "http://x/r", "timeout_ms": 100}
    placed = replace(r, arm=4, added_at=7.0)
    assert list(placed.to_json()) == ["name", "url", "timeout_ms", "arm", "status",
                                      "added_at", "retired_at"]
    assert placed.to_json()["status"] == "active" and placed.timeout_s == 0.1
