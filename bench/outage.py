"""A Redis outage under placement traffic (issue 49): does search stay up?

The platform as deployed on loopback (:class:`demo.faults.Platform`: Redis with its
append-only file, ``rankduel serve`` under gunicorn with 2 workers, ``rankduel worker``
with the sweep). A placement whose control is the toy ranker ``good``, an experiment on
half its traffic; ``--users`` threads search the placement as fresh users, clicking and
ending the experiment's pages. After ``--warm-s`` seconds Redis is SIGKILLed, left down
``--down-s`` seconds, and started again on its append-only file (``--fault stop``: SIGSTOP
then SIGCONT, a Redis that hangs, slower than any budget); the load goes on
``--after-s`` seconds, then stops. Printed:

* the placement searches while Redis was down: their statuses, how many answered the
  control's list with ``"degraded": "store"``, and their latency (p50, p99);
* the seconds from Redis answering again to the first experiment page, and to the first
  full second in which every page the experiment's share should get is an experiment page
  again (no degraded answer);
* W against a recomputation from what survived: the replay of the event log
  (``rankduel replay``'s function) and the decisive impressions in Redis.

    .venv/bin/python bench/outage.py [--users 4] [--down-s 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.client import Client  # noqa: E402
from demo.faults import Platform, check_invariant, drained  # noqa: E402
from demo.stack import wait_until  # noqa: E402


def run(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="rankduel-outage-") as work:
        p = Platform(Path(work), 1)
        try:
            p.users.paused.set()  # the platform's own experiment users stay idle
            url = p.ranker_server.url
            st, body = p.client.request("POST", "/placements", {
                "name": "web", "control": {"name": "prod", "url": f"{url}/r/good",
                                           "timeout_ms": 1000}}, admin=True)
            assert st == 201, body
            st, body = p.client.request("POST", "/experiments", {
                "name": "half", "algorithm": "uniform", "interleaving": "team_draft",
                "seed": 7, "probe": False, "placement": "web", "traffic": 0.5,
                "rankers": [{"name": n, "url": f"{url}/r/{n}", "timeout_ms": 1000}
                            for n in ("good", "bad")]}, admin=True)
            assert st == 201, body
            exp = body["id"]
            rows: list[tuple[float, int, float, bool, bool]] = []
            lock, stop = threading.Lock(), threading.Event()

            def user(seed: int) -> None:
                rng = np.random.default_rng(seed)
                c = Client(p.api_url, p.admin, timeout=10)
                n = 0
                while not stop.is_set():
                    n += 1
                    t0 = time.monotonic()
                    try:
                        st, page = c.request(
                            "GET", f"/search?placement=web&q=q{rng.integers(50)}&k=5"
                                   f"&user=u{seed}-{n}")
                    except Exception:
                        st, page = -1, {}
                    dt = time.monotonic() - t0
                    with lock:
                        rows.append((t0, st, dt, bool(page.get("degraded")),
                                     page.get("experiment") == exp))
                    if st == 200 and page.get("token"):
                        try:
                            pos = int(rng.integers(len(page["results"])))
                            c.request("POST", "/clicks", {
                                "impression_id": page["impression_id"],
                                "token": page["token"], "clicks": [
                                    {"id": page["results"][pos]["id"], "rank": pos + 1}]})
                            c.request("POST", f"/impressions/{page['impression_id']}/end",
                                      {"token": page["token"]})
                        except Exception:
                            pass  # a report lost to the outage: rankduel.js retries it

            threads = [threading.Thread(target=user, args=(i,), daemon=True)
                       for i in range(args.users)]
            for t in threads:
                t.start()
            time.sleep(args.warm_s)  # the load's own duration, not a wait for a condition
            child = p.stack.redis_child
            t_kill = time.monotonic()
            if args.fault == "stop":  # a Redis that hangs: slower than any budget
                child.kill(signal.SIGSTOP)
                time.sleep(args.down_s)  # the outage itself
                child.kill(signal.SIGCONT)
            else:
                child.kill(signal.SIGKILL)
                child.proc.wait(30)
                time.sleep(args.down_s)  # the outage itself
                child.start()
            p.stack.wait_redis()
            t_back = time.monotonic()
            time.sleep(args.after_s)
            stop.set()
            for t in threads:
                t.join(30)
            wait_until(lambda: drained(p.rd, exp), 300, "pending drained")
            wait_until(lambda: p.client.experiment(exp)["counters"].get("credited", 0)
                       == p.client.experiment(exp)["counters"]["impressions"], 120,
                       "every impression credited")
            inv = check_invariant(p.rd, p.client, exp)
            from service.events.replay import replay
            from service.store import Store

            replayed = replay(Store(p.rd).event_log.events(exp, "0", 10_000_000))["W"]
            live = p.client.experiment(exp)["W"]
        finally:
            p.close()
    down = [r for r in rows if t_kill + 0.05 <= r[0] < t_back]
    lat = np.array([r[2] for r in down]) * 1e3
    after = sorted(r for r in rows if r[0] >= t_back)
    first_exp = next((r[0] - t_back for r in after if r[4] and not r[3]), None)
    clean = None
    for s in np.arange(0.0, args.after_s, 0.25):
        window = [r for r in after if t_back + s <= r[0] < t_back + s + 1.0]
        if window and not any(r[3] for r in window) and all(r[1] == 200 for r in window):
            clean = float(s)
            break
    statuses: dict[str, int] = {}
    for r in down:
        statuses[str(r[1])] = statuses.get(str(r[1]), 0) + 1
    return {
        "fault": args.fault, "users": args.users, "down_s": round(t_back - t_kill, 2),
        "searches_down": len(down), "statuses_down": statuses,
        "degraded_down": sum(r[3] for r in down),
        "p50_ms_down": round(float(np.percentile(lat, 50)), 1) if len(lat) else None,
        "p99_ms_down": round(float(np.percentile(lat, 99)), 1) if len(lat) else None,
        "first_experiment_page_s": round(first_exp, 2) if first_exp is not None else None,
        "no_degraded_from_s": clean,
        "w_total": inv["w_total"], "decisive": inv["decisive"], "w_ok": inv["ok"],
        "w_equals_replay": replayed == live,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--warm-s", type=float, default=5.0)
    ap.add_argument("--down-s", type=float, default=5.0)
    ap.add_argument("--after-s", type=float, default=10.0)
    ap.add_argument("--fault", choices=["kill", "stop"], default="kill",
                    help="kill: SIGKILL, then started again on its AOF; stop: SIGSTOP, "
                         "then SIGCONT (a hung Redis)")
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args(argv)
    out = run(args)
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    ok = (out["statuses_down"].keys() <= {"200"} and out["w_ok"] and out["w_equals_replay"]
          and out["first_experiment_page_s"] is not None
          and out["first_experiment_page_s"] <= 6)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
