"""Workers under faults, with real processes: Redis restarted under load, pool processes
SIGKILLed, a stalled pool, a dead Celery main process; and the embedded Redis keeping
its data across a restart.

Each test runs against a Redis of its own module (restarting the session's would disturb
the other tests): the API in-process on a loopback port, the worker as ``rankduel
worker`` (the supervisor, its Celery worker and its pool). Nothing sleeps for a fixed
time: every step waits for a condition. The invariant checked after every fault is the
one of ``tests/test_workers_credit.py``: the pending set drains to zero and W's total
equals the decisive impressions recomputed from what Redis stored.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from demo.client import Client, http_json
from demo.faults import Users, celery_main, decisive_in_redis, exp_state, pool
from demo.stack import Stack, child_pids, free_port, wait_until
from demo.wsgi_server import ThreadedServer

ADMIN = "faults-admin-token-0123456789"


# ------------------------------------------------------------------------------ helpers
def healthz(port: int) -> tuple[int, dict]:
    try:
        return http_json("GET", f"http://127.0.0.1:{port}/healthz", timeout=3)
    except OSError as exc:
        return 0, {"error": repr(exc)}


def compose_healthcheck(service: str, port: int) -> int:
    """Run the healthcheck of ``service`` in docker-compose.yml against ``port``; its exit
    code (what Docker sees)."""
    import subprocess
    import sys

    import yaml

    compose = yaml.safe_load((Path(__file__).parents[2] / "docker-compose.yml").read_text())
    test = compose["services"][service]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"], test
    argv = [sys.executable, *(a.replace(":9101/", f":{port}/") for a in test[2:])]
    return subprocess.run(argv, capture_output=True, timeout=30).returncode


def assert_all_credited(f, exp_id: str, timeout: float = 120) -> dict:
    """Wait until nothing of ``exp_id`` is pending and everything is credited; check W."""
    def done() -> bool:
        s = exp_state(f.rd, exp_id)
        c = s["counters"]
        return s["pending"] == 0 and c.get("credited", 0) == c.get("impressions", -1)

    wait_until(done, timeout, f"every impression of {exp_id} credited")
    state = f.client.experiment(exp_id)
    decisive = decisive_in_redis(f.rd, exp_id)
    assert np.array(state["W"]).sum() == decisive == state["counters"]["decisive"]
    return state


# ------------------------------------------------------------------------------ fixture
@pytest.fixture(scope="module")
def f(tmp_path_factory, service_env, ranker_server):
    """A Redis, an API and helpers of this module's own."""
    import redis

    from service.app import create_app
    from service.config import load_config

    stack = Stack(tmp_path_factory.mktemp("faults"))
    url = stack.start_redis()
    env = dict(service_env, REDIS_URL=url, RANKDUEL_ADMIN_TOKEN=ADMIN,
               RANKDUEL_SWEEP_INTERVAL_S="0.3", RANKDUEL_SWEEP_STALE_S="3",
               PROMETHEUS_MULTIPROC_DIR=str(stack.workdir / "prom"))
    env.pop("RANKDUEL_BROKER_URL", None)
    api = ThreadedServer(create_app(load_config(env=env)))
    rd = redis.Redis.from_url(url, socket_timeout=5, retry_on_timeout=True)
    ns = SimpleNamespace(stack=stack, url=url, env=env, api=api, rd=rd,
                         client=Client(api.url, ADMIN), workers=[])

    def start_worker(concurrency: int = 2, beat: bool = True, **extra: str):
        port = free_port()
        wenv = dict(env, RANKDUEL_WORKER_METRICS_BIND=f"127.0.0.1:{port}", **extra)
        name = f"worker{len(ns.workers)}"
        child = stack.start_worker(wenv, name=name, concurrency=concurrency, beat=beat)
        stack.wait_worker(child, url)
        ns.workers.append(child)
        return child, port

    ns.start_worker = start_worker

    def experiment(name: str, seed: int = 1) -> str:
        rankers = [{"name": n, "url": f"{ranker_server.url}/r/{n}", "timeout_ms": 1000}
                   for n in ("good", "bad", "mid")]
        return ns.client.create_experiment(name=name, rankers=rankers, algorithm="uniform",
                                           interleaving="team_draft", seed=seed)["id"]

    ns.experiment = experiment
    yield ns
    api.close()
    rd.close()
    stack.close()


