"""End to end through the real stack: create → search → click → end → credited W."""

from __future__ import annotations

import numpy as np
from helpers.wait import wait_for


def make_experiment(client, ranker_server, names=("good", "bad"), algorithm="uniform",
                    method="team_draft", **extra):
    rankers = [{"name": n, "url": f"{ranker_server.url}/r/{n}", "timeout_ms": 2000}
               for n in names]
    return client.create_experiment(name="t", rankers=rankers, algorithm=algorithm,
                                    interleaving=method, seed=7, **extra)


def test_vertical_slice(client, ranker_server, worker):
    exp = make_experiment(client, ranker_server)
    assert exp["lifecycle"] == "running" and exp["comparisons"] == 0
    page = client.search(exp["id"], "alpine lake", k=6)
    assert sorted(page["rankers"]) == ["bad", "good"]
    assert [r["rank"] for r in page["results"]] == list(range(1, 7))
    assert all("title" in r for r in page["results"])  # ranker fields pass through
    top = page["results"][0]
    out = client.click(page, [(top["id"], 1)])
    assert out["accepted"] == 1
    again = client.click(page, [(top["id"], 1)])  # a repeated click counts once
    assert again["accepted"] == 0 and again["duplicates"] == 1
    client.end(page)

    state = wait_for(lambda: (s := client.experiment(exp["id"]))["comparisons"] == 1 and s,
                     what="credit")
    W = np.array(state["W"])
    assert W.sum() == 1.0  # one decisive impression, counted once
    assert state["counters"]["decisive"] == 1
    # the clicked document's team won: team draft opens with each ranker's top document
    # (good: d00, bad: d29; they share no prefix), so the first slot is one of those two
    winner = {"d00": "good", "d29": "bad"}[top["id"]]
    arm = {r["name"]: r["arm"] for r in state["rankers"]}[winner]
    assert W[arm].sum() == 1.0
