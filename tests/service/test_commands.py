"""Checks that need a process of their own: the console commands run as commands
(``rankduel serve``/``worker`` refuse a bad configuration, ``rankduel matrix estimate``,
``rankduel simulate --jobs``), gunicorn loads the deployment's config, the command line's
imports before ``serve`` prepares the metrics, and interleaving seeds that must not
depend on the process.

Each starts a Python process (a second or more each), so they are in the service tier,
not with the pure tests they were first written beside (tests/unit/test_service_config.py,
test_simulator.py, test_interleaving_estimate.py, test_architecture.py,
test_interleaving.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from simulator_toys import SUMMARY_FIELDS, FixedPair, Knockout, without_speed

import bandits
import interleaving as il
from bandits import matrices as M
from cli.main import main as cli

#: every test here starts a server, a command or an interpreter itself (tests/conftest.py)
pytestmark = pytest.mark.starts_process

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------- serve, worker, gunicorn


def _run_cli(*args: str, env_extra: dict[str, str] | None = None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RANKDUEL_") and k != "REDIS_URL"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_serve_refuses_to_start_without_secrets():
    proc = _run_cli("serve", "--bind", "127.0.0.1:1")
    assert proc.returncode == 2
    assert "RANKDUEL_ADMIN_TOKEN and RANKDUEL_SECRET_KEY" in proc.stderr
    proc = _run_cli("serve", env_extra={"RANKDUEL_ADMIN_TOKEN": "tok-VISIBLE-123"})
    assert proc.returncode == 2 and "RANKDUEL_SECRET_KEY" in proc.stderr
    assert "tok-VISIBLE-123" not in proc.stderr + proc.stdout


def test_worker_refuses_a_bad_configuration():
    proc = _run_cli("worker", env_extra={"RANKDUEL_SWEEP_INTERVAL_S": "never"})
    assert proc.returncode == 2 and "sweep_interval_s" in proc.stderr


def test_deploy_gunicorn_config_loads_the_app(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKDUEL_")}
    env.update(RANKDUEL_ADMIN_TOKEN="a", RANKDUEL_SECRET_KEY="b",
               PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom" / "fresh"))
    proc = subprocess.run([sys.executable, "-m", "gunicorn", "--check-config", "-c",
                           "deploy/gunicorn.conf.py", "service.app:create_app()"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "prom" / "fresh").is_dir()


# ---------------------------------------------------------------------- rankduel simulate --jobs
@pytest.fixture
def toy_registry(monkeypatch):
    """Register the toy policies under CLI names (forked --jobs workers inherit this)."""
    for cls in (FixedPair, Knockout):
        monkeypatch.setitem(bandits.ALGORITHMS, cls.name, f"{cls.__module__}:{cls.__name__}")


def test_cli_several_algorithms_and_jobs(tmp_path, toy_registry):
    P_path = tmp_path / "P.npy"
    np.save(P_path, M.bradley_terry(7, gap=0.05, seed=4))
    common = ["simulate", "--matrix", str(P_path), "--algorithm", "knockout,uniform",
              "--param", "knockout.rounds=25", "--steps", "5000", "--runs", "3",
              "--seed", "5"]
    assert cli([*common, "--out", str(tmp_path / "j1")]) == 0
    assert cli([*common, "--out", str(tmp_path / "j2"), "--jobs", "2"]) == 0
    for name in ("knockout", "uniform"):
        one = json.loads((tmp_path / "j1" / name / "summary.json").read_text())
        two = json.loads((tmp_path / "j2" / name / "summary.json").read_text())
        assert set(one) == SUMMARY_FIELDS and one["algorithm"] == name
        assert without_speed(one) == without_speed(two)
    knockout = json.loads((tmp_path / "j1" / "knockout" / "summary.json").read_text())
    assert knockout["params"] == {"rounds": 25}
    assert (tmp_path / "j1" / "regret.png").exists()
    assert not (tmp_path / "j1" / "summary.json").exists()


# ---------------------------------------------------------------------- rankduel matrix estimate
def test_cli_contract_runs_as_a_console_command(tmp_path: Path):
    out = tmp_path / "P.txt"
    cmd = [sys.executable, "-m", "cli.main", "matrix", "estimate", "--world", "1:4",
           "--method", "sosm", "--click-model", "perfect", "--comparisons", "50",
           "--seed", "0", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, cwd=Path(__file__).parents[2])
    assert np.loadtxt(out).shape == (4, 4)


# ---------------------------------------------------------------------- a fresh interpreter
def test_the_command_line_loads_no_metrics_before_serve_prepares_them():
    # prometheus-client picks its value store (in memory, or per-process files under
    # PROMETHEUS_MULTIPROC_DIR) when first imported: `rankduel serve` sets the folder after
    # parsing, so parsing must not import it
    code = ("import sys\nfrom cli.main import build_parser\nbuild_parser()\n"
            "loaded = [m for m in ('prometheus_client', 'service.metrics', 'demo', "
            "'matplotlib') if m in sys.modules]\nassert not loaded, loaded\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_seed_for_does_not_depend_on_the_process():
    import subprocess
    import sys

    code = "import interleaving as il; print(il.seed_for('alice', 'alpine lake', 'e1'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "123", "PYTHONPATH": "."})
    assert int(out.stdout) == il.seed_for("alice", "alpine lake", "e1")
