"""The soak: the deployed platform (``demo.faults.Platform``: Redis with its
append-only file, ``rankduel serve`` under gunicorn, ``rankduel worker`` with the sweep,
three rankers) under a steady load for a bounded time, sampling what could grow without
bound:

* the resident memory (RSS) of every process: gunicorn master and workers, the worker's
  supervisor, Celery main process and pool, Redis;
* Redis ``used_memory``, its key count and the keys **without a TTL** (every impression
  and its clicks expire; what has no TTL must be bounded by the number of experiments);
* the audit list's length (capped at 10,000), the files in the prometheus-client
  multiprocess folders (one set per process that ever lived);
* the experiment's pending set.

The impressions' TTL is 300 s here (``RANKDUEL_IMPRESSION_TTL_S``; 24 h by default; tokens
240 s) so the
key count reaches its steady state (searches/s × TTL) within the run. At the end the
users stop and the bench waits until nothing is pending and checks the invariant (W's
total = what the stored impressions give). It prints each series' growth per hour from a
least-squares line over the second half of the run, writes the samples as CSV and plots
them.

    .venv/bin/python bench/soak.py [--minutes 30] [--users 4] [--every 10] \\
        [--out bench/results/soak]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from demo.faults import Platform, check_invariant, drained  # noqa: E402
from demo.stack import child_pids, wait_until  # noqa: E402

TTL_S = 300


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def processes(p: Platform) -> dict[str, list[int]]:
    """Process groups of the platform, by role (re-read each sample: pools get replaced)."""
    api = p.api.pid
    sup = p.worker.pid
    celery = child_pids(sup)
    return {
        "api_master": [api],
        "api_workers": child_pids(api),
        "worker_supervisor": [sup],
        "celery_main": celery,
        "celery_pool": [c for m in celery for c in child_pids(m)],
        "redis": [p.stack.redis_child.pid],
        "bench (users, rankers)": [os.getpid()],
    }


def _no_ttl(rd, keys: list[bytes]) -> int:
    pipe = rd.pipeline(transaction=False)
    for k in keys:
        pipe.ttl(k)
    return sum(1 for t in pipe.execute() if t == -1)


def sample(p: Platform, t0: float) -> dict[str, float]:
    rd = p.rd
    row: dict[str, float] = {"t_s": round(time.monotonic() - t0, 1)}
    for role, pids in processes(p).items():
        row[f"rss_mib:{role}"] = round(sum(rss_mib(x) for x in pids), 1)
    info = rd.info("memory")
    row["redis_used_mib"] = round(info["used_memory"] / 2**20, 2)
    row["keys"] = rd.dbsize()
    no_ttl = 0
    batch: list[bytes] = []
    for key in rd.scan_iter(count=2000):  # TTLs pipelined: a sample must not stall Redis
        batch.append(key)
        if len(batch) == 2000:
            no_ttl += _no_ttl(rd, batch)
            batch = []
    no_ttl += _no_ttl(rd, batch)
    row["keys_without_ttl"] = no_ttl
    row["audit_len"] = rd.llen(f"rd:{{{p.exp_id}}}:audit")
    row["pending"] = rd.zcard(f"rd:{{{p.exp_id}}}:pending")
    row["metric_files"] = sum(len(list(Path(d).glob("*.db"))) for d in p.metric_dirs)
    row["searches"] = p.users.searches
    return row


def growth_per_hour(rows: list[dict], key: str) -> float:
    half = rows[len(rows) // 2:]
    if len(half) < 3:
        return float("nan")
    t = np.array([r["t_s"] for r in half]) / 3600
    y = np.array([r[key] for r in half], dtype=float)
    return float(np.polyfit(t, y, 1)[0])


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t_s"] / 60 for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for key in rows[0]:
        if key.startswith("rss_mib:"):
            axes[0].plot(t, [r[key] for r in rows], label=key[8:])
    axes[0].set(title="RSS (MiB)", xlabel="minutes")
    axes[0].legend(fontsize=7)
    axes[1].plot(t, [r["redis_used_mib"] for r in rows], label="Redis used_memory (MiB)")
    axes[1].set(title="Redis memory (MiB)", xlabel="minutes")
    axes[2].plot(t, [r["keys"] for r in rows], label="keys")
    axes[2].plot(t, [r["keys_without_ttl"] for r in rows], label="keys without TTL")
    axes[2].plot(t, [r["metric_files"] for r in rows], label="metric files")
    axes[2].set(title="keys and files", xlabel="minutes", yscale="symlog")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--every", type=float, default=10.0, help="seconds between samples")
    ap.add_argument("--out", default=str(ROOT / "bench/results/soak"),
                    help="prefix of the .csv, .png and .json written")
    args = ap.parse_args(argv)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rankduel-soak-") as work:
        p = Platform(Path(work), args.users, env={"RANKDUEL_IMPRESSION_TTL_S": str(TTL_S),
                                                  "RANKDUEL_TOKEN_TTL_S": str(TTL_S - 60)})
        try:
            t0 = time.monotonic()
            end = t0 + args.minutes * 60
            while time.monotonic() < end:
                rows.append(sample(p, t0))
                r = rows[-1]
                print(f"{r['t_s'] / 60:6.1f} min  searches {r['searches']:7d}  "
                      f"keys {r['keys']:6d} (no TTL {r['keys_without_ttl']})  "
                      f"redis {r['redis_used_mib']:6.1f} MiB  "
                      f"api {r['rss_mib:api_workers']:6.1f}  "
                      f"pool {r['rss_mib:celery_pool']:6.1f} MiB", flush=True)
                time.sleep(max(0.0, min(args.every, end - time.monotonic())))
            p.users.paused.set()
            t_pause = time.monotonic()
            wait_until(lambda: drained(p.rd, p.exp_id), 600, "pending drained")
            drain = time.monotonic() - t_pause
            inv = check_invariant(p.rd, p.client, p.exp_id)
            # impressions older than the TTL are gone from Redis, so W can only be checked
            # against the decisive count the credit kept (recomputing it needs them all)
            inv["ok"] = inv["w_total"] == inv["decisive_counted"]
            inv.pop("lost")
            inv.pop("double")
            inv["recomputed_from_live_impressions"] = inv.pop("decisive")
            statuses = dict(p.users.tally.statuses)
        finally:
            p.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    plot(rows, out.with_suffix(".png"))
    keys = [k for k in rows[0] if k not in ("t_s", "searches", "pending")]
    growth = {k: round(growth_per_hour(rows, k), 2) for k in keys}
    first, last = rows[0], rows[-1]
    summary = {"minutes": args.minutes, "users": args.users, "samples": len(rows),
               "searches": last["searches"],
               "searches_per_s": round(last["searches"] / max(last["t_s"], 1), 1),
               "statuses": statuses, "drain_s": round(drain, 2), "invariant": inv,
               "first": first, "last": last, "growth_per_hour_second_half": growth}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: summary[k] for k in ("searches", "searches_per_s", "statuses",
                                              "drain_s", "invariant")}, indent=1))
    print("growth per hour over the second half:")
    for k, v in growth.items():
        print(f"  {k:34s} {first[k]:>10} -> {last[k]:>10}   {v:+.2f}/h")
    return 0 if inv["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
