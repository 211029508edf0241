"""Operability of ``rankduel serve``: its access log (on by default, redirected or turned
off by ``RANKDUEL_ACCESS_LOG``), and nothing left on disk after a clean stop — nor a
metrics folder removed under the running server when one gunicorn worker exits.

Each run is the real command (gunicorn, its workers) with ``TMPDIR`` and ``HOME`` pointed
at folders of the test, so that whatever it leaves behind is seen. The worker's
counterparts (quiet when idle, no files left) are in ``tests/service/test_worker_faults.py``;
its log filter, checked on records in process, in ``tests/unit/test_worker_logs.py``.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
from conftest import ADMIN

from demo.client import http_json
from demo.stack import child_pids, free_port, wait_until

#: ``service.serving.ACCESS_LOG_FORMAT`` as a pattern
LINE = re.compile(r'^127\.0\.0\.1 \[[^\]]+\] "(GET|POST) (/\S*) HTTP/1\.1" (\d{3}) (\d+) (\d+)ms '
                  r'"[^"]*"$', re.M)


#: how long a stopped server may take to exit cleanly: gunicorn gives its workers up to
#: its graceful timeout (10 s) for open keep-alive connections, and a loaded machine adds
#: to that (the stack's default 10 s wait then SIGKILLed a clean shutdown, exit -9)
GRACEFUL_S = 30.0


def serve(stack, service_env, tmp_path: Path, name: str, **env: str):
    """``rankduel serve`` with private TMPDIR and HOME; returns (child, base URL, dirs)."""
    tmp, home = tmp_path / f"{name}-tmp", tmp_path / f"{name}-home"
    tmp.mkdir()
    home.mkdir()
    run_env = dict(service_env, TMPDIR=str(tmp), HOME=str(home), **env)
    run_env.pop("PROMETHEUS_MULTIPROC_DIR")
    bind = f"127.0.0.1:{free_port()}"
    child = stack.start_api(run_env, bind=bind, workers=2, threads=2, name=name)
    return child, f"http://{bind}", tmp, home


def test_serve_logs_each_request_and_leaves_nothing_behind(stack, service_env, tmp_path,
                                                           redis_url):
    child, url, tmp, home = serve(stack, service_env, tmp_path, "serve-default")
    [prom] = tmp.iterdir()  # the metrics folder of this run
    assert prom.name.startswith("rankduel-prom-")
    assert http_json("GET", f"{url}/healthz")[0] == 200
    status, _ = http_json("GET", f"{url}/search?experiment=nope&q=private+words")
    assert status == 404
    # one gunicorn worker stops (max requests, a timeout, a SIGTERM): the others go on
    # writing their metrics into the folder, which must still be there
    workers: list[int] = []

    def booted() -> bool:
        workers[:] = child_pids(child.pid)
        return len(workers) == 2

    wait_until(booted, 30, "both gunicorn workers booted")
    os.kill(workers[0], signal.SIGTERM)
    wait_until(lambda: len(set(child_pids(child.pid)) - set(workers)) == 1, 30,
               "gunicorn replaces the worker")
    assert prom.is_dir()
    assert http_json("GET", f"{url}/metrics",
                     headers={"Authorization": f"Bearer {ADMIN}"})[0] == 200

    child.stop(timeout=GRACEFUL_S)
    assert child.proc.returncode == 0
    assert list(tmp.iterdir()) == []
    assert list(home.iterdir()) == []  # no ~/.gunicorn control socket either
    lines = LINE.findall(child.log_path.read_text())
    assert ("GET", "/healthz", "200") in [line[:3] for line in lines]
    assert ("GET", "/search", "404") in [line[:3] for line in lines]
    assert "private" not in child.log_path.read_text()  # the query string is not logged


@pytest.mark.parametrize("target", ["file", "off"])
def test_access_log_is_redirected_or_off(stack, service_env, tmp_path, redis_url, target):
    path = tmp_path / "access.log"
    value = str(path) if target == "file" else "off"
    child, url, _tmp, _home = serve(stack, service_env, tmp_path, f"serve-{target}",
                                    RANKDUEL_ACCESS_LOG=value)
    assert http_json("GET", f"{url}/healthz")[0] == 200
    child.stop(timeout=GRACEFUL_S)  # every line the server would write is written by now
    assert child.proc.returncode == 0
    assert LINE.findall(child.log_path.read_text()) == []
    if target == "file":
        assert ("GET", "/healthz", "200") in [m[:3] for m in LINE.findall(path.read_text())]
    else:
        assert not path.exists()
