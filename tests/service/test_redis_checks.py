"""A Redis that would lose data is refused or reported (issue 49): ``rankduel serve`` and
``rankduel worker`` refuse an evicting ``maxmemory-policy`` and name it,
``RANKDUEL_ALLOW_EVICTION=1`` lets them start; ``/readyz`` answers 503 and
``rankduel_redis_evicted_keys`` counts once Redis has evicted keys; ``rankduel doctor`` on
the quick start's Redis (``--save ''``) names the missing persistence as a risk and
prints no secret."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import requests

from demo.stack import Stack, free_port, redis_executable, wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.starts_process  # a Redis of each test's own


@pytest.fixture
def bare_redis(tmp_path):
    """A Redis like the quick start's: no AOF, ``--save ''``."""
    with Stack(tmp_path) as stack:
        port = free_port()
        child = stack.spawn("bare-redis", [
            redis_executable(), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--daemonize", "no", "--dir", str(tmp_path)],
            env=dict(os.environ))
        client = redis.Redis(port=port, socket_connect_timeout=0.5)
        wait_until(client.ping, 30, "redis", child.proc)
        yield f"redis://127.0.0.1:{port}/0", client
        client.close()


def _cli(args: list[str], url: str, **env: str) -> subprocess.CompletedProcess:
    environ = dict(os.environ, REDIS_URL=url, RANKDUEL_ADMIN_TOKEN="admin-secret-1",
                   RANKDUEL_SECRET_KEY="hmac-secret-1", RANKDUEL_FRONTEND_TOKENS="front-1",
                   PYTHONPATH=str(ROOT), **env)
    environ.pop("RANKDUEL_CONFIG", None)
    return subprocess.run([sys.executable, "-m", "cli.main", *args], env=environ,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_serve_and_worker_refuse_an_evicting_redis(bare_redis):
    url, client = bare_redis
    client.config_set("maxmemory-policy", "allkeys-lru")
    for command in (["serve", "--bind", f"127.0.0.1:{free_port()}"], ["worker"]):
        out = _cli(command, url)
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "allkeys-lru" in lines[0], out.stderr
        assert "maxmemory-policy noeviction" in lines[0]
        assert "RANKDUEL_ALLOW_EVICTION=1" in lines[0]


def test_allow_eviction_starts_with_a_warning(bare_redis):
    from cli.startup import check_redis
    from service.config import Config

    url, client = bare_redis
    client.config_set("maxmemory-policy", "volatile-lru")
    config = Config(redis_url=url, admin_token="a", secret_key="b", allow_eviction=True)
    check_redis(config)  # no refusal
    with pytest.raises(ValueError, match="volatile-lru"):
        check_redis(config.replace(allow_eviction=False))


def test_readyz_and_the_metric_report_evicted_keys(bare_redis):
    from demo.wsgi_server import ThreadedServer
    from service.app import create_app
    from service.config import Config

    url, client = bare_redis
    server = ThreadedServer(create_app(Config(redis_url=url, admin_token="a" * 20,
                                              secret_key="s" * 20)))
    try:
        assert requests.get(f"{server.url}/readyz", timeout=10).status_code == 200
        client.config_set("maxmemory-policy", "allkeys-random")
        client.config_set("maxmemory", str(client.info("memory")["used_memory"] + 200_000))
        pipe = client.pipeline(transaction=False)
        for i in range(2000):
            pipe.set(f"filler:{i}", b"x" * 1000)
        pipe.execute()
        assert client.info("stats")["evicted_keys"] > 0
        r = requests.get(f"{server.url}/readyz", timeout=10)
        assert r.status_code == 503 and "evicted" in r.json()["error"], r.text
        metrics = requests.get(f"{server.url}/metrics", timeout=10,
                               headers={"Authorization": "Bearer " + "a" * 20}).text
        line = next(x for x in metrics.splitlines()
                    if x.startswith("rankduel_redis_evicted_keys "))
        assert float(line.split()[1]) > 0
    finally:
        server.close()


def test_doctor_names_save_off_as_a_risk_and_no_secret(bare_redis):
    url, _ = bare_redis
    out = _cli(["doctor"], url, RANKDUEL_RANKER_ALLOW="127.0.0.1")
    assert out.returncode == 1, out.stdout + out.stderr  # a risk found
    text = out.stdout
    persistence = next(x for x in text.splitlines() if x.strip().startswith("persistence"))
    assert "RISK" in persistence and "save ''" in persistence, text
    for check in ("redis", "eviction", "memory", "clock", "allow-list", "tokens"):
        assert any(x.strip().startswith(check) for x in text.splitlines()), (check, text)
    assert "noeviction" in text and "127.0.0.1" in text and "front-end keys: 1" in text
    for secret in ("admin-secret-1", "hmac-secret-1", "front-1"):
        assert secret not in text + out.stderr
    assert len(text.splitlines()) <= 24  # one screen
