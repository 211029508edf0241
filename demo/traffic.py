"""Simulated users against a rankduel API that is already running.

Where :mod:`demo.run` starts the whole platform itself, these functions only play the
users: :func:`start` creates an experiment over the simulated world's rankers served at
``rankers_url`` (``gunicorn 'demo.world_rankers:create_ranker_app(...)'``) with the world's
true preference matrix, so that the true-regret metric is exported; :func:`send` sends
user sessions (search, clicks, end) through the API as the demo does
(:meth:`demo.run.Demo.user_session`); :func:`wait_credited` waits for the worker.
``rankduel traffic`` loops over them (the docker compose ``demo`` profile runs it); the
metrics tests call them directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from demo.client import Client
from demo.run import Demo, DemoOptions


@dataclass
class Run:
    """An experiment of simulated users: what :func:`start` made, what :func:`send` uses."""

    demo: Demo
    client: Client
    exp_id: str
    P: np.ndarray
    best: int
    sent: int = 0


def start(api_url: str, admin_token: str, rankers_url: str, opts: DemoOptions,
          *, name: str | None = None, frontend_token: str | None = None) -> Run:
    """Create the experiment over the world's ``opts.rankers`` rankers; return the run.
    The users' searches, clicks and ends send ``frontend_token`` (a front-end key of
    ``RANKDUEL_FRONTEND_TOKENS``) when given."""
    demo = Demo(opts)
    P = demo.true_preferences()
    client = Client(api_url, admin_token, frontend_token=frontend_token)
    exp_id = demo.create_experiment(client, rankers_url, P,
                                    name or f"simulated traffic, world {opts.seed}")
    return Run(demo=demo, client=client, exp_id=exp_id, P=P, best=demo.world.true_best)


def send(run: Run, queries: int, concurrency: int | None = None) -> None:
    """Send ``queries`` more user sessions (search, clicks, end), ``concurrency`` at a time.
    Session ``n`` is seeded by ``(seed, n)``; numbering continues across calls."""
    run.demo.send(run.client, run.exp_id, run.sent, queries, run.P, run.best, concurrency)
    run.sent += queries


def wait_credited(run: Run, timeout: float = 120) -> dict[str, Any]:
    """Wait until every impression of the run is credited; the experiment's state."""
    return run.demo.wait_credited(run.client, run.exp_id, timeout=timeout)
