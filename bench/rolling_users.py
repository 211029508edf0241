"""Memory under rolling users with a short retention (issue 49): flat once it has passed?

The platform as deployed on loopback (:class:`demo.faults.Platform`) with
``RANKDUEL_RETENTION_S=--retention-s`` (20 s by default instead of 30 days). A placement
whose control is the toy ranker ``good`` and an experiment on half its traffic; in each
of ``--phases`` phases ``--users`` fresh users (never seen before) search the placement
once each, click and end the experiment's pages, then the load pauses ``--gap-s``
seconds. After each phase (once the pending set is drained and the sweep has trimmed):
the memory of the keys **without a TTL** (``MEMORY USAGE`` of every key whose ``TTL`` is
-1), and of every key, by family. Flat means the last two phases within 1.25× of each
other. Also printed: bytes per impression of the keys with a TTL (impressions, clicks),
per retained event of the event log, and per user of the split check's sets.

    .venv/bin/python bench/rolling_users.py [--phases 4] [--users 1500] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.client import Client  # noqa: E402
from demo.faults import Platform, drained  # noqa: E402
from demo.stack import wait_until  # noqa: E402


def family(key: str) -> str:
    """``rd:{e}:imp:<i>`` -> ``rd:{*}:imp:*``: the key's family."""
    key = re.sub(r"\{[^}]*\}", "{*}", key)
    key = re.sub(r":imp:[^:]+", ":imp:*", key)
    key = re.sub(r":(ax|au|oe|page|probe):[^:]+", r":\1:*", key)
    return re.sub(r":seen:\d+$", ":seen:<g>", key)


def memory(r) -> dict[str, dict[str, int]]:
    """Per family: keys and bytes, with and without a TTL."""
    out: dict[str, dict[str, int]] = {}
    keys = [k.decode() for k in r.scan_iter(match="rd:*", count=1000)]
    pipe = r.pipeline(transaction=False)
    for k in keys:
        pipe.ttl(k)
        pipe.memory_usage(k, samples=0)
    got = pipe.execute()
    for k, ttl, size in zip(keys, got[::2], got[1::2], strict=True):
        f = out.setdefault(family(k), {"keys": 0, "bytes": 0, "no_ttl_bytes": 0})
        f["keys"] += 1
        f["bytes"] += int(size or 0)
        if ttl == -1:
            f["no_ttl_bytes"] += int(size or 0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--phases", type=int, default=4)
    ap.add_argument("--users", type=int, default=1500)
    ap.add_argument("--gap-s", type=float, default=30.0)
    ap.add_argument("--retention-s", type=float, default=20.0)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--json", help="write the result here")
    args = ap.parse_args(argv)
    env = {"RANKDUEL_RETENTION_S": str(int(args.retention_s)), "RANKDUEL_INACTIVITY_S": "2"}
    phases = []
    with tempfile.TemporaryDirectory(prefix="rankduel-rolling-") as work:
        p = Platform(Path(work), 1, env=env)
        try:
            p.users.paused.set()
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
            clients = [Client(p.api_url, p.admin, timeout=10) for _ in range(args.threads)]

            def one(n: int) -> None:
                c = clients[n % len(clients)]
                st, page = c.request("GET", f"/search?placement=web&q=q{n % 50}&k=5"
                                            f"&user=fresh-{n}")
                if st == 200 and page.get("token"):
                    c.request("POST", "/clicks", {
                        "impression_id": page["impression_id"], "token": page["token"],
                        "clicks": [{"id": page["results"][0]["id"], "rank": 1}]})
                    c.request("POST", f"/impressions/{page['impression_id']}/end",
                              {"token": page["token"]})

            base = 0
            for k in range(args.phases):
                t0 = time.monotonic()
                with ThreadPoolExecutor(args.threads) as pool:
                    list(pool.map(one, range(base, base + args.users)))
                base += args.users
                load_s = time.monotonic() - t0
                wait_until(lambda: drained(p.rd, exp), 300, "pending drained")
                loaded = memory(p.rd)  # the phase's events still within the retention
                events_loaded = p.rd.xlen(f"rd:{{{exp}}}:events")
                time.sleep(args.gap_s)  # the gap between phases (the retention passes)
                mem = memory(p.rd)
                no_ttl = sum(f["no_ttl_bytes"] for f in mem.values())
                events = p.rd.xlen(f"rd:{{{exp}}}:events")
                phases.append({"phase": k + 1, "load_s": round(load_s, 1),
                               "no_ttl_bytes": no_ttl,
                               "no_ttl_bytes_after_load": sum(
                                   f["no_ttl_bytes"] for f in loaded.values()),
                               "events_after_load": events_loaded,
                               "event_log_bytes_after_load": loaded.get(
                                   "rd:{*}:events", {}).get("bytes", 0),
                               "split_seen_bytes": sum(
                                   f["bytes"] for n, f in mem.items() if ":seen" in n),
                               "all_bytes": sum(f["bytes"] for f in mem.values()),
                               "events_retained": events, "families": mem})
                after_load = phases[-1]["no_ttl_bytes_after_load"] / 1e6
                print(f"phase {k + 1}: {args.users} users in {load_s:.1f}s; keys without "
                      f"TTL {no_ttl / 1e6:.3f} MB ({after_load:.3f} MB right after the "
                      f"load, {events_loaded} events), all keys "
                      f"{phases[-1]['all_bytes'] / 1e6:.3f} MB; events kept {events}",
                      flush=True)
            state = p.client.experiment(exp)
        finally:
            p.close()
    last = phases[-1]["families"]
    imps = state["counters"]["impressions"]

    def per(fam: str, n: int) -> float | None:
        return round(last[fam]["bytes"] / n, 1) if fam in last and n else None

    out = {
        "retention_s": args.retention_s, "users_per_phase": args.users,
        "no_ttl_mb": [round(x["no_ttl_bytes"] / 1e6, 3) for x in phases],
        "ratio_last_two": round(phases[-1]["no_ttl_bytes"] / phases[-2]["no_ttl_bytes"], 3)
        if len(phases) > 1 else None,
        "bytes_per_impression_imp_keys": per("rd:{*}:imp:*", imps),
        "bytes_per_impression_click_sets": per("rd:{*}:imp:*:clicks", imps),
        "bytes_per_retained_event": round(
            phases[-1]["event_log_bytes_after_load"] / phases[-1]["events_after_load"], 1)
        if phases[-1]["events_after_load"] else None,
        "split_seen_bytes_per_user": round(phases[-1]["split_seen_bytes"] / (
            args.users * min(args.phases, 2)), 1),
        "phases": [{k: v for k, v in x.items() if k != "families"} for x in phases],
        "families_last": last,
    }
    print(json.dumps({k: v for k, v in out.items() if k != "families_last"}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if out["ratio_last_two"] is not None and out["ratio_last_two"] <= 1.25 else 1


if __name__ == "__main__":
    sys.exit(main())
