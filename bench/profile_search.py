"""Where a search's CPU goes: py-spy samples one API worker under ``/search`` load.

Starts the same stack as :mod:`bench.service_load` (Redis, the world rankers, the API
under ``rankduel serve`` with ``--api-workers`` workers), runs a closed-loop ``/search``
load and records one worker with ``py-spy record`` (active threads only: samples where a
thread runs Python code or holds the GIL, not where it waits). Prints the top functions
by *self* samples (where the CPU is spent) and by *inclusive* samples (which parts of
the request path cost most, callees included).

py-spy is a tool, not a dependency of rankduel: ``.venv/bin/pip install py-spy``.

    .venv/bin/python bench/profile_search.py [--seconds 10] [--code /work/main]
"""

from __future__ import annotations

import argparse
import collections
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.service_load import load, start_api  # noqa: E402
from demo.client import Client  # noqa: E402
from demo.stack import Stack, child_pids, free_port  # noqa: E402
from demo.world_rankers import demo_world, ranker_name  # noqa: E402


def _frame_name(frame: str) -> str:
    """``func (path/to/file.py:123)`` -> ``func (file.py)``."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = Path(path).parts
    short = "/".join(parts[-2:]) if len(parts) >= 2 else path
    return f"{name} ({short})"


def summarize(raw: str, top: int) -> dict[str, list[tuple[str, float]]]:
    """Top functions by self and inclusive share of the samples, from py-spy's ``raw``
    (collapsed stacks: ``frame;frame;... count``) output."""
    self_n: collections.Counter[str] = collections.Counter()
    incl_n: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [_frame_name(f) for f in stack.split(";") if f and "(" in f]
        if not frames:
            continue
        self_n[frames[-1]] += n
        for f in set(frames):
            incl_n[f] += n
    total = max(total, 1)
    return {
        "samples": [("total", total)],
        "self": [(f, round(100 * n / total, 1)) for f, n in self_n.most_common(top)],
        "inclusive": [(f, round(100 * n / total, 1)) for f, n in incl_n.most_common(top)],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--api-workers", type=int, default=2)
    ap.add_argument("--api-threads", type=int, default=None)
    ap.add_argument("--rankers", type=int, default=12)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--code", help="profile the API of this checkout (see service_load)")
    ap.add_argument("--out", help="write the raw collapsed stacks here")
    args = ap.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    admin = secrets.token_urlsafe(16)
    work = tempfile.mkdtemp(prefix="rankduel-profile-")
    with Stack(work) as stack:
        redis_url = stack.start_redis()
        env = dict(os.environ, REDIS_URL=redis_url, RANKDUEL_ADMIN_TOKEN=admin,
                   RANKDUEL_SECRET_KEY=secrets.token_urlsafe(16),
                   RANKDUEL_RANKER_ALLOW="127.0.0.1,localhost",
                   RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE="0", RANKDUEL_INACTIVITY_S="600",
                   RANKDUEL_ACCESS_LOG="off",
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("RANKDUEL_CONFIG", None)
        _, rank_url = stack.start_rankers(env, seed=1, n_rankers=args.rankers, workers=2)
        port = free_port()
        api = start_api(stack, dict(env, PROMETHEUS_MULTIPROC_DIR=os.path.join(work, "prom")),
                        port, args)
        base = f"http://127.0.0.1:{port}"
        client = Client(base, admin)
        world = demo_world(1, args.rankers)
        exp = client.create_experiment(
            name="profile", algorithm="mergedts", interleaving="team_draft", seed=1,
            params={"alpha": 0.8**6, "c": 4e6, "batch_size": 4},
            rankers=[{"name": ranker_name(n), "url": f"{rank_url}/rankers/{n}",
                      "timeout_ms": 1000} for n in range(args.rankers)])
        searches = ["/search?" + urlencode({"experiment": exp["id"], "q": world.query_text(q),
                                            "k": 10}) for q in range(world.n_queries)]
        load(base, searches, clients=args.clients, procs=args.procs, seconds=1)
        worker = child_pids(api.proc.pid)[0]
        raw_path = os.path.join(work, "profile.txt")
        rec = subprocess.Popen([spy, "record", "--pid", str(worker), "--format", "raw",
                                "--duration", str(int(args.seconds)), "--rate", "200",
                                "--output", raw_path, "--nonblocking", "--gil"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        result = load(base, searches, clients=args.clients, procs=args.procs,
                      seconds=args.seconds)
        rec.wait(timeout=60)
        print("search", result)
        raw = Path(raw_path).read_text() if os.path.exists(raw_path) else ""
        if not raw:
            print("py-spy recorded nothing:", rec.stderr.read().decode()[-500:])
            return 1
        if args.out:
            Path(args.out).write_text(raw)
        summary = summarize(raw, args.top)
        print(f"samples: {summary['samples'][0][1]}")
        for kind in ("self", "inclusive"):
            print(f"\ntop by {kind} share of one API worker's active samples")
            for name, pct in summary[kind]:
                print(f"  {pct:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
