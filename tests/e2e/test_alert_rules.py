"""The Prometheus alert rules (deploy/prometheus/alerts.yml): promtool's unit tests of
every rule (tests/e2e/alerts_test.yml) pass, every rule has a case where it fires and one
where it stays quiet, a broken or changed rule fails them, and a real Prometheus loads
the rules the way the compose deployment gives them to it."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
import yaml

from demo.stack import free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy/prometheus/alerts.yml"
TESTS = Path(__file__).with_name("alerts_test.yml")


# every test here runs promtool or Prometheus itself (the tier rule: tests/conftest.py)
pytestmark = pytest.mark.starts_process


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool missing: as root, apt-get install prometheus (Debian ships it)")
    return path


def alert_names(path: Path = RULES) -> list[str]:
    groups = yaml.safe_load(path.read_text())["groups"]
    return [rule["alert"] for group in groups for rule in group["rules"]]


def run_tests(rules: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """promtool's unit tests of alerts_test.yml run against ``rules``."""
    spec = yaml.safe_load(TESTS.read_text())
    spec["rule_files"] = [str(rules)]
    copy = tmp_path / "alerts_test.yml"
    copy.write_text(yaml.safe_dump(spec, sort_keys=False))
    return subprocess.run([promtool(), "test", "rules", str(copy)], capture_output=True,
                          text=True, timeout=120)


def test_the_rules_pass_their_promtool_tests():
    check = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    out = subprocess.run([promtool(), "test", "rules", str(TESTS)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_rule_has_a_case_where_it_fires_and_one_where_it_does_not():
    names = alert_names()
    assert len(names) == len(set(names)) >= 9
    assert {"RankduelRankerQuarantined", "RankduelRankerDegraded", "RankduelGuardrailTripped",
            "RankduelCreditLag", "RankduelRedisErrors", "RankduelNoSearchTraffic"} <= set(names)
    cases = [case for test in yaml.safe_load(TESTS.read_text())["tests"]
             for case in test.get("alert_rule_test", [])]
    fires = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert set(names) <= fires, set(names) - fires
    assert set(names) <= quiet, set(names) - quiet
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_a_broken_rule_file_fails(tmp_path):
    # PromQL that does not parse: promtool refuses the file, and its tests
    broken = tmp_path / "broken.yml"
    broken.write_text(RULES.read_text().replace(
        "expr: sum(rankduel_queue_length) > 1000", "expr: sum(rankduel_queue_length > 1000"))
    assert broken.read_text() != RULES.read_text()
    check = subprocess.run([promtool(), "check", "rules", str(broken)], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode != 0
    assert run_tests(broken, tmp_path).returncode != 0
    # a rule that parses but no longer does its job (the backlog threshold 10x higher):
    # the unit tests catch it and name it
    changed = tmp_path / "changed.yml"
    changed.write_text(RULES.read_text().replace(
        "sum(rankduel_queue_length) > 1000", "sum(rankduel_queue_length) > 10000"))
    assert changed.read_text() != RULES.read_text()
    out = run_tests(changed, tmp_path)
    assert out.returncode != 0 and "RankduelCreditBacklog" in out.stdout + out.stderr
    # and the unchanged rules pass through the same path
    assert run_tests(RULES, tmp_path).returncode == 0


def test_a_real_prometheus_lists_the_rules(tmp_path):
    # what scripts/compose-check asks the deployment's Prometheus (/api/v1/rules), here on
    # a Prometheus of our own: the rules file beside a configuration naming it relatively
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus missing: as root, apt-get install prometheus")
    shutil.copy(RULES, tmp_path / "alerts.yml")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(
        {"global": {"evaluation_interval": "1s"}, "rule_files": ["alerts.yml"]}))
    port = free_port()
    proc = subprocess.Popen(
        [binary, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}",
         "--log.level=warn"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        listed: list[str] = []

        def loaded() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/rules",
                                        timeout=2) as r:
                groups = json.load(r)["data"]["groups"]
            listed[:] = [rule["name"] for g in groups for rule in g["rules"]]
            return bool(listed)

        wait_until(loaded, 60, "prometheus /api/v1/rules", proc)
        assert sorted(listed) == sorted(alert_names())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
