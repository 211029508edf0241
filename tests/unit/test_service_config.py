"""Configuration: file < environment < overrides, validation, secrets never shown;
commands refuse to start without secrets; the service modules' doctests."""

from __future__ import annotations

import doctest
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def test_precedence_file_env_overrides(tmp_path):
    toml = tmp_path / "rd.toml"
    toml.write_text('inactivity_s = 600\nmax_k = 50\nbind = "0.0.0.0:9000"\n')
    env = {"RANKDUEL_CONFIG": str(toml), "RANKDUEL_MAX_K": "40"}
    cfg = load_config(env=env, overrides={"bind": "127.0.0.1:1234"})
    assert cfg.inactivity_s == 600.0  # from the file
    assert cfg.max_k == 40  # the environment beats the file
    assert cfg.bind == "127.0.0.1:1234" and cfg.port == 1234  # overrides beat both
    js = tmp_path / "rd.json"
    js.write_text('{"token_ttl_s": 99}')
    assert load_config(env={"RANKDUEL_CONFIG": str(js)}).token_ttl_s == 99


@pytest.mark.parametrize("env,message", [
    ({"RANKDUEL_MAX_K": "many"}, "max_k: expected int"),
    ({"RANKDUEL_INACTIVITY_S": "-1"}, "inactivity_s must be positive"),
    ({"RANKDUEL_BIND": "nowhere"}, "host:port"),
    ({"RANKDUEL_DEFAULT_K": "500"}, "default_k"),
    ({"RANKDUEL_CONFIG": "/nonexistent/rd.toml"}, "cannot read config file"),
    ({"RANKDUEL_IMPRESSION_TTL_S": "60", "RANKDUEL_INACTIVITY_S": "120"}, "must exceed"),
])
def test_invalid_settings_are_refused(env, message):
    with pytest.raises(ValueError, match=message):
        load_config(env=env)


def test_unknown_file_keys_are_refused(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text("inactivity = 5\n")
    with pytest.raises(ValueError, match="unknown config settings: inactivity"):
        load_config(env={"RANKDUEL_CONFIG": str(f)})


def test_secrets_are_masked():
    cfg = load_config(env={"RANKDUEL_ADMIN_TOKEN": "adm1n-s3cret",
                           "RANKDUEL_SECRET_KEY": "hmac-s3cret",
                           "REDIS_URL": "redis://user:pa55word@db:6379/0"})
    text = repr(cfg) + str(cfg.public())
    for secret in ("adm1n-s3cret", "hmac-s3cret", "pa55word"):
        assert secret not in text
    assert "redis://user:***@db:6379/0" in text


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


@pytest.mark.parametrize("module", ["service.config", "service.tokens", "service.errors",
                                    "service.validation", "service.credit",
                                    "service.controller", "service.ranker_template",
                                    "service.search_params", "service.json_response",
                                    "service.records"])
def test_service_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


def test_deploy_gunicorn_config_loads_the_app(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RANKDUEL_")}
    env.update(RANKDUEL_ADMIN_TOKEN="a", RANKDUEL_SECRET_KEY="b",
               PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prom" / "fresh"))
    proc = subprocess.run([sys.executable, "-m", "gunicorn", "--check-config", "-c",
                           "deploy/gunicorn.conf.py", "service.app:create_app()"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "prom" / "fresh").is_dir()
