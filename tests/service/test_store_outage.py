"""A Redis outage does not take search down (issue 49; docs/operations/outages.md).

An API with a Redis of its own (SIGKILLed and started again on the same append-only
file), a placement whose control is the toy ranker ``good`` and an experiment on half its
traffic:

* while Redis is down every placement search answers 200 with the control's list,
  ``"degraded": "store"`` and no impression or token; an ``?experiment=`` search answers
  its first ranker's list (``fallback=first``, the default) or 503 with ``Retry-After``
  (``fallback=none``); a click answers 503 with ``Retry-After``;
* once Redis is back, the experiment's pages come back, the click sent again is
  accepted, and ``rankduel_degraded_searches_total`` counted the degraded searches.
"""

from __future__ import annotations

import signal
from urllib.parse import urlencode

import requests

from demo.stack import wait_until

ADMIN = "a" * 20


def _ranker(server, name: str, path: str) -> dict:
    return {"name": name, "url": f"{server.url}/r/{path}", "timeout_ms": 2000}


def test_searches_survive_a_redis_sigkill(tmp_path, ranker_server):
    from demo.client import Client
    from demo.stack import Stack
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import Config

    with Stack(tmp_path) as stack:
        url = stack.start_redis()
        config = Config(redis_url=url, admin_token=ADMIN, secret_key="s" * 20,
                        ranker_allow="127.0.0.1,localhost", clicks_per_client_per_minute=0,
                        state_max_age_ms=0, store_budget_ms=200)
        server = ThreadedServer(create_app(config))
        try:
            c = Client(server.url, ADMIN)
            status, body = c.request("POST", "/placements", {
                "name": "web", "control": _ranker(ranker_server, "prod", "good")},
                admin=True)
            assert status == 201, body
            status, body = c.request("POST", "/experiments", {
                "name": "half", "algorithm": "uniform", "interleaving": "team_draft",
                "rankers": [_ranker(ranker_server, "first", "mid"),
                            _ranker(ranker_server, "second", "alt")],
                "placement": "web", "traffic": 0.5, "probe": False}, admin=True)
            assert status == 201, body
            exp = body["id"]

            def place(user: str) -> tuple[int, dict]:
                return c.request("GET", "/search?" + urlencode(
                    {"placement": "web", "q": "shoes", "k": 5, "user": user}))

            control = [f"d{i:02d}" for i in range(5)]  # the toy ranker "good"
            served = [place(f"u{i}") for i in range(40)]
            assert {s for s, _ in served} == {200}
            in_exp = next(b for _, b in served if b["experiment"] == exp)
            page = c.search(exp, "shoes", k=5)  # this process now knows the experiment

            redis_child = stack.redis_child
            redis_child.kill(signal.SIGKILL)
            redis_child.proc.wait(30)
            down = [place(f"u{i}") for i in range(40)]
            assert {s for s, _ in down} == {200}, [b for s, b in down if s != 200][:3]
            for _, b in down:
                assert b["degraded"] == "store", b
                assert [r["id"] for r in b["results"]] == control
                assert b["impression_id"] is None and b["token"] is None
                assert b.get("page_token") is None and b["experiment"] is None
            status, first = c.request("GET", f"/search?experiment={exp}&q=shoes&k=5")
            assert status == 200 and first["degraded"] == "store", first
            assert first["rankers"] == ["first"] and first["token"] is None
            r = requests.get(f"{server.url}/search", params={
                "experiment": exp, "q": "shoes", "fallback": "none"}, timeout=10)
            assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text
            assert "state store unavailable" in r.json()["error"]
            click = {"impression_id": page["impression_id"], "token": page["token"],
                     "clicks": [{"id": page["results"][0]["id"], "rank": 1}]}
            r = requests.post(f"{server.url}/clicks", json=click, timeout=10)
            assert r.status_code == 503 and r.headers["Retry-After"] == "1", r.text

            redis_child.start()
            stack.wait_redis()

            def experiment_pages() -> bool:
                return any(b.get("experiment") == exp and not b.get("degraded")
                           for _, b in (place(f"u{i}") for i in range(20)))

            wait_until(experiment_pages, 30, "the experiment's pages after Redis returns")
            status, body = c.request("POST", "/clicks", click)  # rankduel.js sends it again
            assert status == 202 and body["accepted"] == 1, body
            assert in_exp["token"]  # the experiment served before the outage too
            metrics = requests.get(f"{server.url}/metrics", timeout=10,
                                   headers={"Authorization": f"Bearer {ADMIN}"}).text
            degraded = {line.split("{")[1].split("}")[0]: float(line.rsplit(" ", 1)[1])
                        for line in metrics.splitlines()
                        if line.startswith("rankduel_degraded_searches_total{")}
            assert degraded['kind="placement"'] >= 40, degraded
            assert degraded['kind="experiment"'] >= 1 and degraded['kind="refused"'] >= 1
        finally:
            server.close()
