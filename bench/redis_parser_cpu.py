"""Client CPU of a search's two Redis script calls, with and without hiredis.

redis-py packs commands and parses replies in Python unless ``hiredis`` is installed;
then it uses hiredis's C packer and parser (same bytes sent, same replies). This bench
runs the two scripts a search runs (``select.lua``: the selection counter; ``save.lua``:
the impression, with a realistic field list) against a real Redis, from two clients of
one process: redis-py's default (hiredis when installed) and one forced to the
pure-Python packer and parser (what redis-py does without hiredis). The two clients are
alternated in batches, so both see the same machine, and the thread CPU per pair of
calls is printed for each batch.

    .venv/bin/python bench/redis_parser_cpu.py [--batches 10] [--n 500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis
from redis._parsers import Encoder, _HiredisParser, _RESP2Parser
from redis.connection import PythonRespSerializer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402
from service.store.base import lua  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--n", type=int, default=500, help="searches per batch")
    args = ap.parse_args()
    with Stack(tempfile.mkdtemp(prefix="rankduel-parser-")) as stack:
        url = stack.start_redis()
        opts = {"socket_timeout": 1, "health_check_interval": 30}
        default = redis.Redis.from_url(url, **opts)
        python = redis.Redis.from_url(
            url, **opts, parser_class=_RESP2Parser,  # redis-py picks its RESP3 twin
            command_packer=PythonRespSerializer(6000, Encoder("utf-8", "strict", False).encode))
        kinds = {"default": default, "python": python}
        for name, c in kinds.items():
            conn = c.connection_pool.get_connection()
            print(f"{name}: {type(conn._parser).__name__}, "
                  f"{type(conn._command_packer).__name__}")
            c.connection_pool.release(conn)
        if not isinstance(default.connection_pool.get_connection()._parser, _HiredisParser):
            print("hiredis is not installed: both clients are pure Python")
        save = {n: c.register_script(lua("save")) for n, c in kinds.items()}
        select = {n: c.register_script(lua("select")) for n, c in kinds.items()}
        shown = [f"q3-d{i}" for i in range(10)]
        fields = json.dumps([str(x) for x in [
            "exp", "e1", "t", 123, "arms", "[1, 2]", "shown", json.dumps(shown),
            "record", json.dumps({"teams": [[0, 1]] * 10, "page": {"rng": "x" * 200,
                                                                  "q": "0123456789abcdef"}}),
            "duel", 1, "forfeits", "[]", "created", repr(time.time()), "expires", 1,
            "closed", 0, "urls", json.dumps([f"https://shop.example/p/{i}" for i in range(10)])]])
        default.hset("rd:{e1}:exp", mapping={"version": 1, "lifecycle": "running"})
        out: dict[str, list[float]] = {n: [] for n in kinds}
        i = 0
        for b in range(args.batches):
            for name in (("default", "python") if b % 2 else ("python", "default")):
                t0 = time.thread_time()
                for _ in range(args.n):
                    i += 1
                    select[name](keys=["rd:{e1}:exp", "rd:{e1}:t", "rd:{e1}:health"])
                    save[name](keys=[f"rd:{{e1}}:imp:{i}", "rd:{e1}:pending",
                                     "rd:{e1}:counters", "rd:{e1}:shown", "rd:{e1}:exp"],
                               args=[f"imp{i}", 600, repr(time.time()), "impressions:1,duel:1",
                                     "1,2", repr(0.5), fields])
                out[name].append((time.thread_time() - t0) / args.n * 1e6)
        for name, xs in out.items():
            print(f"{name:8s} client CPU µs per search (2 script calls): "
                  f"{[round(x) for x in xs]}, median {statistics.median(xs):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
