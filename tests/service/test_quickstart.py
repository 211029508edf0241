"""The README's quick start, run as written against real processes.

The ```bash blocks under ``## Quick start`` in README.md are run in one shell (``bash -e``)
in a temporary folder, with this environment's ``.venv/bin`` first on ``PATH`` (the
```sh install block is what put it there, and is not run). The only change: the quick
start's ports (Redis 6379, API 8000, rankers 8001) become free ports, so the test runs
beside anything else on the machine. It starts a real Redis, ``rankduel serve``,
``rankduel worker`` and the example rankers; every process the script starts is in the
script's own process group, which the test ends (SIGTERM, then SIGKILL) whatever happens.

The folder it runs in is a fresh git repository holding the project's ``.gitignore``: it
must stay clean (``git status --porcelain``), every file the quick start writes being
ignored, as in a clone. And its Redis must listen on loopback only. (That the blocks stay
short: tests/unit/test_docs_text.py.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import redis
from readme_quickstart import quickstart_blocks

from demo.stack import free_port

ROOT = Path(__file__).resolve().parents[2]
PORTS = ("6379", "8000", "8001")


def _stop_group(pgid: int, timeout: float = 30.0) -> None:
    """SIGTERM the script's process group, wait until it is empty, SIGKILL what stays."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)


def _get(url: str, token: str) -> dict:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.load(resp)


def git_status(checkout: Path) -> str:
    """``git status --porcelain`` of ``checkout``, untracked files listed one by one."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=checkout, capture_output=True, text=True, check=True).stdout


@pytest.mark.starts_process  # runs the quick start's commands
@pytest.mark.timeout(300)
def test_quickstart_runs_as_written(tmp_path):
    blocks = quickstart_blocks()
    assert len(blocks) >= 2
    script = "\n".join(blocks)
    ports = {p: str(free_port()) for p in PORTS}
    script = re.sub(r"(?<!\d)(6379|8000|8001)(?!\d)", lambda m: ports[m[1]], script)
    (tmp_path / "quickstart.sh").write_text(script)
    # the quick start runs in a checkout: a git repository with the project's .gitignore,
    # which must ignore every file the quick start writes (its logs)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / ".gitignore").write_text((ROOT / ".gitignore").read_text())
    subprocess.run(["git", "init", "-q"], cwd=checkout, check=True)
    clean = git_status(checkout)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RANKDUEL_", "REDIS_", "PROMETHEUS_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as fout, err.open("w") as ferr:
        proc = subprocess.Popen(["bash", "-e", str(tmp_path / "quickstart.sh")], cwd=checkout,
                                env=env, stdout=fout, stderr=ferr, start_new_session=True)
    try:
        code = proc.wait(timeout=240)
        stdout = out.read_text()
        logs = sorted((checkout / "var").rglob("*.log"))
        assert code == 0, stdout + err.read_text() + "".join(p.read_text() for p in logs)
        # its logs went to var/log/, and git sees nothing new: the checkout stays clean
        assert {p.name for p in logs} >= {"api.log", "redis.log", "worker.log", "rankers.log"}
        assert git_status(checkout) == clean
        # its Redis listens on loopback only
        bind = redis.Redis(port=int(ports["6379"])).config_get("bind")["bind"]
        assert bind.split() == ["127.0.0.1"], bind
        # the click was accepted, the impression closed, the metrics name the experiment
        assert '"accepted":1' in stdout, stdout
        assert '"status":"closed"' in stdout, stdout
        assert "rankduel_experiment_comparisons_total{experiment=" in stdout, stdout
        # the worker credits the click: the clicked ranker gets its win
        api = f"http://127.0.0.1:{ports['8000']}"
        experiments = _get(f"{api}/experiments", "admin-secret")["experiments"]
        (exp,) = [e for e in experiments if e["name"] == "quickstart"]
        deadline = time.monotonic() + 60
        while True:
            state = _get(f"{api}/experiments/{exp['id']}", "admin-secret")
            if state["comparisons"] >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert state["comparisons"] == 1, state
        assert sum(map(sum, state["W"])) == 1.0
        assert sorted(r["wins"] for r in state["rankers"]) == [0.0, 1.0]
    finally:
        _stop_group(proc.pid)
