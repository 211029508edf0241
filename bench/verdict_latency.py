"""Live, the verdict comes with the click that decides it: from the end of the impression
whose credit certifies a two-ranker experiment to the certified verdict in
``GET /experiments/ID/report`` and to the ``verdict_certified`` webhook's arrival; and
the comparisons a live experiment needs to certify against the offline simulator's for
the same preference.

The platform on this machine (bench/live_vs_offline.py's ``Live``: a real Redis,
``rankduel serve`` with 2 processes, one Celery worker, the matrix world's rankers), a
webhook receiver on loopback subscribed to ``verdict_certified``. Per run, a
``recommended`` experiment of two matrix rankers, the second preferred with probability
``--preference`` (a user shown both clicks its document that often); ``--concurrency``
simulated users search, click and end as fast as they can, each end's time kept; a
thread polls the report every 20 ms. When it is certified, the report's
``certification`` (recorded by the transaction that certified it: the comparisons, and
the impression whose credit decided it) names the deciding impression; the latencies
are measured from the moment its ``/end`` returned to the user (its credit cannot start
before). p50 and p99 over ``--runs`` runs (with few runs the p99 is their maximum).

Offline: the same policy and parameters on the same 2×2 matrix by its own ``update()``,
``--offline-runs`` seeds: the comparisons to its certificate; the live median over the
offline median is the ratio to keep within 1.5.

    .venv/bin/python bench/verdict_latency.py [--runs 10] [--preference 0.8] \
        [--params '{"check_every": 10}'] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from live_vs_offline import Live  # noqa: E402


class Receiver:
    """A webhook receiver: the arrival time of each ``verdict_certified`` by experiment."""

    def __init__(self) -> None:
        from demo.wsgi_server import ThreadedServer

        self.arrived: dict[str, float] = {}
        self.lock = threading.Lock()
        self.server = ThreadedServer(self.app)
        self.url = f"{self.server.url}/hook"

    def app(self, environ, start_response):
        raw = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        now = time.time()
        try:
            body = json.loads(raw)
            if body.get("type") == "verdict_certified":
                with self.lock:
                    self.arrived.setdefault(body["experiment"], now)
        except (ValueError, KeyError, TypeError):
            pass
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]


def offline(P: np.ndarray, params: dict[str, Any], runs: int, most: int = 200_000
            ) -> list[int]:
    """Comparisons to the certificate of ``recommended`` on ``P``, per seed (the policy's
    own ``select()`` and ``update()``, outcomes drawn from ``P``)."""
    from bandits import make_bandit

    out = []
    for seed in range(runs):
        rng = np.random.default_rng([seed, 47])
        b = make_bandit("recommended", 2, seed=seed, **params)
        for _ in range(most):
            i, j = b.select()
            if i != j:
                b.update(i, j, float(rng.random() < P[i, j]))
            else:
                b.update(i, j, 0.5)
            if b.verdicts() and b.verdicts()["certified"] is not None:
                break
        out.append(int(b.n_updates))
    return out


def one_run(live: Live, receiver: Receiver, P: np.ndarray, params: dict[str, Any],
            seed: int, concurrency: int, most: int) -> dict[str, Any]:
    """One live experiment until certified: the latencies and its comparisons."""
    from demo.client import Client
    from demo.matrix_world import rankers

    client = live.client
    exp = client.create_experiment(
        name=f"latency-{seed}", algorithm="recommended", interleaving="team_draft",
        seed=seed, params=params, rankers=rankers(live.rankers.url, 2))
    exp_id = exp["id"]
    ends: dict[str, float] = {}
    seen: dict[str, float] = {}
    stop = threading.Event()

    def poll() -> None:
        c = Client(client.base_url, client.admin_token)
        while not stop.is_set():
            status, rep = c.request("GET", f"/experiments/{exp_id}/report", admin=True)
            if status == 200 and rep.get("certified"):
                seen["t"] = time.time()
                seen["report"] = rep
                stop.set()
                break
            time.sleep(0.02)
        c.close()

    def user(u: int) -> None:
        c = Client(client.base_url)
        s = u
        while not stop.is_set() and s < most:
            rng = np.random.default_rng([seed, s])
            status, page = c.request("GET", f"/search?experiment={exp_id}&q=q{s}&k=2")
            s += concurrency
            if status != 200:
                continue
            arms = [int(r["id"][3:]) for r in page["results"]]
            if len(arms) == 2:
                i, j = arms
                pick = i if rng.random() < P[i, j] else j
                c.click(page, [(f"doc{pick}", arms.index(pick) + 1)])
            c.end(page)
            ends[page["impression_id"]] = time.time()
        c.close()

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    users = [threading.Thread(target=user, args=(u,), daemon=True) for u in range(concurrency)]
    for t in users:
        t.start()
    for t in users:
        t.join()
    poller.join(timeout=60)
    stop.set()
    rep = seen.get("report")
    if rep is None:
        return {"certified": False}
    cert = rep.get("certification") or {}
    deadline = time.time() + 30
    while exp_id not in receiver.arrived and time.time() < deadline:
        time.sleep(0.01)
    ended = ends.get(cert.get("impression"))
    hook = receiver.arrived.get(exp_id)
    return {"certified": True, "comparisons": cert.get("comparisons"),
            "searches": cert.get("searches"),
            "report_s": None if ended is None else seen["t"] - ended,
            "webhook_s": None if ended is None or hook is None else hook - ended}


def pct(xs: list[float], q: float) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    return round(float(np.percentile(xs, q)), 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--offline-runs", type=int, default=40)
    ap.add_argument("--preference", type=float, default=0.8)
    ap.add_argument("--params", default="{}", help="the policy's parameters (JSON)")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--most", type=int, default=20_000, help="searches per run at most")
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    params = json.loads(args.params)
    p = args.preference
    P = np.array([[0.5, 1.0 - p], [p, 0.5]])
    live = Live(tempfile.mkdtemp(prefix="rankduel-latency-"), args.concurrency)
    receiver = Receiver()
    try:
        status, hook = live.client.request("POST", "/webhooks", {
            "url": receiver.url, "events": ["verdict_certified"],
            "secret": secrets.token_hex(16)}, admin=True)
        assert status == 201, hook
        runs = [one_run(live, receiver, P, params, seed, args.concurrency, args.most)
                for seed in range(args.runs)]
    finally:
        receiver.server.close()
        live.close()
    done = [r for r in runs if r["certified"]]
    off = offline(P, params, args.offline_runs)
    live_n = [r["comparisons"] for r in done if r["comparisons"] is not None]
    out = {
        "args": vars(args), "runs": runs,
        "report_s": {"p50": pct([r["report_s"] for r in done], 50),
                     "p99": pct([r["report_s"] for r in done], 99)},
        "webhook_s": {"p50": pct([r["webhook_s"] for r in done], 50),
                      "p99": pct([r["webhook_s"] for r in done], 99)},
        "live_comparisons_median": statistics.median(live_n) if live_n else None,
        "offline_comparisons_median": statistics.median(off),
        "offline_comparisons": off}
    if live_n:
        out["live_over_offline"] = round(out["live_comparisons_median"]
                                         / out["offline_comparisons_median"], 2)
    print(f"recommended, two rankers at preference {p}, params {params}: "
          f"{len(done)}/{args.runs} live runs certified")
    print(f"  deciding impression's end -> certified report: p50 {out['report_s']['p50']} s, "
          f"p99 {out['report_s']['p99']} s; -> webhook: p50 {out['webhook_s']['p50']} s, "
          f"p99 {out['webhook_s']['p99']} s")
    print(f"  comparisons to certify: live median {out['live_comparisons_median']}, "
          f"offline median {out['offline_comparisons_median']} ({args.offline_runs} seeds): "
          f"{out.get('live_over_offline')}x")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