@pytest.fixture
def fresh(f):
    """Stop the workers a previous test of this module left running, and start the
    module's Redis again if a failed test left it stopped (one failure, not a cascade)."""
    for child in f.workers:
        child.stop()
    f.workers.clear()
    if f.stack.redis_child.proc.poll() is not None:
        f.stack.redis_child.start()
        f.stack.wait_redis()
    return f


# -------------------------------------------------------------------------------- tests
def test_embedded_redis_keeps_experiments_across_a_restart(fresh):
    f = fresh
    f.start_worker(concurrency=1)
    exp_id = f.experiment("durable")
    client = Client(f.api.url, ADMIN)
    for n in range(12):
        page = client.search(exp_id, f"q{n}", k=4)
        client.click(page, [(page["results"][0]["id"], 1)])
        client.end(page)
    before = assert_all_credited(f, exp_id)
    assert np.array(before["W"]).sum() > 0
    f.stack.restart_redis()  # SIGKILL, then the same binary on the same port and folder
    status, after = client.request("GET", f"/experiments/{exp_id}", admin=True)
    assert status == 200, after
    assert after["W"] == before["W"]
    assert after["counters"] == before["counters"]


def test_worker_survives_redis_restarts_under_load(fresh):
    """Redis SIGKILLed and started again four times while users search and click: the
    Celery worker reconnects each time (it is never restarted, and never logs an
    unrecoverable error), /healthz says 503 while the broker is away and 200 after,
    and every impression is credited once."""
    f = fresh
    worker, port = f.start_worker(concurrency=2)
    main = celery_main(worker.pid)
    exp_id = f.experiment("restarts", seed=2)
    users = Users(f.api.url, exp_id, n=3, admin=ADMIN)
    try:
        for i in range(4):  # celery/kombu 5.7 alone died at 2 restarts in 3
            users.wait_for_more(60)
            f.stack.redis_child.kill(signal.SIGKILL)
            f.stack.redis_child.proc.wait(30)
            if i == 0:  # the health check sees the broker go (the sweep's heartbeat
                # read fails at once; the consumer notices its lost connection a little later)
                wait_until(lambda: healthz(port)[0] == 503, 30, "healthz 503 without Redis")
                wait_until(lambda: healthz(port)[1].get("broker") == "disconnected", 30,
                           "healthz names the lost broker")
                assert healthz(port)[0] == 503
            f.stack.redis_child.start()
            f.stack.wait_redis()
        users.wait_for_more(60)  # the API and the users are back
    finally:
        users.close()
    assert_all_credited(f, exp_id)
    wait_until(lambda: healthz(port)[0] == 200, 30, "healthz 200 after the restarts")
    assert celery_main(worker.pid) == main, "the Celery worker died and was restarted"
    log = worker.log_path.read_text(errors="replace")
    assert "Unrecoverable error" not in log
    assert users.searches >= 300


def test_the_sweep_survives_pool_kills(fresh):
    """The worker's children (the pool; with Celery's embedded beat, the beat too) are
    SIGKILLed four times while users click and never call /end: the sweep still closes
    and credits every impression."""
    f = fresh
    worker, port = f.start_worker(concurrency=2)
    exp_id = f.experiment("poolkills", seed=3)
    users = Users(f.api.url, exp_id, n=2, end=0.0, admin=ADMIN)
    try:
        for _ in range(4):
            users.wait_for_more(20)
            old = set(pool(worker.pid, 2))
            for pid in old:
                os.kill(pid, signal.SIGKILL)
            # the main process replaces its pool
            wait_until(lambda old=old: not old & set(child_pids(celery_main(worker.pid))),
                       30, "the killed pool processes gone")
            pool(worker.pid, 2)
        users.wait_for_more(20)
    finally:
        users.close()
    state = assert_all_credited(f, exp_id)
    assert state["counters"]["impressions"] >= 100
    assert healthz(port)[0] == 200


