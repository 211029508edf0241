"""CPU of one search in the API's code, deterministic: cProfile over ``--n`` sequential
``/search`` requests through the WSGI app (Flask's test client: no gunicorn, no load
generator, no other thread competing), against a real Redis and the world rankers
served by gunicorn in another process. Prints the CPU per search (``process_time``: every
thread of the API process) and the top functions by cumulative and by own time: where
the API's own CPU goes, without the noise of a loaded machine's scheduling.

    .venv/bin/python bench/search_cpu.py [--n 1000] [--top 30] [--session]
    # another checkout's code (its own interpreter), e.g. main as "before":
    RANKDUEL_BENCH_CODE=/work/main /work/main/.venv/bin/python bench/search_cpu.py
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import secrets
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(os.environ.get("RANKDUEL_BENCH_CODE") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--session", action="store_true",
                    help="a user session per request: the search, a click and the end "
                    "(the capacity model's unit)")
    args = ap.parse_args()
    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-cpu-")
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = dict(os.environ, REDIS_URL=redis_url, RANKDUEL_ADMIN_TOKEN=admin,
                   RANKDUEL_SECRET_KEY=secrets.token_urlsafe(16),
                   RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                   RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("RANKDUEL_CONFIG", None)
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        _, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers, workers=1)
        from service.app import create_app
        from service.config import load_config

        app = create_app(load_config(env=env))
        client = app.test_client()
        world = demo_world(1, args.rankers)
        auth = {"Authorization": f"Bearer {admin}"}
        exp = client.post("/experiments", headers=auth, json={
            "name": "cpu", "algorithm": "mergedts", "interleaving": "team_draft", "seed": 1,
            "params": {"alpha": 0.8**6, "c": 4e6, "batch_size": 4},
            "rankers": [{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                         "timeout_ms": 1000} for n in range(args.rankers)]}).get_json()
        paths = ["/search?" + urlencode({"experiment": exp["id"], "q": world.query_text(q),
                                         "k": 10}) for q in range(world.n_queries)]
        def one(i: int) -> None:
            page = client.get(paths[i % len(paths)])
            if not args.session:
                return
            body = page.get_json()
            doc = body["results"][0]["id"]
            clicked = client.post("/clicks", json={"impression_id": body["impression_id"],
                                                   "token": body["token"],
                                                   "clicks": [{"id": doc, "rank": 1}]})
            ended = client.post(f"/impressions/{body['impression_id']}/end",
                                json={"token": body["token"]})
            assert clicked.status_code == ended.status_code == 202, (clicked.json, ended.json)

        unit = "session" if args.session else "search"
        for i in range(200):  # warm: connections, caches
            assert client.get(paths[i % len(paths)]).status_code == 200
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for i in range(args.n):
            one(i)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        plural = "sessions" if args.session else "searches"
        print(f"{ROOT}: {args.n} {plural}: CPU {cpu / args.n * 1e6:.0f} µs per {unit} "
              f"(wall {wall / args.n * 1e3:.2f} ms)", flush=True)
        if not args.top:
            return 0
        prof = cProfile.Profile()
        prof.enable()
        for i in range(args.n):
            one(i)
        prof.disable()
        for order in ("cumulative", "tottime"):
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats(order).print_stats(args.top)
            text = out.getvalue()
            print(f"\n---- by {order}\n" + text[text.index("ncalls"):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
