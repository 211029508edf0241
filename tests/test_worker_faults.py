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

import json
import os
import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import interleaving
from demo.client import Client, http_json
from demo.stack import Stack, ThreadedServer, child_pids, free_port, wait_until

ADMIN = "faults-admin-token-0123456789"


# ------------------------------------------------------------------------------ helpers
def celery_main(supervisor: int) -> int:
    """The Celery worker's main process: the supervisor's one child."""
    found: list[int] = []

    def one() -> bool:
        found[:] = child_pids(supervisor)
        return len(found) == 1

    wait_until(one, 30, "the Celery worker process")
    return found[0]


def pool(supervisor: int, size: int) -> list[int]:
    """The pool processes of the worker (children of its main process), once ``size``
    of them are there."""
    found: list[int] = []

    def full() -> bool:
        found[:] = child_pids(celery_main(supervisor))
        return len(found) == size

    wait_until(full, 60, f"{size} pool processes")
    return found


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

    compose = yaml.safe_load((Path(__file__).parent.parent / "docker-compose.yml").read_text())
    test = compose["services"][service]["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"], test
    argv = [sys.executable, *(a.replace(":9101/", f":{port}/") for a in test[2:])]
    return subprocess.run(argv, capture_output=True, timeout=30).returncode


def exp_state(rd, exp_id: str) -> dict:
    """Counters, pending count and W of an experiment, read from Redis."""
    from service.keys import counters_key, pending_key

    counters = {k.decode(): int(float(v)) for k, v in rd.hgetall(counters_key(exp_id)).items()}
    return {"counters": counters, "pending": rd.zcard(pending_key(exp_id))}


def decisive_in_redis(rd, exp_id: str) -> int:
    """Decisive impressions of ``exp_id``, recomputed from every stored impression."""
    n = 0
    from service.keys import imp_key

    for key in rd.scan_iter(match=imp_key(exp_id, "*"), count=1000):
        if key.endswith(b":clicks"):
            continue
        raw = rd.hgetall(key)
        if raw.get(b"exp", b"").decode() != exp_id or raw.get(b"duel") != b"1":
            continue
        clicks = sorted(int(x) for x in rd.smembers(key + b":clicks"))
        n += bool(interleaving.credit(json.loads(raw[b"record"]), clicks))
    return n


class Users:
    """Simulated users in threads: search, click the top result, end half the time;
    errors (503 while Redis is down, refused connections) are counted, not raised."""

    def __init__(self, client: Client, exp_id: str, n: int = 3, end: bool = True) -> None:
        self.client, self.exp_id, self.end = client, exp_id, end
        self.stop = threading.Event()
        self.searches = 0
        self.errors: dict[str, int] = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def run(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        client = Client(self.client.base_url, ADMIN, timeout=10)
        while not self.stop.is_set():
            try:
                page = client.search(self.exp_id, "q", k=4)
                with self.lock:
                    self.searches += 1
                pos = int(rng.integers(len(page["results"])))
                client.click(page, [(page["results"][pos]["id"], pos + 1)])
                if self.end and rng.random() < 0.5:
                    client.end(page)
            except Exception as exc:
                status = getattr(exc, "status", None)
                with self.lock:
                    key = str(status or type(exc).__name__)
                    self.errors[key] = self.errors.get(key, 0) + 1
                client.close()
                self.stop.wait(0.05)

    def wait_for_more(self, n: int, timeout: float = 60) -> None:
        start = self.searches
        wait_until(lambda: self.searches >= start + n, timeout, f"{n} more searches")

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


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
    """Stop the workers a previous test of this module left running."""
    for child in f.workers:
        child.stop()
    f.workers.clear()
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
    users = Users(f.client, exp_id, n=3)
    try:
        for i in range(4):  # celery/kombu 5.7 alone died at 2 restarts in 3
            users.wait_for_more(60)
            f.stack.redis_child.kill(signal.SIGKILL)
            f.stack.redis_child.proc.wait(30)
            if i == 0:  # the health check sees the broker go
                wait_until(lambda: healthz(port)[0] == 503, 30, "healthz 503 without Redis")
                assert healthz(port)[1]["broker"] == "disconnected"
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
    users = Users(f.client, exp_id, n=2, end=False)
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
    """At INFO, a worker that only sweeps (every 0.3 s) logs nothing; real work is
    logged; after a clean stop its temp folders (metrics, Celery's) are gone."""
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
    wait_until(lambda: "Task rankduel.drain[" in worker.log_path.read_text(), 30,
               "the drain in the log")
    worker.stop()
    assert worker.proc.returncode == 0
    assert list(tmp.iterdir()) == []
