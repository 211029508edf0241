"""Before/after of what rankduel adds to a search, both APIs in one stack, alternated.

On a shared machine the load of other jobs changes between two runs of
:mod:`bench.service_load` more than a change to the request path does. This bench serves
the API of two checkouts at once (``--before``, e.g. ``/work/main``, with its own
interpreter, and this one), on the same Redis and the same rankers, and measures them in
turn, ``--rounds`` times, the order swapped every round, so both see the same machine.
Each round and API:

* closed loop: ``/bare`` and ``/search`` req/s (``search_vs_bare_throughput``), and the
  API processes' CPU per search (``/proc``);
* open loop at ``--rate`` searches/s against the fast world rankers: what rankduel adds
  (latency minus ``Server-Timing: rankers``), p50 and p99;
* open loop at ``--delay-rate`` searches/s against rankers answering after ``--delay-ms``.

The medians over the rounds are printed last, with the load average, and the paired
differences (after minus before, each round: both measured back to back) with their
median: their spread is the noise of the comparison.

    .venv/bin/python bench/proxy_ab.py --before /work/main [--rounds 3] [--seconds 5]
    # two other checkouts (each with a .venv), e.g. the commits either side of a change
    .venv/bin/python bench/proxy_ab.py --before /tmp/old --after /tmp/new
    # one checkout, two gunicorn settings (before: --api-workers/--api-threads)
    .venv/bin/python bench/proxy_ab.py --before . --after-workers 4 --after-threads 4
    # the open loops driven by wrk instead of Python (see bench/service_load.py)
    .venv/bin/python bench/proxy_ab.py --before /work/main --generator wrk --rate 250
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.service_load import (  # noqa: E402
    WRK_MISSING,
    bench_env,
    load,
    open_load,
    proc_cpu_seconds,
    start_delay_rankers,
    wrk_flat,
    wrk_load,
)
from demo.client import Client  # noqa: E402
from demo.stack import Child, Stack, child_pids, free_port  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402


def start_api(stack: Stack, name: str, code: Path, env: dict[str, str], workers: int,
              threads: int) -> tuple[Child, str]:
    """``rankduel serve`` of checkout ``code`` (its .venv, cwd and PYTHONPATH)."""
    port = free_port()
    prom = stack.workdir / f"prom-{name}"
    prom.mkdir()
    argv = [str(code / ".venv/bin/python"), "-m", "cli.main", "serve", "--bind",
            f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads),
            "--app", "bench.service_load:create_bench_app"]
    child = Child(name, argv, env=dict(env, PYTHONPATH=str(code),
                                       PROMETHEUS_MULTIPROC_DIR=str(prom)),
                  log_path=stack.workdir / "logs" / f"{name}.log", cwd=str(code))
    stack.children.append(child)
    base = f"http://127.0.0.1:{port}"
    stack.wait_healthy(child, base)
    return child, base


def measure(base: str, pids: list[int], searches: list[str], delay_searches: list[str],
            args) -> dict[str, float]:
    """One round of one API."""
    out: dict[str, float] = {"errors": 0}
    if "closed" in args.parts:
        bare = load(base, ["/bare"], clients=args.clients, procs=args.procs,
                    seconds=args.seconds)
        cpu0 = proc_cpu_seconds(pids)
        search = load(base, searches, clients=args.clients, procs=args.procs,
                      seconds=args.seconds)
        cpu1 = proc_cpu_seconds(pids)
        out["bare_req_s"] = bare["req_per_s"]
        out["search_req_s"] = search["req_per_s"]
        out["search_vs_bare_throughput"] = round(search["req_per_s"] / bare["req_per_s"], 3)
        out["api_cpu_us_per_search"] = round((cpu1 - cpu0) / max(search["requests"], 1) * 1e6)
        out["errors"] += bare["errors"] + search["errors"]
    if args.generator == "wrk":
        c = args.wrk_connections
        if "open" in args.parts:
            fast = wrk_load(base, searches, seconds=args.seconds, connections=c, rate=args.rate)
            bare = wrk_load(base, ["/bare"], seconds=args.seconds, connections=c,
                            rate=args.rate)
            out.update(wrk_flat("wrk_", fast), **wrk_flat("wrk_bare_", bare, parts=("",)),
                       wrk_lag_p99_ms=fast["send_lag_p99_ms"])
            out["errors"] += fast["errors"] + bare["errors"]
        if "delay" in args.parts:
            delay = wrk_load(base, delay_searches, seconds=args.seconds, connections=c,
                             rate=args.delay_rate)
            out.update(wrk_flat("wrk_delay_", delay),
                       wrk_delay_lag_p99_ms=delay["send_lag_p99_ms"])
            out["errors"] += delay["errors"]
        return out
    if "open" in args.parts:
        fast = open_load(base, searches, rate=args.rate, seconds=args.seconds,
                         procs=args.procs)
        out["added_p50_ms"], out["added_p99_ms"] = fast["added_p50_ms"], fast["added_p99_ms"]
        out["lag_p99_ms"] = fast["send_lag_p99_ms"]
        out["errors"] += fast["errors"]
    if "delay" in args.parts:
        delay = open_load(base, delay_searches, rate=args.delay_rate, seconds=args.seconds,
                          procs=args.procs)
        out["delay_added_p50_ms"] = delay["added_p50_ms"]
        out["delay_added_p99_ms"] = delay["added_p99_ms"]
        out["delay_rankers_p50_ms"] = delay["rankers_p50_ms"]
        out["delay_lag_p99_ms"] = delay["send_lag_p99_ms"]
        out["errors"] += delay["errors"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the other checkout (its .venv is used)")
    ap.add_argument("--after", default=str(ROOT),
                    help="the checkout measured against it (its .venv; default: this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--api-workers", type=int, default=2)
    ap.add_argument("--api-threads", type=int, default=8)
    ap.add_argument("--after-workers", type=int, help="the after API's (default: the same)")
    ap.add_argument("--after-threads", type=int, help="the after API's (default: the same)")
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--rate", type=float, default=50.0, help="open-loop searches/s, fast rankers")
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument("--delay-rate", type=float, default=100.0)
    ap.add_argument("--parts", default="closed,open,delay",
                    help="which loads: closed (bare and search), open (fast rankers), delay")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--generator", choices=("python", "wrk"), default="python",
                    help="the open loops' load generator: python (http.client) or the "
                    "compiled wrk (bench/wrk_search.lua; figures named wrk_*, with /bare at "
                    "the same rate); the closed loop is always the Python one")
    ap.add_argument("--wrk-connections", type=int, default=16)
    args = ap.parse_args()
    if args.generator == "wrk" and shutil.which("wrk") is None:
        print(WRK_MISSING)
        return 0

    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-ab-")
    codes = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    rows: dict[str, list[dict]] = {"before": [], "after": []}
    loads = []
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = bench_env(redis_url, admin, RANKDUEL_ACCESS_LOG=os.devnull)
        _, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers, workers=2)
        _, delay_url = start_delay_rankers(stack, env, args.delay_ms, args.rankers)
        world = demo_world(1, args.rankers)
        apis = {}
        for name, code in codes.items():
            workers, threads = args.api_workers, args.api_threads
            if name == "after":
                workers = args.after_workers or workers
                threads = args.after_threads or threads
            child, base = start_api(stack, name, code, env, workers, threads)
            client = Client(base, admin)
            paths = []
            for url in (rank_url, delay_url):
                exp = client.create_experiment(
                    name=f"ab-{name}", algorithm="mergedts", interleaving="team_draft", seed=1,
                    params={"alpha": 0.8**6, "c": 4e6, "batch_size": 4},
                    rankers=[{"name": ranker_name(n), "url": f"{url}/rankers/{n}",
                              "timeout_ms": 1000} for n in range(args.rankers)])
                paths.append(["/search?" + urlencode(
                    {"experiment": exp["id"], "q": world.query_text(q), "k": 10})
                    for q in range(world.n_queries)])
            pids = [child.proc.pid, *child_pids(child.proc.pid)]
            apis[name] = (base, pids, *paths)
            load(base, paths[0], clients=args.clients, procs=args.procs, seconds=1)  # warm
            open_load(base, paths[1], rate=args.delay_rate, seconds=1, procs=args.procs)
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            for name in order:
                row = measure(*apis[name], args)
                row["load_average_1m"] = round(os.getloadavg()[0], 1)
                rows[name].append(row)
                print(f"round {r + 1} {name:6s} {json.dumps(row)}", flush=True)
            loads.append(os.getloadavg()[0])
    keys = list(rows["after"][0])
    medians = {name: {k: round(statistics.median(row[k] for row in rs), 3) for k in keys}
               for name, rs in rows.items()}
    print(f"\nmedians over {args.rounds} rounds (load average {min(loads):.1f}-"
          f"{max(loads):.1f} during the run, {time.strftime('%H:%M')})")
    print(f"{'':28s} {'before':>10s} {'after':>10s}")
    for k in keys:
        print(f"{k:28s} {medians['before'][k]:>10} {medians['after'][k]:>10}")
    # each round measured both APIs back to back: its difference is paired (the same
    # machine load), and the spread of these differences is the noise of the comparison
    paired = {k: [round(a[k] - b[k], 3) for a, b in zip(rows["after"], rows["before"],
                                                         strict=True)]
              for k in keys if k != "load_average_1m"}
    print("\npaired differences (after - before), per round, and their median")
    for k, d in paired.items():
        print(f"{k:28s} {statistics.median(d):>10.3f}   {d}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rows,
                                               "medians": medians, "paired": paired},
                                              indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
