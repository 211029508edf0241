"""What a placement adds to a search: experiment and control searches of a placement,
measured in the same run as ``?experiment=`` searches, alternated.

One stack (Redis, rankers answering after ``--delay-ms``, this checkout's API under
gunicorn), three kinds of search, each an open loop at ``--rate`` searches/s for
``--seconds``, the order rotated every round (``--rounds``) so all three see the same
machine:

* ``experiment``: ``/search?experiment=ID&user=…`` (today's path; the same users, whose
  ids seed the interleaving as on a placement);
* ``placement_exp``: ``/search?placement=P1&user=…``, P1 holding one experiment at a
  share of 1 (every search in the experiment: assignment, then today's path);
* ``placement_ctl``: ``/search?placement=P2&user=…``, P2 with no experiment (every search
  is a control search: the control ranker's list, no impression).

What rankduel adds is the latency minus ``Server-Timing: rankers`` (the slowest ranker
call); ``api_cpu_us_per_search`` is the API processes' CPU per search (``/proc``), which
a busy machine disturbs less than latency. The medians over the rounds are printed
last, with the load average.

    .venv/bin/python bench/placement_load.py [--rounds 3] [--seconds 5] [--rate 100]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.proxy_ab import start_api  # noqa: E402
from bench.service_load import (  # noqa: E402
    bench_env,
    open_load,
    proc_cpu_seconds,
    start_delay_rankers,
)
from demo.client import Client  # noqa: E402
from demo.stack import Stack, child_pids  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402

KINDS = ("experiment", "placement_exp", "placement_ctl")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=100.0, help="searches/s of each loop")
    ap.add_argument("--delay-ms", type=float, default=20.0, help="every ranker's answer time")
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--api-workers", type=int, default=2)
    ap.add_argument("--api-threads", type=int, default=8)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()

    admin = secrets.token_urlsafe(16)
    rows: dict[str, list[dict]] = {k: [] for k in KINDS}
    loads = []
    with Stack(tempfile.mkdtemp(prefix="rankduel-placement-")) as stack:
        redis_url = stack.start_redis()
        env = bench_env(redis_url, admin, RANKDUEL_ACCESS_LOG=os.devnull)
        _, url = start_delay_rankers(stack, env, args.delay_ms, args.rankers)
        world = demo_world(1, args.rankers)
        api, base = start_api(stack, "api", ROOT, env, args.api_workers, args.api_threads)
        pids = [api.proc.pid, *child_pids(api.proc.pid)]
        client = Client(base, admin)
        definition = [{"name": ranker_name(n), "url": f"{url}/rankers/{n}",
                       "timeout_ms": 1000} for n in range(args.rankers)]
        control = {"name": "control", "url": f"{url}/rankers/0", "timeout_ms": 1000}
        for name in ("p1", "p2"):
            status, body = client.request("POST", "/placements",
                                          {"name": name, "control": control}, admin=True)
            assert status == 201, body
        exps = [client.create_experiment(
            name=f"bench-{n}", algorithm="mergedts", interleaving="team_draft", seed=1,
            params={"alpha": 0.8**6, "c": 4e6, "batch_size": 4}, rankers=definition,
            **extra)["id"] for n, extra in enumerate(({}, {"placement": "p1", "traffic": 1.0}))]
        queries = [world.query_text(q) for q in range(world.n_queries)]
        paths = {
            "experiment": [f"/search?{urlencode({'experiment': exps[0], 'q': q, 'k': 10, 'user': f'u{i}'})}"  # noqa: E501
                           for i, q in enumerate(queries)],
            "placement_exp": [f"/search?{urlencode({'placement': 'p1', 'q': q, 'k': 10, 'user': f'u{i}'})}"  # noqa: E501
                              for i, q in enumerate(queries)],
            "placement_ctl": [f"/search?{urlencode({'placement': 'p2', 'q': q, 'k': 10, 'user': f'u{i}'})}"  # noqa: E501
                              for i, q in enumerate(queries)],
        }
        for kind in KINDS:  # warm every path
            open_load(base, paths[kind], rate=args.rate, seconds=1, procs=args.procs)
        for r in range(args.rounds):
            order = KINDS[r % 3:] + KINDS[:r % 3]
            for kind in order:
                cpu0 = proc_cpu_seconds(pids)
                got = open_load(base, paths[kind], rate=args.rate, seconds=args.seconds,
                                procs=args.procs)
                cpu = proc_cpu_seconds(pids) - cpu0
                row = {k: got.get(k) for k in ("added_p50_ms", "added_p99_ms",
                                               "rankers_p50_ms", "p50_ms", "errors")}
                row["api_cpu_us_per_search"] = round(cpu / max(got["requests"], 1) * 1e6)
                row["load_average_1m"] = round(os.getloadavg()[0], 1)
                rows[kind].append(row)
                print(f"round {r + 1} {kind:14s} {json.dumps(row)}", flush=True)
            loads.append(os.getloadavg()[0])
    keys = list(rows["experiment"][0])
    medians = {kind: {k: round(statistics.median(row[k] for row in rs), 3) for k in keys}
               for kind, rs in rows.items()}
    print(f"\nmedians over {args.rounds} rounds at {args.rate:g} searches/s, rankers "
          f"{args.delay_ms:g} ms (load average {min(loads):.1f}-{max(loads):.1f}, "
          f"{time.strftime('%H:%M')})")
    print(f"{'':18s}" + "".join(f"{k:>16s}" for k in KINDS))
    for k in keys:
        print(f"{k:18s}" + "".join(f"{medians[kind][k]:>16}" for kind in KINDS))
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "rounds": rows,
                                               "medians": medians}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
