"""The command line for a person: a user's mistake is one line and exit code 2 (never a
traceback), ``--help`` is plain text, ``simulate --help`` names the algorithms and the
defaults, progress ETAs are sane, the demo prints URLs only while they are alive, and a
worker's INFO log says what a person needs (per-task lines are DEBUG).

The commands run as subprocesses, as a user runs them.
"""

from __future__ import annotations

import io
import logging
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


def test_the_first_eta_is_not_a_wild_guess():
    from cli.progress import Progress

    stream = io.StringIO()
    p = Progress(1_000_000, "job", stream=stream, enabled=True)
    p.advance(10)  # the first steps, slow with start-up costs
    p._draw(p.start + 0.2, "")
    assert stream.getvalue().rstrip().endswith("ETA ?"), stream.getvalue()
    p.done = 500_000  # half done in 2.5 s: 2.5 s to go
    p._draw(p.start + 2.5, "")
    assert "ETA 2s" in stream.getvalue().splitlines()[-1] or "ETA 3s" in stream.getvalue()


def _summary_text(keep_running: bool) -> str:
    from demo.run import Demo, DemoOptions

    out = io.StringIO()
    demo = Demo(DemoOptions(rankers=3, keep_running=keep_running), out=out)
    summary = {"champion": "r00", "true_best": "r00", "queries": 1, "seconds": 1.0,
               "queries_per_second": 1.0, "impressions": 1, "decisive_impressions": 1,
               "comparisons": 1, "regret": 0.0,
               "urls": {"api": "http://127.0.0.1:1", "metrics": "http://127.0.0.1:1/metrics",
                        "openapi": "http://127.0.0.1:1/openapi.json"}}
    demo.print_summary(summary, {"rankers": []})
    return out.getvalue()


def test_the_demo_prints_urls_only_while_they_are_alive():
    stopped = _summary_text(keep_running=False)
    assert "http://" not in stopped and "--keep-running" in stopped
    kept = _summary_text(keep_running=True)
    assert "look at" in kept and "http://127.0.0.1:1/metrics" in kept
    # the bare base URL answers 404: the api line shows the API's description instead
    urls = [line.split()[-1] for line in kept.splitlines() if "http://" in line]
    assert "http://127.0.0.1:1" not in urls and "http://127.0.0.1:1/openapi.json" in urls
    assert [line.split()[0] for line in kept.splitlines() if "openapi.json" in line] == ["api"]


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


def test_celery_task_lines_are_debug_and_failures_stay():
    from workers.health import QuietSweep

    logger = logging.getLogger("celery.app.trace.test")
    logger.setLevel(logging.INFO)
    f = QuietSweep()

    def record(level, msg, args):
        return logger.makeRecord(logger.name, level, __file__, 1, msg, args, None)

    drain = {"name": "rankduel.drain", "id": "x", "runtime": 0.1, "return_value": None}
    assert not f.filter(record(logging.INFO, "Task %(name)s[%(id)s] received", drain))
    assert not f.filter(record(logging.INFO, "Task %(name)s[%(id)s] succeeded in %(runtime)ss:"
                               " %(return_value)s", drain))
    assert f.filter(record(logging.ERROR, "Task %(name)s[%(id)s] raised", drain))
    assert f.filter(record(logging.INFO, "Task %(name)s[%(id)s] retry: x", drain))
    logger.setLevel(logging.DEBUG)  # at DEBUG the per-task lines are there, as DEBUG
    r = record(logging.INFO, "Task %(name)s[%(id)s] received", drain)
    assert f.filter(r) and r.levelno == logging.DEBUG


def test_the_worker_logs_one_line_a_minute_of_totals(caplog):
    from workers.monitoring import Totals

    counts = {"runs:drain": 0.0, "runs:sweep": 0.0, "failed": 0.0, "retried": 0.0}
    totals = Totals(read=lambda: dict(counts), interval_s=60)
    with caplog.at_level(logging.INFO, logger="rankduel.worker.metrics"):
        assert totals.tick() is None  # an idle minute logs nothing
        counts.update({"runs:drain": 100.0, "runs:sweep": 12.0, "credited:credited": 900.0,
                       "credited:no_clicks": 40.0, "failed": 1.0})
        line = totals.tick()
    assert line == ("last 60 s: 112 task runs (drain 100, sweep 12), 1 failed, 0 retried; "
                    "impressions credited: credited 900, no_clicks 40")
    assert [r.getMessage() for r in caplog.records] == [line]


def test_a_real_worker_at_info_logs_no_line_per_drain(stack, service_env, redis_url, worker,
                                                      client, ranker_server):
    """A Celery worker at INFO crediting 40 impressions: its log says it started and
    stopped, and has no "received"/"succeeded" line per task run."""
    from test_service_api import rankers_for
    from test_workers_credit import all_credited, wait_for

    worker.stop()  # this test's worker takes every task
    child = stack.python("info-worker", [
        "-m", "cli.main", "worker", "--loglevel", "info", "--hostname",
        f"info-{os.getpid()}@%h"], service_env)
    try:
        stack.wait_worker(child, redis_url)
        exp = client.create_experiment(name="logs", algorithm="uniform",
                                       interleaving="team_draft", seed=5,
                                       rankers=rankers_for(ranker_server, "good", "bad"))
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
