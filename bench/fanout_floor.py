"""The CPU floor of a search: rankduel against a hand-written fan-out, in one run.

What a team writes by hand without an experiment is a small Flask app that sends the
two rankers' requests at once, reads both answers on keep-alive connections
(``http.client``, standard library) and alternates the two lists
(:func:`create_floor_app`). That is the floor of this stack for serving two rankers;
rankduel adds the choice of the pair, interleaving, the impression and its token.

This bench starts, on loopback: a Redis, the world rankers answering after ``--delay-ms``
(20 ms, one gunicorn of their own), the minimal app and ``rankduel serve`` with the same
gunicorn settings (``--workers`` 2 × ``--threads`` 8, gthread, no access log), then
alternates rounds (floor, rankduel, rankduel, floor, ...: the order swapped each round)
of the same open-loop load (``--rate`` 100 searches/s for ``--seconds``, the Python
generator of :mod:`bench.service_load`). Each round and server: the server's CPU per
search (utime + stime of the gunicorn master and workers, from ``/proc``; the stime
part too) and p50/p99
latency as the client sees it. The medians over the rounds and their ratios are printed
last: ``cpu_ratio`` (rankduel's CPU per search over the floor's) and ``added_p50_ms``
(rankduel's p50 minus the floor's).

Control searches of a placement (``GET /search?placement=``: the control ranker's list,
no impression) are measured too, on a placement with no experiment, against the floor's
``/control`` (one ranker's list through the same minimal app): the ``*_ctl`` rows.

    .venv/bin/python bench/fanout_floor.py [--rounds 4] [--seconds 10] [--json out.json]
    # another checkout's API (its .venv) against the same floor:
    .venv/bin/python bench/fanout_floor.py --code /work/main
    # before and after in the same run: a third server, main's API, in the rotation
    .venv/bin/python bench/fanout_floor.py --before /work/main
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def create_floor_app(ranker_base: str, n_rankers: int = 12):
    """The hand-written fan-out: ``GET /search?q=&k=`` calls two rankers (a pair that
    rotates over ``n_rankers``) concurrently on this thread's keep-alive connections and
    answers ``{"results": [...]}``, their lists alternated (a document once)."""
    from flask import Flask, jsonify, request

    host, _, port = ranker_base.removeprefix("http://").partition(":")
    app = Flask("fanout-floor")
    app.json.sort_keys = False
    local = threading.local()
    pairs = itertools.count()

    def conn(n: int) -> http.client.HTTPConnection:
        conns = getattr(local, "conns", None)
        if conns is None:
            conns = local.conns = [None, None]
        if conns[n] is None:
            conns[n] = http.client.HTTPConnection(host, int(port), timeout=5)
        return conns[n]

    def drop(n: int) -> None:
        local.conns[n].close()
        local.conns[n] = None

    def answer(n: int, path: str, sent: bool) -> list:
        """Read the answer on connection ``n`` (sending again on a new connection when
        the ranker's server closed the idle one)."""
        for attempt in range(2):
            try:
                if not sent or attempt:
                    conn(n).request("GET", path)
                return json.loads(conn(n).getresponse().read())["results"]
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                drop(n)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    @app.get("/search")
    def search():
        q = request.args.get("q", "")
        k = int(request.args.get("k", 10))
        i = next(pairs)
        paths = [f"/rankers/{(i + d) % n_rankers}?q={quote(q, safe='')}&k={k}"
                 for d in (0, 1)]
        sent = []
        for n, path in enumerate(paths):  # both requests out before either answer is read
            try:
                conn(n).request("GET", path)
                sent.append(True)
            except (ConnectionResetError, BrokenPipeError):
                drop(n)
                sent.append(False)
        a, b = (answer(n, path, s) for n, (path, s) in enumerate(zip(paths, sent, strict=True)))
        results, seen = [], set()
        for pair in itertools.zip_longest(a, b):
            for item in pair:
                if item is not None and item["id"] not in seen and len(results) < k:
                    seen.add(item["id"])
                    results.append(item)
        return jsonify({"results": results})

    @app.get("/control")
    def control():
        """The control's floor: one ranker's (the first's) list, its first ``k``."""
        q = request.args.get("q", "")
        k = int(request.args.get("k", 10))
        path = f"/rankers/0?q={quote(q, safe='')}&k={k}"
        return jsonify({"results": answer(0, path, sent=False)[:k]})

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return app


def main() -> int:
    from bench.proxy_ab import start_api
    from bench.service_load import (
        bench_env,
        open_load,
        start_delay_rankers,
        user_system_seconds,
    )
    from demo.client import Client
    from demo.stack import Stack, child_pids, free_port
    from demo.world_rankers import demo_world, ranker_name

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate", type=float, default=100.0, help="open-loop searches/s")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--procs", type=int, default=2, help="load generator processes")
    ap.add_argument("--code", default=str(ROOT),
                    help="the checkout whose API is measured (its .venv is used)")
    ap.add_argument("--before", help="also measure this checkout's API (its .venv), in the "
                    "same rounds: a before/after in one run")
    ap.add_argument("--json", help="write the rounds and medians here too")
    args = ap.parse_args()

    import gunicorn

    quiet = ["--no-control-socket"] if gunicorn.version_info >= (27,) else []
    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-floor-")
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = bench_env(redis_url, admin, RANKDUEL_ACCESS_LOG="off")
        _, rank_url = start_delay_rankers(stack, env, args.delay_ms, args.rankers)

        floor_port = free_port()
        floor = stack.python("floor", [
            "-m", "gunicorn", "--bind", f"127.0.0.1:{floor_port}", "--workers",
            str(args.workers), "--threads", str(args.threads), "--worker-class", "gthread",
            "--keep-alive", "5", "--log-level", "warning", *quiet,
            f"bench.fanout_floor:create_floor_app({rank_url!r}, n_rankers={args.rankers})"],
            env)
        floor_url = f"http://127.0.0.1:{floor_port}"
        stack.wait_healthy(floor, floor_url)
        world = demo_world(1, args.rankers)
        queries = [world.query_text(q) for q in range(world.n_queries)]
        # name -> (base URL, server process, paths, the floor it is compared with)
        servers = {
            "floor": (floor_url, floor,
                      ["/search?" + urlencode({"q": q, "k": 10}) for q in queries], None),
            "floor_ctl": (floor_url, floor,
                          ["/control?" + urlencode({"q": q, "k": 10}) for q in queries],
                          None),
        }
        apis = {"rankduel": args.code, **({"before": args.before} if args.before else {})}
        for name, code in apis.items():
            api, api_url = start_api(stack, name, Path(code).resolve(), env, args.workers,
                                     args.threads)
            exp = Client(api_url, admin).create_experiment(
                name=name, algorithm="mergedts", interleaving="team_draft", seed=1,
                params={"alpha": 0.8**6, "c": 4e6, "batch_size": 4},
                rankers=[{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                          "timeout_ms": 1000} for n in range(args.rankers)])
            servers[name] = (api_url, api, [
                "/search?" + urlencode({"experiment": exp["id"], "q": q, "k": 10})
                for q in queries], "floor")
            # control searches: a placement with no experiment in it (a checkout without
            # placements answers 404 and is measured on experiment searches only)
            status, _ = Client(api_url, admin).request("POST", "/placements", {
                "name": f"web-{name}", "control": {
                    "name": "control", "url": f"{rank_url}/rankers/0", "timeout_ms": 1000}},
                admin=True)  # one Redis for every API: a placement each
            if status == 201:
                servers[f"{name}_ctl"] = (api_url, api, [
                    "/search?" + urlencode({"placement": f"web-{name}", "q": q, "k": 10})
                    for q in queries], "floor_ctl")
        if "floor_ctl" not in {floor for *_, floor in servers.values()}:
            del servers["floor_ctl"]
        for base, _, paths, _ in servers.values():  # warm: connections, caches
            open_load(base, paths, rate=args.rate, seconds=2, procs=args.procs)
        rows: dict[str, list[dict]] = {name: [] for name in servers}
        for r in range(args.rounds):
            order = list(servers) if r % 2 == 0 else list(servers)[::-1]  # A B .. B A
            for name in order:
                base, child, paths, _ = servers[name]
                pids = [child.proc.pid, *child_pids(child.proc.pid)]
                user0, sys0 = user_system_seconds(pids)
                out = open_load(base, paths, rate=args.rate, seconds=args.seconds,
                                procs=args.procs)
                user1, sys1 = user_system_seconds(pids)
                n = max(out["requests"], 1)
                row = {"cpu_us_per_search": round((user1 - user0 + sys1 - sys0) / n * 1e6),
                       "system_us_per_search": round((sys1 - sys0) / n * 1e6),
                       "p50_ms": out["p50_ms"], "p99_ms": out["p99_ms"],
                       "requests": out["requests"], "errors": out["errors"],
                       "send_lag_p99_ms": out["send_lag_p99_ms"],
                       "load_average_1m": round(os.getloadavg()[0], 1)}
                rows[name].append(row)
                print(f"round {r + 1} {name:12s} {json.dumps(row)}", flush=True)
    keys = ("cpu_us_per_search", "system_us_per_search", "p50_ms", "p99_ms", "errors",
            "send_lag_p99_ms")
    med = {name: {k: round(statistics.median(row[k] for row in rs), 2) for k in keys}
           for name, rs in rows.items()}
    ratios: dict[str, dict] = {}
    for name, (*_, floor_name) in servers.items():
        if floor_name is None:
            continue
        ratios[name] = {
            "vs": floor_name,
            "cpu_ratio": round(med[name]["cpu_us_per_search"]
                               / med[floor_name]["cpu_us_per_search"], 3),
            "cpu_ratio_per_round": [
                round(a["cpu_us_per_search"] / b["cpu_us_per_search"], 3)
                for a, b in zip(rows[name], rows[floor_name], strict=True)],
            "added_p50_ms": round(med[name]["p50_ms"] - med[floor_name]["p50_ms"], 2),
            "added_p99_ms": round(med[name]["p99_ms"] - med[floor_name]["p99_ms"], 2),
        }
        if floor_name == "floor_ctl":  # the control against the two-ranker fan-out too
            ratios[name]["cpu_ratio_vs_fanout"] = round(
                med[name]["cpu_us_per_search"] / med["floor"]["cpu_us_per_search"], 3)
    print(f"\nmedians over {args.rounds} rounds at {args.rate:g} searches/s, "
          f"{args.delay_ms:g} ms rankers (rankduel: {args.code}; before: {args.before}; "
          f"{time.strftime('%H:%M')})")
    print(f"{'':20s}" + "".join(f"{name:>13s}" for name in servers))
    for k in keys:
        print(f"{k:20s}" + "".join(f"{med[name][k]:>13}" for name in servers))
    for name, v in ratios.items():
        print(f"{name:20s} {json.dumps(v)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rows,
                                               "medians": med, "ratios": ratios},
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
