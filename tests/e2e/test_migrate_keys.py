"""``rankduel migrate-keys`` on a real Redis populated with the previous key layout by the
previous code (tests/data/old_layout.json, made by tests/data/make_old_layout.py): in
place, and onto a real Redis Cluster. After it the service serves the migrated
experiments as they were (W, eliminations, counters, t), accepts clicks and ends for
impression ids issued before the migration, and credits what was pending, once.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: every test here starts a server, a command or an interpreter itself (tests/conftest.py)
pytestmark = pytest.mark.starts_process

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = json.loads((ROOT / "tests" / "data" / "old_layout.json").read_text())
OPEN = {i for ids in FIXTURE["open_impressions"].values() for i in ids}


#: where the fixture's toy rankers answered when it was made
FIXTURE_RANKERS = b"http://127.0.0.1:45633/"


def load_fixture(client, rankers_url: str | None = None) -> None:
    """Write every key of the fixture (with its remaining TTL) into ``client``. With
    ``rankers_url``, the stored ranker URLs point there instead of at the fixture's port
    (which another process may hold now)."""
    def field(key: str, name: str, raw: str) -> bytes:
        value = base64.b64decode(raw)
        if rankers_url and name == "rankers" and key.startswith("rd:exp:"):
            value = value.replace(FIXTURE_RANKERS, rankers_url.rstrip("/").encode() + b"/")
        return value

    for key, spec in FIXTURE["keys"].items():
        kind, value = spec["type"], spec["value"]
        if kind == "string":
            client.set(key, base64.b64decode(value))
        elif kind == "hash":
            client.hset(key, mapping={k: field(key, k, v) for k, v in value.items()})
        elif kind == "list":
            client.rpush(key, *value)
        elif kind == "set":
            client.sadd(key, *value)
        elif kind == "zset":
            scores = dict(value)
            if key.endswith(":pending"):
                # the fixture was made once, long ago: its open impressions (never ended)
                # are due 10 minutes after loading, as they were 10 minutes after making
                soon = time.time() + 600
                scores = {m: soon if m in OPEN else s for m, s in scores.items()}
            client.zadd(key, scores)
        if spec["ttl_ms"] > 0:
            client.pexpire(key, spec["ttl_ms"])


def old_state(exp_id: str) -> dict:
    """W, the stored policy state and the counters the previous layout held."""
    h = {k: base64.b64decode(v) for k, v in FIXTURE["keys"][f"rd:exp:{exp_id}"]["value"].items()}
    state = json.loads(h["state"])
    K = state["K"]
    counters = {k: int(base64.b64decode(v))
                for k, v in FIXTURE["keys"][f"rd:exp:{exp_id}:counters"]["value"].items()}
    t = int(base64.b64decode(FIXTURE["keys"][f"rd:exp:{exp_id}:t"]["value"]))
    return {"W": np.frombuffer(h["W"], dtype="<f8").reshape(K, K), "state": state,
            "counters": counters, "t": t}


def migrate_cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([sys.executable, "-m", "cli.main", "migrate-keys", "--quiet", *args],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.fixture
def rankers():
    """The toy rankers the fixture was made with, on a port the kernel picks (the fixture's
    own port may be taken by another process on a busy machine)."""
    from helpers.toy_rankers import make_toy_rankers

    from demo.wsgi_server import ThreadedServer

    server = ThreadedServer(make_toy_rankers())
    yield server
    server.close()


@pytest.mark.parametrize("target", ["in place", "onto a cluster"])
def test_migrate_keys_then_serve_and_credit(tmp_path, monkeypatch, target, rankers):
    from demo.client import Client
    from demo.stack import Stack
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import Config
    from service.credit.protocol import credit_batch
    from service.store import Store
    from service.store.client import connect
    from service.tokens import issue_token

    exps = FIXTURE["experiments"]
    with Stack(tmp_path) as stack:
        old_url = stack.start_redis()
        old = connect(old_url)
        load_fixture(old, rankers.url)
        env = dict(os.environ, PYTHONPATH=str(ROOT), REDIS_URL=old_url)
        env.pop("RANKDUEL_CONFIG", None)
        if target == "in place":
            url, cluster, args = old_url, False, ()
        else:
            url, cluster, args = stack.start_redis_cluster(3), True, ("--from", old_url)
            env.update(REDIS_URL=url, RANKDUEL_REDIS_CLUSTER="1", RANKDUEL_BROKER_URL=old_url)
        n_imps = sum(1 for k in FIXTURE["keys"] if k.startswith("rd:imp:")
                     and not k.endswith(":clicks"))
        assert migrate_cli(env, "--dry-run", *args).startswith(
            f"would migrate 2 experiments and {n_imps} impressions")
        out = migrate_cli(env, *args)
        assert out.startswith(f"migrated 2 experiments and {n_imps} impressions"), out
        if target == "in place":
            assert not list(old.scan_iter("rd:exp:*")) and not list(old.scan_iter("rd:imp:*"))
            assert "0 experiments" in migrate_cli(env)  # again: nothing left to do
        else:
            assert old.exists(f"rd:exp:{exps[0]}")  # the source is left as it was
        store = Store(connect(url, cluster=cluster))
        config = Config(redis_url=url, redis_cluster=cluster, broker_url=old_url,
                        admin_token=FIXTURE["admin_token"], secret_key=FIXTURE["secret_key"],
                        ranker_allow="127.0.0.1,localhost", clicks_per_client_per_minute=0)
        server = ThreadedServer(create_app(config))
        try:
            client = Client(server.url, FIXTURE["admin_token"])
            assert {e["id"] for e in client.experiments()} == set(exps)
            for e in exps:
                before, state = old_state(e), client.experiment(e)
                assert np.array_equal(np.array(state["W"]), before["W"])
                assert state["t"] == before["t"] and state["counters"] == before["counters"]
                got = {r["arm"]: r["eliminated"]["step"] for r in state["rankers"]
                       if r["eliminated"]}
                assert got == {int(a): v["step"]
                               for a, v in before["state"]["eliminated"].items()}
            assert sum(1 for r in client.experiment(exps[0])["rankers"]
                       if r["status"] == "eliminated") == 3
            # impressions issued before the migration: clicks and ends still work
            for imp in FIXTURE["open_impressions"][exps[1]]:
                # a token like the one issued then (the fixture's expired since it was made)
                token = issue_token(FIXTURE["secret_key"].encode(), imp, exps[1],
                                    int(time.time()) + 3600)
                page = {"impression_id": imp, "token": token}
                doc = min(FIXTURE["open_results"][imp])
                rank = FIXTURE["open_results"][imp].index(doc) + 1
                out = client.click(page, [(doc, rank)])  # new, or a repeat of theirs
                assert out["accepted"] + out["duplicates"] == 1
                assert client.end(page)["status"] == "closed"
            # ... and a new impression has an id of the current layout
            page = client.search(exps[1], "after", k=4)
            assert page["impression_id"].startswith(exps[1] + ".")
            client.click(page, [(page["results"][0]["id"], 1)])
            client.end(page)
            # credit what is due (the pending ones of the fixture, the clicked ones, the
            # new one) with the workers' function, and check each counted once
            for e in exps:
                while True:
                    t, ids = store.drains.claim(e, 100, lease_s=60)
                    if not ids:
                        break
                    credit_batch(store, e, ids, t)
                state = client.experiment(e)
                c = state["counters"]
                assert c["credited"] == c["impressions"] - 5 * (e == exps[0])  # 5 left open
                W = np.array(state["W"])
                assert W.sum() == c["decisive"] == state["comparisons"]
                assert W.sum() > old_state(e)["W"].sum() or e == exps[0]
        finally:
            server.close()
