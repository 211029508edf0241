"""The restore drill of docs/operations/backup.md (issue 49): a snapshot of a live Redis
(``SAVE``'s RDB file) restored into a fresh Redis, as the page says (load the RDB with the
AOF off, then turn the AOF on); the experiments go on from it.

* at the snapshot: the restored experiment's state, W, verdict and webhook cursor are the
  source's, and W equals a replay of the restored event log (``rankduel replay``'s
  function);
* after it: an API and a worker on the restored Redis serve and credit more searches, and
  W still equals the replay of the whole log (nothing credited twice or lost); a new
  webhook event is delivered and none told before the snapshot is told again.
"""

from __future__ import annotations

import os
import shutil

import redis

from demo.stack import free_port, redis_executable, wait_until
from tests.conftest import ADMIN
from tests.service.test_webhooks import ALL_EVENTS, SECRET, Receiver
from tests.service.test_workers_credit import all_credited, rankers_for, wait_for


def _traffic(client, exp_id: str, n: int, seed: int) -> None:
    for i in range(n):
        page = client.search(exp_id, f"q{seed}-{i}", k=3, user=f"u{seed}-{i}")
        client.click(page, [(page["results"][(i * 7) % 3]["id"], (i * 7) % 3 + 1)])
        client.end(page)


def _replay_w(r: redis.Redis, exp_id: str) -> list[list[float]]:
    from service.events.replay import replay
    from service.store import Store

    return replay(Store(r).event_log.events(exp_id, "0", 1_000_000))["W"]


def test_a_snapshot_restored_into_a_fresh_redis_goes_on(client, worker, rd, stack,
                                                        service_env, ranker_server,
                                                        tmp_path):
    from demo.client import Client
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import load_config

    exp = client.create_experiment(name="drill", rankers=rankers_for(
        ranker_server, "good", "mid", "bad"), algorithm="uniform", interleaving="team_draft")
    exp_id = exp["id"]

    receiver = Receiver()  # a webhook whose cursor the snapshot holds
    status, hook = client.request("POST", "/webhooks", {
        "url": receiver.url, "events": ALL_EVENTS, "secret": SECRET,
        "experiments": [exp_id]}, admin=True)
    assert status == 201, hook
    for action in ("pause", "resume"):
        client.request("POST", f"/experiments/{exp_id}/{action}", admin=True)
    wait_for(lambda: receiver.accepted(), what="the pause told to the webhook")
    _traffic(client, exp_id, 40, seed=1)
    source = wait_for(all_credited(client, exp_id), what="every impression credited")
    hooks_key = f"rd:{{{exp_id}}}:hooks"
    wait_for(lambda: rd.hget(hooks_key, f"c:{hook['id']}"), what="the webhook's cursor")
    told = set(receiver.accepted())
    verdict = client.request("GET", f"/experiments/{exp_id}/report", admin=True)[1]["verdict"]
    cursor = f"c:{hook['id']}"
    before = rd.hget(hooks_key, cursor)
    rd.save()  # the snapshot (a deployment's hourly BGSAVE, docs/operations/backup.md)
    rdb = os.path.join(rd.config_get("dir")["dir"], rd.config_get("dbfilename")["dbfilename"])
    fresh = tmp_path / "restored"
    fresh.mkdir()
    shutil.copy(rdb, fresh / "dump.rdb")

    port = free_port()
    child = stack.spawn("restored-redis", [
        redis_executable(), "--port", str(port), "--bind", "127.0.0.1", "--dir", str(fresh),
        "--dbfilename", "dump.rdb", "--appendonly", "no", "--daemonize", "no"],
        env=dict(os.environ))
    url = f"redis://127.0.0.1:{port}/0"
    r2 = redis.Redis(port=port, socket_timeout=10)
    wait_until(r2.ping, 30, "restored redis", child.proc)
    r2.config_set("appendonly", "yes")  # the AOF written from the loaded data
    wait_until(lambda: r2.info("persistence")["aof_rewrite_in_progress"] == 0
               and r2.info("persistence")["aof_enabled"] == 1, 30, "the AOF written")

    env = dict(service_env, REDIS_URL=url)
    api = ThreadedServer(create_app(load_config(env=env)))
    worker2 = stack.start_worker(env, name="restored-worker")
    try:
        stack.wait_worker(worker2, url)
        c2 = Client(api.url, ADMIN)
        restored = c2.experiment(exp_id)
        assert restored["W"] == source["W"] and restored["counters"] == source["counters"]
        assert c2.request("GET", f"/experiments/{exp_id}/report",
                          admin=True)[1]["verdict"] == verdict
        assert _replay_w(r2, exp_id) == restored["W"]  # W = the log's replay
        assert sum(map(sum, restored["W"])) > 0
        # the webhook's cursor, as the snapshot took it: the source's worker may deliver
        # an event between the read before the snapshot and the read now
        def sid(v: bytes) -> tuple[int, ...]:
            return tuple(map(int, v.split(b"-")))

        assert sid(before) <= sid(r2.hget(hooks_key, cursor)) <= sid(rd.hget(hooks_key, cursor))

        _traffic(c2, exp_id, 20, seed=2)  # the experiment goes on from the snapshot
        after = wait_for(all_credited(c2, exp_id), what="the new impressions credited")
        assert after["counters"]["impressions"] == 60
        assert _replay_w(r2, exp_id) == after["W"]
        assert sum(map(sum, after["W"])) > sum(map(sum, restored["W"]))
        c2.request("POST", f"/experiments/{exp_id}/pause", admin=True)  # a new event
        wait_for(lambda: len(receiver.accepted()) > len(told), what="the new event told")
        deliveries = [r["event_id"] for r in receiver.requests if r["status"] == 200]
        assert len(deliveries) == len(set(deliveries))  # nothing told twice
    finally:
        receiver.stop()
        worker2.stop()
        api.close()
        r2.close()
