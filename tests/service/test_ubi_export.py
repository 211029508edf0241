"""UBI out: an export of a live run (real Redis, real worker) as OpenSearch User Behavior
Insights documents validates, every document, against the UBI 1.3.0 schemas
(tests/data/ubi-1.3.0: reconstructed, see its README; ``RANKDUEL_UBI_SCHEMAS=DIR``
validates against the official files too; the schemas and how action_name is read:
tests/ubi_schemas.py), and each query's ``query_response_hit_ids``
is the list the user was shown. The bulk files alternate action and document lines; the
paged HTTP form gives the same documents as the command line.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from helpers.api import all_credited, rankers_for
from helpers.wait import wait_for

from cli.main import main
from tests.conftest import ADMIN
from tests.ubi_schemas import check_documents


def read_ndjson(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x]


def test_a_live_run_exports_as_valid_ubi(client, ranker_server, worker, api, tmp_path,
                                         capsys):
    worker.ensure()
    exp = client.create_experiment(name="ubi-out", rankers=rankers_for(
        ranker_server, "good", "bad", "mid"), algorithm="uniform",
        interleaving="team_draft", seed=4)
    shown, clicked = {}, []
    for s in range(12):
        page = client.search(exp["id"], f"red shoes {s}", k=5,
                             user=f"user-{s % 4}" if s % 3 else None)
        shown[page["impression_id"]] = [r["id"] for r in page["results"]]
        if s % 2 == 0:  # through POST /clicks
            client.click(page, [(page["results"][1]["id"], 2)])
            clicked.append((page["impression_id"], page["results"][1]["id"], 2))
        else:  # through POST /ubi/events, as ubi.js sends it (an array)
            doc = page["results"][0]["id"]
            status, out = client.request("POST", "/ubi/events", [
                {"application": "shop", "action_name": "click", "client_id": "c1",
                 "query_id": page["impression_id"], "timestamp": "2025-03-01T10:00:00+01:00",
                 "message_type": "INFO", "message": "", "user_id": "", "session_id": None,
                 "event_attributes": {"token": page["token"],
                                      "object": {"object_id": doc, "object_id_field": "id"},
                                      "position": {"ordinal": 1}}},
                {"application": "shop", "action_name": "add_to_cart",
                 "query_id": page["impression_id"], "timestamp": "2025-03-01T09:00:01Z",
                 "event_attributes": {"token": page["token"],
                                      "object": {"object_id": doc},
                                      "position": {"ordinal": 1}}}])
            assert status == 202, out
            assert [e["status"] for e in out["events"]] == ["credited", "accepted"], out
            clicked.append((page["impression_id"], doc, 1))
        client.end(page)
    wait_for(all_credited(client, exp["id"]), timeout=60, what="crediting")

    out = tmp_path / "ubi"
    assert main(["export", exp["id"], "--api", api.url, "--token", ADMIN, "--format", "ubi",
                 "--out", str(out)]) == 0
    queries = read_ndjson(out / "ubi_queries.ndjson")
    events = read_ndjson(out / "ubi_events.ndjson")
    check_documents({"ubi_queries": queries, "ubi_events": events})

    # one query per impression, its hits what the user was shown, in order
    assert {q["query_id"]: q["query_response_hit_ids"] for q in queries} == shown
    q0 = queries[0]
    assert q0["user_query"] == "red shoes 0"
    attrs = q0["query_attributes"]
    assert attrs["experiment"] == exp["id"] and attrs["interleaving"] == "team_draft"
    assert {r["name"] for r in attrs["rankers"]} <= {"good", "bad", "mid"}
    assert all(r["version"] == 1 for r in attrs["rankers"])
    assert len(attrs["teams"]) == 5
    assert {t for q in queries for t in q["query_attributes"]["teams"]} <= {
        "good", "bad", "mid", None}
    assert "user-1" not in (out / "ubi_queries.ndjson").read_text()  # a hash, not the id
    # one event per click, the document and the rank shown, with its team
    clicks = [e for e in events if e["action_name"] == "click"]
    assert sorted((e["query_id"], e["event_attributes"]["object"]["object_id"],
                   e["event_attributes"]["position"]["ordinal"]) for e in clicks) == sorted(
        clicked)
    by_id = {q["query_id"]: q for q in queries}
    for e in clicks:
        q = by_id[e["query_id"]]
        ordinal = e["event_attributes"]["position"]["ordinal"]
        assert e["event_attributes"]["team"] == q["query_attributes"]["teams"][ordinal - 1]
        assert e["client_id"] == q["client_id"]
    carts = [e for e in events if e["action_name"] == "add_to_cart"]
    assert len(carts) == 6
    assert all(e["timestamp"] == "2025-03-01T09:00:01.000Z" for e in carts)
    assert all("token" not in e["event_attributes"] for e in events)

    # the bulk files: action line, document, alternately; the same documents
    capsys.readouterr()
    assert main(["export", exp["id"], "--api", api.url, "--token", ADMIN, "--format", "ubi",
                 "--bulk", "--out", str(out)]) == 0
    for index, plain in (("ubi_queries", queries), ("ubi_events", events)):
        lines = read_ndjson(out / f"{index}.bulk.ndjson")
        assert len(lines) == 2 * len(plain)
        actions, docs = lines[0::2], lines[1::2]
        assert all(list(a) == ["index"] and a["index"]["_index"] == index for a in actions)
        assert docs == plain
        assert len({a["index"]["_id"] for a in actions}) == len(actions)

    # the HTTP form, pages of 5 log events: the same documents in the same order
    after, bulk = "0", []
    while True:
        req = urllib.request.Request(
            f"{api.url}/experiments/{exp['id']}/ubi?after={after}&limit=5",
            headers={"Authorization": f"Bearer {ADMIN}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.headers["Content-Type"].startswith("application/x-ndjson")
            lines = [json.loads(x) for x in resp.read().decode().splitlines() if x]
            nxt = resp.headers["X-Next-Cursor"]
        if nxt == after:
            break
        bulk += lines
        after = nxt
    docs = bulk[1::2]
    assert [d for a, d in zip(bulk[0::2], docs, strict=True)
            if a["index"]["_index"] == "ubi_queries"] == queries
    assert [d for a, d in zip(bulk[0::2], docs, strict=True)
            if a["index"]["_index"] == "ubi_events"] == events


def test_the_ubi_page_needs_the_admin_token(client, ranker_server, api):
    exp = client.create_experiment(name="ubi-auth", rankers=rankers_for(
        ranker_server, "a", "b"), algorithm="uniform", interleaving="team_draft")
    status, _ = client.request("GET", f"/experiments/{exp['id']}/ubi")
    assert status == 401
    status, _ = client.request("GET", "/experiments/nope/ubi", admin=True)
    assert status == 404


@pytest.mark.parametrize("fmt", ["ubi-bulk"])
def test_ubi_bulk_is_the_bulk_option(client, ranker_server, api, tmp_path, fmt):
    exp = client.create_experiment(name="ubi-bulk", rankers=rankers_for(
        ranker_server, "a", "b"), algorithm="uniform", interleaving="team_draft")
    client.search(exp["id"], "q", k=3)
    assert main(["export", exp["id"], "--api", api.url, "--token", ADMIN, "--format", fmt,
                 "--out", str(tmp_path)]) == 0
    lines = read_ndjson(tmp_path / "ubi_queries.bulk.ndjson")
    assert lines[0]["index"]["_index"] == "ubi_queries" and lines[1]["user_query"] == "q"
    assert (tmp_path / "ubi_events.bulk.ndjson").read_text() == ""
