"""The tier rules of tests/conftest.py can fail: a pure tier refuses a test that needs a
server, and a server tier refuses a test that needs none (there is no list of
exceptions). The conftest is loaded again under another name, so its functions are called
directly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tiers():
    spec = importlib.util.spec_from_file_location("rankduel_test_tiers",
                                                  ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tiers = _tiers()


class FakeItem:
    """What the collection hook reads of a pytest item."""

    def __init__(self, nodeid: str, fixturenames=(), markers=()) -> None:
        self.nodeid, self.fixturenames = nodeid, list(fixturenames)
        self.fspath = ROOT / nodeid.split("::", 1)[0]
        self.marks = [pytest.Mark(name, (), {}) for name in markers]

    def iter_markers(self):
        return iter(self.marks)

    def add_marker(self, mark) -> None:
        self.marks.append(mark.mark)


@pytest.mark.parametrize(("path", "tier"), [
    ("tests/unit/test_x.py", "unit"), ("tests/stats/test_x.py", "stats"),
    ("tests/service/test_x.py", "service"), ("tests/e2e/test_x.py", "e2e"),
    ("service/config.py", "unit"), ("bandits/base.py", "unit"),  # doctests of a package
    ("tests/metrics_run.py", None),
])
def test_a_tests_tier_is_its_folder(path, tier):
    assert tiers.tier_of(ROOT / path) == tier


def test_a_pure_tier_refuses_a_server():
    problem = tiers.tier_problem("tests/unit/test_x.py::t", "unit", ["tmp_path", "redis_url"], [])
    assert "tests/unit" in problem and "redis_url" in problem and "tests/service" in problem
    assert tiers.tier_problem("tests/stats/test_x.py::t", "stats", [], ["starts_process"])
    assert tiers.tier_problem("tests/unit/test_x.py::t", "unit", ["tmp_path"], []) is None


def test_a_server_tier_refuses_a_test_that_needs_none():
    problem = tiers.tier_problem("tests/service/test_x.py::t", "service", ["tmp_path"], [])
    assert "needs no server" in problem and "tests/unit" in problem
    assert "starts_process" in problem  # says how to fix it
    assert tiers.tier_problem("tests/e2e/test_x.py::t", "e2e", [], ["timeout"])
    assert tiers.tier_problem("tests/service/test_x.py::t", "service", ["client"], []) is None
    assert tiers.tier_problem("tests/e2e/test_x.py::t", "e2e", [], ["starts_process"]) is None


def test_collection_fails_with_every_misplaced_test_named():
    items = [FakeItem("tests/service/test_x.py::test_pure", ["tmp_path"]),
             FakeItem("tests/unit/test_y.py::test_server", ["api"]),
             FakeItem("tests/service/test_x.py::test_ok", ["redis_url"])]
    with pytest.raises(pytest.UsageError) as error:
        tiers.pytest_collection_modifyitems(None, items)
    text = str(error.value)
    assert "test_x.py::test_pure" in text and "test_y.py::test_server" in text
    assert "test_ok" not in text


def test_collection_marks_each_test_with_its_tier():
    items = [FakeItem("tests/service/test_x.py::test_ok", ["redis_url"]),
             FakeItem("service/config.py::service.config")]
    tiers.pytest_collection_modifyitems(None, items)
    assert [[m.name for m in item.marks] for item in items] == [["service"], ["unit"]]


def test_the_longest_work_unit_runs_first_and_a_split_modules_tests_apart():
    # a split module's tests are units of their own, each by its own estimate; a group's
    # modules stay together, estimated as their sum; a module's tests keep their order
    ids = ["tests/unit/test_a.py::test_1",
           "tests/service/test_quickstart.py::test_1",
           "tests/stats/test_verdict_error_rates.py::test_tied_rankers_are_rarely_certified",
           "tests/e2e/test_metrics.py::test_1",
           "tests/service/test_quickstart.py::test_2",
           "tests/stats/test_verdict_error_rates.py::"
           "test_near_tied_instances_are_rarely_certified_wrongly",
           "tests/e2e/test_dashboards_prometheus.py::test_1"]
    items = [FakeItem(i) for i in ids]
    tiers.schedule(items)
    assert [i.nodeid for i in items] == [ids[5], ids[3], ids[6], ids[2], ids[1], ids[4],
                                         ids[0]]
    assert tiers.unit_seconds(ids[5], ROOT / "tests/stats") > tiers.module_seconds(
        ROOT / "tests/stats/test_verdict_error_rates.py")
