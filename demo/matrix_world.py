"""A world defined by a preference matrix, for running the papers' proxy experiment
through the live service (the live-versus-offline harness, ``bench/live_vs_offline.py``).

Each ranker ``n`` answers one document, ``doc<n>``. A simulated user shown the pair
(i, j) — team-draft interleaving of two one-document lists shows both — clicks ``doc<i>``
with probability ``P[i, j]`` and ``doc<j>`` otherwise, so team-draft credit records an
outcome drawn from Bernoulli(``P[i, j]``): exactly the comparison ``rankduel simulate``
draws (seed 000 §5.3), but through the real ``/search``, ``/clicks``, ``/end``, Redis and
the Celery worker, with feedback as delayed as the live path makes it.

Run the rankers under gunicorn (or in a thread)::

    gunicorn 'demo.matrix_world:create_app()'
"""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from flask import Flask, jsonify

from demo.client import Client


def create_app() -> Flask:
    """A WSGI app serving ranker ``n`` at ``GET /rankers/<n>``: one document, ``doc<n>``."""
    app = Flask("rankduel-matrix-rankers")

    @app.get("/rankers/<int:n>")
    def rank(n: int):
        return jsonify({"results": [{"id": f"doc{n}"}]})

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return app


def rankers(base_url: str, K: int, timeout_ms: int = 2000) -> list[dict[str, Any]]:
    """The ``rankers`` field of an experiment over ``K`` matrix rankers."""
    return [{"name": f"m{n}", "url": f"{base_url}/rankers/{n}", "timeout_ms": timeout_ms}
            for n in range(K)]


@dataclass
class LiveRun:
    """What the simulated users saw: pairs shown (sorted arm pairs; ``(a, a)`` for one
    list), the cumulative regret against the winner, per search in order of completion."""

    pairs: Counter = field(default_factory=Counter)
    regret: list[float] = field(default_factory=list)
    errors: int = 0


def drive(client: Client, exp_id: str, P: np.ndarray, winner: int, n_searches: int, *,
          concurrency: int, seed: int) -> LiveRun:
    """Send ``n_searches`` user sessions (search, a Bernoulli click, end), ``concurrency``
    at a time. Session ``s`` draws its click from a generator seeded by ``(seed, s)``."""
    run = LiveRun()
    lock = threading.Lock()
    gap = P[winner] - 0.5
    clients = [Client(client.base_url) for _ in range(concurrency)]

    def session(s: int) -> None:
        c = clients[s % concurrency]
        rng = np.random.default_rng([seed, s])
        status, page = c.request("GET", f"/search?experiment={exp_id}&q=q{s}&k=2")
        if status != 200:
            with lock:
                run.errors += 1
            return
        arms = [int(r["id"][3:]) for r in page["results"]]
        if len(arms) == 2:
            i, j = arms
            pick = i if rng.random() < P[i, j] else j
            c.click(page, [(f"doc{pick}", arms.index(pick) + 1)])
        else:
            i = j = arms[0]
        c.end(page)
        with lock:
            run.pairs[(min(i, j), max(i, j))] += 1
            run.regret.append((gap[i] + gap[j]) / 2)

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(session, range(n_searches)))
    for c in clients:
        c.close()
    return run
