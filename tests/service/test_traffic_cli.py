"""``rankduel traffic`` waits for a starting stack: an API that is not up yet or rankers
that miss the API's test query are retried, each time with a line saying what it waits
for, up to ``--wait``; then one clear error and exit code 2, never a traceback. (In
docker compose, a traceback here was a crash loop of the demo-traffic container.)

The command runs as a subprocess against the real API of the test session on loopback.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ADMIN

#: every test here starts a server, a command or an interpreter itself (tests/conftest.py)
pytestmark = pytest.mark.starts_process

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def traffic(api: str, rankers: str, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), RANKDUEL_ADMIN_TOKEN=ADMIN)
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", "traffic", "--api", api, "--rankers-url", rankers,
         "--rankers", "3", "--queries", "5", "--rounds", "1", "--pause", "0",
         "--concurrency", "2", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def assert_clear_failure(proc: subprocess.Popen, *words: str) -> list[str]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (proc.returncode, err)
    assert "Traceback" not in out + err, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("rankduel traffic: error: "), lines
    for w in words:
        assert w in lines[-1], lines
    return lines


def test_rankers_that_miss_the_probe_are_waited_for_then_one_clear_error(api):
    rankers = f"http://127.0.0.1:{closed_port()}"
    lines = assert_clear_failure(traffic(api.url, rankers, "--wait", "3"),
                                 "did not answer the test query", "still failing after 3 s")
    waits = [ln for ln in lines[:-1] if "waiting for the API and the rankers" in ln]
    assert waits and len(waits) == len(lines) - 1, lines  # nothing else on stderr


def test_an_unreachable_api_is_one_clear_error():
    api = f"http://127.0.0.1:{closed_port()}"
    assert_clear_failure(traffic(api, "http://127.0.0.1:9", "--wait", "2"),
                         "cannot reach the API", api)


def test_a_wrong_token_is_not_retried(api):
    env_token = {"RANKDUEL_ADMIN_TOKEN": "not-the-token"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "traffic", "--api", api.url, "--rankers-url",
         "http://127.0.0.1:9", "--wait", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT), **env_token))
    t0 = time.monotonic()
    lines = assert_clear_failure(proc, "401", "RANKDUEL_ADMIN_TOKEN")
    assert len(lines) == 1, lines
    assert time.monotonic() - t0 < 55  # at once, not after --wait


def test_rankers_coming_up_late_are_used(api):
    """The rankers start only once the command has said it waits for them; it then
    creates its experiment and sends its round."""
    from demo.world_rankers import create_ranker_app
    from demo.wsgi_server import ThreadedServer

    port = closed_port()
    proc = traffic(api.url, f"http://127.0.0.1:{port}", "--wait", "90")
    first = proc.stderr.readline()
    assert "waiting for the API and the rankers" in first, first
    server = ThreadedServer(create_ranker_app(seed=1, n_rankers=3), port=port)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        server.close()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "experiment " in out and "round 1: 5 queries" in out, out
