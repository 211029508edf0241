"""The command line for a person: a user's mistake is one line and exit code 2 (never a
traceback), ``--help`` is plain text, ``simulate --help`` names the algorithms and the
defaults, the demo on a port in use says so in one line, and a real worker at INFO logs
no line per task run.

The commands run as subprocesses, as a user runs them. What they print, checked in
process: progress ETAs and the demo's summary in tests/unit/test_cli_output.py, the
worker's log filter and totals in tests/unit/test_worker_logs.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bandits

ROOT = Path(__file__).resolve().parents[2]


def rankduel(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd or ROOT, env=env)


def assert_user_error(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    for w in words:
        assert w in lines[0], lines


@pytest.mark.starts_process  # runs rankduel as a command
def test_a_missing_qrels_file_is_one_line(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 x\n")
    proc = rankduel("judge", "evaluate", "--qrels", "missing.qrels", "--run", str(run),
                    cwd=tmp_path)
    assert_user_error(proc, "missing.qrels", "no such file")


@pytest.mark.starts_process  # runs rankduel as a command
def test_simulate_out_an_existing_file_is_one_line(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0.5 0.6\n0.4 0.5\n")
    existing = tmp_path / "results.json"
    existing.write_text("{}")
    proc = rankduel("simulate", "--matrix", str(matrix), "--algorithm", "uniform",
                    "--steps", "10", "--out", str(existing))
    assert_user_error(proc, "--out", "is a file")
    assert existing.read_text() == "{}"  # untouched


@pytest.mark.starts_process  # runs rankduel as a command
@pytest.mark.parametrize("command", ["serve", "worker", "demo", "traffic", "migrate-keys",
                                     "report"])
def test_help_is_plain_text(command):
    proc = rankduel(command, "--help")
    if proc.returncode == 2 and "invalid choice" in proc.stderr:
        pytest.skip(f"no command {command}")
    assert proc.returncode == 0, proc.stderr
    for markup in ("``", ":data:", ":mod:", ":func:", ":class:", ":meth:"):
        assert markup not in proc.stdout, (markup, proc.stdout)


@pytest.mark.starts_process  # runs rankduel as a command
def test_simulate_help_lists_the_algorithms_and_defaults():
    out = " ".join(rankduel("simulate", "--help").stdout.split())
    for name in bandits.ALGORITHMS:
        assert name in out, name
    assert "runs per algorithm (default 1)" in out
    assert "(default 0)" in out and "(default 20)" in out


@pytest.mark.starts_process  # runs rankduel demo as a command
def test_the_demo_on_a_port_in_use_says_so_in_one_line(tmp_path):
    """A process of the stack that cannot start (the API's port taken) ends the demo with
    one line naming it and where its log is, every process stopped, no traceback."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RANKDUEL_") and k != "REDIS_URL"}
        proc = subprocess.run(
            [sys.executable, "-m", "cli.main", "demo", "--port", str(port), "--queries", "5",
             "--rankers", "3", "--workdir", str(tmp_path / "var")],
            capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("rankduel demo: error: api: process exited"), lines
    assert str(tmp_path / "var" / "logs") in lines[0]
    assert "Address already in use" in (tmp_path / "var" / "logs" / "api.log").read_text()


def test_a_real_worker_at_info_logs_no_line_per_drain(stack, service_env, redis_url, worker,
                                                      client, ranker_server):
    """A Celery worker at INFO crediting 40 impressions: its log says it started and
    stopped, and has no "received"/"succeeded" line per task run."""
    from helpers.api import all_credited, rankers_for
    from helpers.wait import wait_for

    worker.stop()  # this test's worker takes every task
    child = stack.python("info-worker", [
        "-m", "cli.main", "worker", "--loglevel", "info", "--hostname",
        f"info-{os.getpid()}@%h"], service_env)
    try:
        stack.wait_worker(child, redis_url)
        exp = client.create_experiment(name="logs", algorithm="uniform",
                                       interleaving="team_draft", seed=5,
                                       # 2 s: this test is about the log, and its
                                       # worker's start can starve this process (one
                                       # fresh-clone run had both time out at 500 ms)
                                       rankers=rankers_for(ranker_server, "good", "bad",
                                                           timeout_ms=2000))
        for _ in range(40):
            page = client.search(exp["id"], "q", k=4)
            client.click(page, [(page["results"][0]["id"], 1)])
            client.end(page)
        wait_for(all_credited(client, exp["id"]), timeout=60, what="credit")
    finally:
        child.stop()
        worker.ensure()
    log = child.log_path.read_text(errors="replace")
    assert "started (pid" in log and "worker stopping" in log, log[-2000:]
    assert " ready." in log  # Celery's own INFO lines are there: the level is INFO
    per_task = [line for line in log.splitlines()
                if "rankduel.drain" in line and ("received" in line or "succeeded" in line)]
    assert per_task == [], per_task[:5]
