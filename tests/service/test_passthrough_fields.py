"""A shown result carries the fields of the ranker it is credited to (its team in team
draft; the ranker ranking it highest for methods without teams): the rule of
:mod:`interleaving.owners`, through the real API.

The toy rankers ``good`` and ``alt`` return mostly the same documents, each copy with a
pass-through field ``source`` naming the ranker that returned it.
"""

from __future__ import annotations

import json

import pytest

from service.store.keys import imp_key

RANKS = {"good": [f"d{i:02d}" for i in range(30)]}
RANKS["alt"] = RANKS["good"][1:] + RANKS["good"][:1]


def _experiment(client, ranker_server, interleaving: str, name: str) -> dict:
    rankers = [{"name": n, "url": f"{ranker_server.url}/r/{n}", "timeout_ms": 2000}
               for n in ("good", "alt")]
    return client.create_experiment(name=name, rankers=rankers, algorithm="uniform",
                                    interleaving=interleaving, seed=11)


def _highest(doc: str, participants: list[str]) -> str:
    return min(participants, key=lambda n: (RANKS[n].index(doc), participants.index(n)))


@pytest.mark.parametrize("interleaving", ["team_draft", "probabilistic", "balanced"])
def test_each_result_has_the_fields_of_the_ranker_it_is_credited_to(
        client, ranker_server, rd, interleaving):
    exp = _experiment(client, ranker_server, interleaving, f"fields-{interleaving}")
    checked = teams_seen = 0
    for n in range(12):
        page = client.search(exp["id"], f"query {n}", k=6, user=f"u{n}")
        participants = page["rankers"]
        assert sorted(participants) == ["alt", "good"]
        record = json.loads(rd.hget(imp_key(exp["id"], page["impression_id"]), "record"))
        teams = record.get("teams")
        for slot, result in enumerate(page["results"]):
            team = teams[slot] if teams is not None else -1
            want = participants[team] if team >= 0 else _highest(result["id"],
                                                                 participants)
            assert result["source"] == want, (interleaving, slot, result, record)
            checked += 1
            teams_seen += team >= 0
    assert checked == 12 * 6
    if interleaving == "team_draft":  # both teams' copies were shown
        assert teams_seen > 0


def test_a_next_page_keeps_the_rule(client, ranker_server, rd):
    exp = _experiment(client, ranker_server, "team_draft", "fields-paging")
    page1 = client.search(exp["id"], "paged", k=4, user="pager")
    status, page2 = client.request(
        "GET", f"/search?experiment={exp['id']}&q=paged&k=4&user=pager&page=2"
        f"&impression_id={page1['impression_id']}&token={page1['token']}")
    assert status == 200, page2
    record = json.loads(rd.hget(imp_key(exp["id"], page1["impression_id"]), "record"))
    participants = page1["rankers"]
    for result in page2["results"]:
        team = record["teams"][result["rank"] - 1]
        want = participants[team] if team >= 0 else _highest(result["id"], participants)
        assert result["source"] == want
