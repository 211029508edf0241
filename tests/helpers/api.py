"""The API under test and what the tests ask it: the app on a loopback port, rankers on the
toy server, and "is everything credited"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def serve_api(env: dict[str, str]):
    """``create_app`` configured from ``env`` (as the worker is), served on a free loopback
    port by ``demo.wsgi_server.ThreadedServer``; the server, with the config as ``.config``."""
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import load_config

    config = load_config(env=env)
    server = ThreadedServer(create_app(config))
    server.config = config
    return server


def rankers_for(server, *names: str, timeout_ms: int = 2000) -> list[dict[str, Any]]:
    """Ranker declarations for the toy rankers ``names`` of ``server``
    (tests/helpers/toy_rankers.py). 2 s by default: a starved test process answers late,
    and a test about something else must not see a timeout (tests about timeouts give
    their own)."""
    return [{"name": n, "url": f"{server.url}/r/{n}", "timeout_ms": timeout_ms}
            for n in names]


def all_credited(client, exp_id: str) -> Callable[[], Any]:
    """A check for :func:`helpers.wait.wait_for`: the experiment's state once every
    impression is credited, else False."""
    def check():
        s = client.experiment(exp_id)
        c = s["counters"]
        return c.get("credited", 0) == c["impressions"] and s

    return check
