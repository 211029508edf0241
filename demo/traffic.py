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

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from demo.client import ApiResponseError, Client
from demo.orders import OrderService
from demo.run import ORDER_DELAY_S, Demo, DemoOptions


@dataclass
class Run:
    """An experiment of simulated users: what :func:`start` made, what :func:`send` uses."""

    demo: Demo
    client: Client
    exp_id: str
    P: np.ndarray
    best: int
    sent: int = 0


def transient(exc: Exception) -> bool:
    """Whether creating the experiment may succeed later: the API unreachable or not ready
    (a connection error, 502/503/504), or a ranker that did not answer the API's test query
    in time (422 from the probe: the rankers still starting, or a loaded machine)."""
    if isinstance(exc, OSError):
        return True
    if not isinstance(exc, ApiResponseError):
        return False
    return exc.status in (502, 503, 504) or (
        exc.status == 422 and "did not answer the test query" in str(exc))


def start(api_url: str, admin_token: str, rankers_url: str, opts: DemoOptions,
          *, name: str | None = None, frontend_token: str | None = None,
          wait: float = 0, say: Callable[[str], None] | None = None) -> Run:
    """Create the experiment over the world's ``opts.rankers`` rankers; return the run.
    The users' searches, clicks and ends send ``frontend_token`` (a front-end key of
    ``RANKDUEL_FRONTEND_TOKENS``) when given.

    With ``wait`` > 0, a :func:`transient` failure (the API or the rankers still starting)
    is retried, with a growing pause of up to 10 s and a line to ``say`` each time, for up
    to ``wait`` seconds; then ``ValueError`` says what was last wrong. Any other failure
    (a wrong token, a refused body) is raised at once."""
    demo = Demo(opts)
    P = demo.true_preferences()
    client = Client(api_url, admin_token, frontend_token=frontend_token)
    deadline = time.monotonic() + wait
    pause = 1.0
    while True:
        try:
            exp_id = demo.create_experiment(client, rankers_url, P,
                                            name or f"simulated traffic, world {opts.seed}")
            break
        except (OSError, ApiResponseError) as exc:
            if wait <= 0 or not transient(exc):
                raise
            reason = (f"cannot reach the API at {api_url}: {exc}" if isinstance(exc, OSError)
                      else f"the API at {api_url} answered {exc}")
            if time.monotonic() + pause > deadline:
                raise ValueError(f"{reason} (still failing after {wait:g} s)") from None
            if say:
                say(f"waiting for the API and the rankers ({reason}); retrying in {pause:g} s")
            time.sleep(pause)
            pause = min(pause * 2, 10.0)
    return Run(demo=demo, client=client, exp_id=exp_id, P=P, best=demo.world.true_best)


def send(run: Run, queries: int, concurrency: int | None = None) -> None:
    """Send ``queries`` more user sessions (search, clicks, end, and the purchases an
    order service reports a few seconds later), ``concurrency`` at a time. Session ``n``
    is seeded by ``(seed, n)``; numbering continues across calls. Returns once every
    purchase is sent."""
    demo, client = run.demo, run.client
    if demo.opts.purchases:  # the users' purchases, reported by the order service
        # a back end: its front-end key, else the admin token (which may do anything)
        key = client.frontend_token or client.admin_token
        demo.orders = OrderService(Client(client.base_url, frontend_token=key),
                                   demo.order_sent, demo.order_failed)
    try:
        demo.send(client, run.exp_id, run.sent, queries, run.P, run.best, concurrency)
    finally:
        if demo.orders is not None:  # every order sent, at its time
            demo.orders.close(timeout=ORDER_DELAY_S[1] + 30)
            demo.orders = None
    run.sent += queries


def wait_credited(run: Run, timeout: float = 120) -> dict[str, Any]:
    """Wait until every impression of the run is credited; the experiment's state."""
    return run.demo.wait_credited(run.client, run.exp_id, timeout=timeout)
