"""Configuration: file < environment < overrides, validation, secrets never shown;
the service modules' doctests. That the commands refuse to start without secrets (a
process each) is checked in tests/service/test_commands.py."""

from __future__ import annotations

import doctest
import importlib
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


@pytest.mark.parametrize("module", ["service.config", "service.tokens", "service.errors",
                                    "service.api.validation", "service.credit.step",
                                    "service.controller", "service.rankers.template",
                                    "service.api.search_query", "service.api.json_response",
                                    "service.store.records"])
def test_service_doctests(module):
    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0


