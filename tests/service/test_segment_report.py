"""The report per segment in a live run (the app on a port, Redis, the Celery worker, the
matrix world's rankers: ranker n answers doc<n>): users on mobile prefer m1, everyone
else m0 (the overall champion). The report flags mobile, names m1 in the verdict, shows
the tables in the JSON and in ``rankduel report``; no other value is flagged.

The flag's false-positive rate where no value differs is checked offline, seeded, in
tests/stats/test_segment_flag_rates.py.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from helpers.api import all_credited
from helpers.wait import wait_for

from cli.commands.report import table
from demo import matrix_world
from demo.client import Client
from demo.wsgi_server import ThreadedServer

SEARCHES = 900
#: P[i, j]: the chance a user clicks doc<i> over doc<j>, by device
P_DESKTOP = np.array([[0.5, 0.9, 0.9], [0.1, 0.5, 0.7], [0.1, 0.3, 0.5]])
P_MOBILE = np.array([[0.5, 0.1, 0.9], [0.9, 0.5, 0.9], [0.1, 0.1, 0.5]])


@pytest.fixture(scope="module")
def matrix_rankers():
    server = ThreadedServer(matrix_world.create_app())
    yield server
    server.close()


def drive(base_url: str, exp_id: str, n: int, seed: int, concurrency: int = 4) -> int:
    """``n`` sessions (search with segments, one Bernoulli click, end); the errors."""
    clients = [Client(base_url) for _ in range(concurrency)]
    errors = []
    lock = threading.Lock()

    def session(s: int) -> None:
        c = clients[s % concurrency]
        rng = np.random.default_rng([seed, s])
        device = "mobile" if rng.random() < 0.35 else "desktop"
        market = ["de", "fr", "us", "jp"][int(rng.integers(0, 4))]
        try:
            page = c.search(exp_id, f"q{s}", k=2,
                            segments={"device": device, "market": market})
            arms = [int(r["id"][3:]) for r in page["results"]]
            if len(arms) == 2:
                i, j = arms
                P = P_MOBILE if device == "mobile" else P_DESKTOP
                pick = i if rng.random() < P[i, j] else j
                c.click(page, [(f"doc{pick}", arms.index(pick) + 1)])
            c.end(page)
        except Exception as exc:  # counted: the assertion below shows the first
            with lock:
                errors.append(exc)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(session, range(n)))
    for c in clients:
        c.close()
    assert not errors, errors[0]
    return len(errors)


def test_a_segment_that_prefers_another_ranker_is_flagged_and_named(
        client, worker, matrix_rankers):
    worker.ensure()
    exp = client.create_experiment(
        name="seg-live", rankers=matrix_world.rankers(matrix_rankers.url, 3),
        algorithm="uniform", interleaving="team_draft", seed=5,
        segments={"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]})
    drive(client.base_url, exp["id"], SEARCHES, seed=7)
    state = wait_for(all_credited(client, exp["id"]), timeout=120, what="credit")
    assert state["counters"]["decisive"] > 0.9 * SEARCHES * 2 / 3  # pairs (i != j) click

    rep = client.report(exp["id"])
    seg = rep["segments"]
    assert rep["champion"] == "m0"
    assert seg["tests"] == (3 + 4) * 2 and seg["delta"] == 0.05
    flags = [(f["dimension"], f["value"], f["ranker"]) for f in seg["heterogeneous"]]
    assert flags == [("device", "mobile", "m1")], flags
    assert "m0 leads overall, but m1 is preferred on mobile (device)" in rep["verdict"]
    mobile = next(v for v in seg["dimensions"]["device"] if v["value"] == "mobile")
    m1 = next(r for r in mobile["rankers"] if r["name"] == "m1")
    assert m1["preferred"] and m1["lower"] > 0.5 and m1["wins"] > m1["losses"]
    # the market values (every device mixed in) agree with the total: nothing flagged,
    # and each value's counts add up to the champion's overall row
    markets = seg["dimensions"]["market"]
    assert [v["value"] for v in markets] == ["de", "fr", "us", "other"]
    overall = next(r for r in rep["rankers"] if r["name"] == "m1")["vs_champion"]
    for dim in ("device", "market"):
        rows = [r for v in seg["dimensions"][dim] for r in v["rankers"] if r["name"] == "m1"]
        assert sum(r["wins"] for r in rows) == overall["wins"]
        assert sum(r["losses"] for r in rows) == overall["losses"]
    text = table(rep)
    assert "segments:" in text and "mobile" in text and "*" in text