def test_healthz_fails_when_the_sweep_is_dead(fresh):
    """A worker whose sweeps no longer complete (its pool stopped with SIGSTOP) answers
    503 on /healthz once the last sweep is older than sweep_stale_s, and 200 again when
    sweeps resume; a worker without the sweep does not check it."""
    f = fresh
    worker, port = f.start_worker(concurrency=1)
    wait_until(lambda: healthz(port)[0] == 200, 30, "healthz 200")
    body = healthz(port)[1]
    assert body["broker"] == "connected" and body["sweep"]["enabled"] is True
    assert body["sweep"]["age_s"] < 3
    stopped = pool(worker.pid, 1)
    try:
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: healthz(port)[0] == 503, 30, "healthz 503 with the sweep dead")
        body = healthz(port)[1]
        assert body["status"] == "failing" and body["broker"] == "connected"
        assert body["sweep"]["error"] == "no sweep completed recently"
        assert body["sweep"]["age_s"] > 3
        assert compose_healthcheck("scheduler", port) != 0
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
    wait_until(lambda: healthz(port)[0] == 200, 30, "healthz 200 once sweeps resume")
    assert compose_healthcheck("scheduler", port) == 0

    _other, other_port = f.start_worker(concurrency=1, beat=False)
    wait_until(lambda: healthz(other_port)[0] == 200, 30, "the --no-beat worker healthy")
    assert healthz(other_port)[1]["sweep"] == {"enabled": False}


def test_supervisor_restarts_a_dead_celery_worker(fresh):
    """SIGKILL of the Celery worker's main process (the OOM killer, say): ``rankduel
    worker`` starts it again and crediting goes on."""
    f = fresh
    worker, port = f.start_worker(concurrency=1)
    main = celery_main(worker.pid)
    os.kill(main, signal.SIGKILL)
    wait_until(lambda: child_pids(worker.pid) not in ([], [main]), 30, "a new Celery worker")
    wait_until(lambda: healthz(port)[0] == 200, 60, "the new Celery worker healthy")
    assert worker.alive()
    exp_id = f.experiment("supervised", seed=5)
    client = Client(f.api.url, ADMIN)
    for n in range(5):
        page = client.search(exp_id, f"q{n}", k=4)
        client.click(page, [(page["results"][0]["id"], 1)])
        client.end(page)
    assert_all_credited(f, exp_id)
    assert "starting it again" in worker.log_path.read_text(errors="replace")


def test_idle_worker_is_quiet_and_leaves_nothing_behind(fresh, tmp_path):
    """At INFO, a worker that only sweeps (every 0.3 s) logs nothing; real work is done
    without a line per drain (drains log at DEBUG; the totals come once a minute); the stop
    is logged; after a clean stop its temp folders (metrics, Celery's) are gone."""
    f = fresh
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    port = free_port()
    env = dict(f.env, TMPDIR=str(tmp), RANKDUEL_WORKER_METRICS_BIND=f"127.0.0.1:{port}")
    env.pop("PROMETHEUS_MULTIPROC_DIR")
    worker = f.stack.python("quiet-worker", ["-m", "cli.main", "worker", "--loglevel", "info",
                                             "--concurrency", "1"], env)
    f.workers.append(worker)
    f.stack.wait_worker(worker, f.url)
    assert [p.name[:14] for p in tmp.iterdir()].count("rankduel-prom-") == 1

    def sweeps() -> float:
        from prometheus_client.parser import text_string_to_metric_families

        _, text = http_json("GET", f"http://127.0.0.1:{port}/metrics",
                            headers={"Authorization": f"Bearer {ADMIN}"})
        return sum(s.value for fam in text_string_to_metric_families(text)
                   for s in fam.samples
                   if s.name == "rankduel_worker_tasks_processed_total"
                   and s.labels.get("task") == "rankduel.sweep")

    wait_until(lambda: sweeps() >= 10, 60, "ten sweeps")
    log = worker.log_path.read_text(errors="replace")
    idle = log[log.index(" ready."):].splitlines()[1:]
    assert [line for line in idle if line.strip()] == []

    exp_id = f.experiment("quiet", seed=7)
    page = f.client.search(exp_id, "q", k=4)
    f.client.end(page)
    wait_until(lambda: f.client.experiment(exp_id)["counters"]["credited"] >= 1, 30,
               "the impression credited")
    assert "Task rankduel.drain[" not in worker.log_path.read_text()
    worker.stop()
    assert worker.proc.returncode == 0
    assert "worker stopping" in worker.log_path.read_text()
    assert list(tmp.iterdir()) == []
