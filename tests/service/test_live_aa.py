"""A live A/A test (issue 32): the whole pipeline (the API on a port, Redis, the Celery
worker, HTTP rankers, interleaving, the demo's simulated users with navigational clicks)
over three **identical** rankers must never certify a winner, and their pooled preference
must be ½ within its interval.

The three rankers are one ranker entered three times (the same URL): the demo world's
best ranker, whose answer to each call swaps adjacent results at random (a fresh draw per
call, as an engine breaking ties between equal scores does). Entered three times it is
three rankers with the same distribution of lists, so every true preference is exactly ½;
the draws make their lists differ, so the comparisons are decisive and a bias of the
pipeline (an arm-order bias of the interleaving or of the credit, a tie rule favouring
the first participant) would move the pooled preference off ½.

A statistical test, so with stated false-alarm rates: ``recommended`` certifies in at most
δ = 5 % of A/A experiments (measured offline far below that, bench/results/verdicts), and
the pooled preference misses its 99.9 % Wilson interval in 0.1 % of runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ADMIN
from flask import Flask, jsonify, request

from demo.client import Client
from demo.run import Demo, DemoOptions
from demo.world_rankers import demo_world
from demo.wsgi_server import ThreadedServer

SEARCHES = 3000
K = 3
SEED = 7
#: z of the two-sided 99.9 % interval of the pooled preference
Z = 3.29


def _aa_app(seed: int) -> Flask:
    world = demo_world(seed, K)
    app = Flask("aa-ranker")

    @app.get("/aa")
    def rank():
        q = world.query_id(request.args.get("q", ""))
        k = int(request.args.get("k", 10))
        if q is None:
            return jsonify({"results": []})
        docs = world.ranking(world.true_best, q, k)
        rng = np.random.default_rng()  # a fresh draw per call
        for i in range(0, len(docs) - 1):
            if rng.random() < 0.5:
                docs[i], docs[i + 1] = docs[i + 1], docs[i]
        return jsonify({"results": [{"id": d} for d in docs]})

    return app


@pytest.fixture(scope="module")
def aa_rankers():
    server = ThreadedServer(_aa_app(SEED))
    yield server
    server.close()


def pooled(W: np.ndarray, ties: float) -> tuple[float, float, float, float]:
    """``(p, n, lower, upper)``: the preference of the lower arm over the higher one over
    the decisive comparisons of every pair (``W`` holds each of the ``ties`` as ½ a win
    to both sides: taken out), with its Wilson interval at ``Z``."""
    upper = np.triu(W, 1).sum() - ties / 2
    n = upper + np.tril(W, -1).sum() - ties / 2
    p = upper / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return float(p), float(n), centre - half, centre + half


def test_three_identical_rankers_are_never_certified(api, worker, aa_rankers):
    worker.ensure()
    opts = DemoOptions(rankers=K, algorithm="recommended", interleaving="team_draft",
                       click_model="navigational", seed=SEED, concurrency=8, quiet=True)
    demo = Demo(opts)
    client = Client(api.url, ADMIN)
    exp_id = client.create_experiment(
        name="live A/A", algorithm="recommended", interleaving="team_draft", seed=SEED,
        rankers=[{"name": f"r{n:02d}", "url": f"{aa_rankers.url}/aa", "timeout_ms": 2000}
                 for n in range(K)],
        probe=False)["id"]  # the world's rankers know only its queries, not the probe's
    demo.send(client, exp_id, 0, SEARCHES, np.full((K, K), 0.5), 0)
    assert demo.tally.errors == 0, demo.tally.failures
    state = demo.wait_credited(client, exp_id, timeout=120)
    assert state["counters"]["impressions"] == SEARCHES
    rep = client.report(exp_id)
    W = np.array(state["W"])
    counters = state["counters"]
    p, n, lo, hi = pooled(W, counters.get("ties", 0))
    print(f"A/A: pooled p {p:.4f} over {n:.0f} decisive comparisons, interval "
          f"[{lo:.4f}, {hi:.4f}]; counters {counters}; {rep['verdict']}")
    assert n >= 500, n  # decisive comparisons enough for the interval to mean something
    assert lo <= 0.5 <= hi, (p, n, lo, hi)
    assert rep["certified"] is False, rep["verdict"]
    assert rep["confidence"] is None
    assert not rep.get("shown_worse"), rep.get("shown_worse")
