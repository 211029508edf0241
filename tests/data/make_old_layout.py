"""How tests/data/old_layout.json was made: a real Redis populated with the previous key
layout (rd:exp:{e}..., rd:imp:{i}...) by the previous code itself, then every key dumped
to JSON (tests/test_migrate_keys.py loads it and migrates it).

Not run by the tests (it needs the old code). To regenerate, from the repository root:

    mkdir -p /tmp/old && git archive bcd597d service bandits interleaving demo workers \
        | tar -x -C /tmp/old && .venv/bin/python tests/data/make_old_layout.py
"""
from __future__ import annotations

import base64
import json
import os
import sys
from pathlib import Path

OLD = "/tmp/old"
HERE = Path(__file__).resolve().parent


def main() -> None:
    sys.path.insert(0, OLD)
    sys.path.insert(1, str(HERE.parent))
    import numpy as np
    import redis
    from helpers.toy_rankers import make_toy_rankers

    from demo.client import Client
    from demo.stack import Stack
    from demo.wsgi_server import ThreadedServer

    SECRET, ADMIN = "migration-secret-0123456789", "migration-admin-0123456789"
    with Stack("/tmp/old/stack") as st:
        url = st.start_redis()
        os.environ.update(REDIS_URL=url, RANKDUEL_ADMIN_TOKEN=ADMIN, RANKDUEL_SECRET_KEY=SECRET)
        from service.app import create_app
        from service.config import load_config


        cfg = load_config(overrides={"inactivity_s": 600, "impression_ttl_s": 86400 * 30})
        api = ThreadedServer(create_app(cfg))
        rk = ThreadedServer(make_toy_rankers())
        c = Client(api.url, ADMIN)
        def rankers(*names):
            return [{"name": n, "url": f"{rk.url}/r/{n}", "timeout_ms": 1000} for n in names]
        e1 = c.create_experiment(
            name="old mergedts", rankers=rankers("good", "bad", "mid", "alt"),
            algorithm="mergedts", params={"alpha": 0.5, "c": 10, "batch_size": 4},
            interleaving="team_draft", seed=3)["id"]
        e2 = c.create_experiment(name="old uniform", rankers=rankers("good", "bad", "mid"),
                                 algorithm="uniform", interleaving="probabilistic", seed=4)["id"]
        from service.credit.protocol import credit_batch
        from service.store import Store
        store = Store(redis.Redis.from_url(url))
        pages = {e1: [], e2: []}
        rng = np.random.default_rng(1)
        for e, n in ((e1, 160), (e2, 40)):
            for k in range(n):
                page = c.search(e, f"q{k}", k=6)
                res = page["results"]
                p = min(range(len(res)), key=lambda i: res[i]["id"])  # users like low ids
                if rng.random() < 0.9:
                    c.click(page, [(res[p]["id"], p + 1)])
                pages[e].append(page)
        # credit all but the last 10 of each (ended); of those 10, 5 ended, 5 left open
        for e in (e1, e2):
            done = pages[e][:-10]
            for page in done:
                c.end(page)
            for k in range(0, len(done), 25):
                credit_batch(store, e, [p["impression_id"] for p in done[k:k + 25]])
            for page in pages[e][-10:-5]:
                c.end(page)
        c.retire_ranker(e2, "mid")
        r = redis.Redis.from_url(url)
        r.delete("rd:workers:ready")
        dump = {"made_by": "the code of commit bcd597d (tests/data/make_old_layout.py notes)",
                "secret_key": SECRET, "admin_token": ADMIN,
                "experiments": [e1, e2],
                "open_impressions": {e: [p["impression_id"] for p in pages[e][-5:]]
                                     for e in (e1, e2)},
                "open_tokens": {p["impression_id"]: p["token"]
                                for e in (e1, e2) for p in pages[e][-5:]},
                "open_results": {p["impression_id"]: [x["id"] for x in p["results"]]
                                 for e in (e1, e2) for p in pages[e][-5:]},
                "keys": {}}
        for key in sorted(r.scan_iter("rd:*")):
            kind = r.type(key).decode()
            ttl = r.pttl(key)
            if kind == "string":
                val = base64.b64encode(r.get(key)).decode()
            elif kind == "hash":
                val = {k.decode(): base64.b64encode(v).decode() for k, v in r.hgetall(key).items()}
            elif kind == "list":
                val = [v.decode() for v in r.lrange(key, 0, -1)]
            elif kind == "set":
                val = sorted(v.decode() for v in r.smembers(key))
            elif kind == "zset":
                val = [[m.decode(), s] for m, s in r.zrange(key, 0, -1, withscores=True)]
            dump["keys"][key.decode()] = {"type": kind, "ttl_ms": ttl, "value": val}
        api.close()
        rk.close()
        with open(HERE / "old_layout.json", "w") as f:
            json.dump(dump, f, indent=0, sort_keys=True)
        print(len(dump["keys"]), "keys")


if __name__ == "__main__":
    main()
