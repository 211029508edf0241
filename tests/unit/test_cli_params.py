"""The one ``--param`` parser (:mod:`cli.params`) as every command uses it: ``simulate``,
``judge simulate`` and ``demo`` read the same items the same way, each value of the type
the algorithm declares, and refuse a bad one naming it (exit 2 on the command line)."""

from __future__ import annotations

import doctest

import pytest

import cli.params
from bandits import get_algorithm
from cli.commands import demo, judge, simulate
from judging import get_judge


def policy(name):
    return get_algorithm(name).PARAMS


def test_doctests_of_the_parser():
    assert doctest.testmod(cli.params).failed == 0


def test_values_take_the_declared_type_and_scopes_win():
    out = cli.params.parse_params(["alpha=1", "mergedts.alpha=0.5", "batch_size=8"],
                                  ["mergedts", "mergerucb"], policy)
    assert out == {"mergedts": {"alpha": 0.5, "batch_size": 8},
                   "mergerucb": {"alpha": 1, "batch_size": 8}}
    assert isinstance(out["mergedts"]["batch_size"], int)
    out = cli.params.parse_params(["on_non_condorcet=switch", "check_every=200"],
                                  ["mergeguard"], policy)
    assert out == {"mergeguard": {"on_non_condorcet": "switch", "check_every": 200}}


@pytest.mark.parametrize(("items", "algorithms", "message"), [
    (["alpha"], ["rucb"], "--param 'alpha': expected key=value"),
    (["=1"], ["rucb"], "expected key=value"),
    (["dts.alpha=1"], ["rucb"], "'dts' is not one of --algorithm rucb"),
    (["beta=1"], ["rucb"], "--param beta: rucb does not take parameter 'beta'; valid: alpha"),
    (["alpha=1"], ["rucb", "uniform"], "uniform does not take parameter 'alpha'; valid: none "
                                       "(scope a setting"),
    (["alpha=abc"], ["rucb"], "--param alpha: expected a number, got 'abc'"),
    (["batch_size=2.5"], ["mergedts"], "--param batch_size: expected an integer"),
])
def test_bad_items_are_refused_naming_them(items, algorithms, message):
    with pytest.raises(ValueError) as err:
        cli.params.parse_params(items, algorithms, policy)
    assert message in str(err.value)


def test_every_command_uses_the_same_parser():
    items = ["alpha=0.5", "mergedts.batch_size=8"]
    assert simulate.parse_params(items, ["mergedts"]) == \
        cli.params.parse_params(items, ["mergedts"], policy)
    assert judge.parse_params(["gauntlet.n0=4"], ["gauntlet"]) == \
        cli.params.parse_params(["gauntlet.n0=4"], ["gauntlet"],
                                lambda a: get_judge(a).PARAMS) == {"gauntlet": {"n0": 4}}
    # the demo reads the policy's declaration too (it used to take any JSON value)
    assert demo.parse_params(items, "mergedts") == {"alpha": 0.5, "batch_size": 8}
    with pytest.raises(ValueError, match="mergedts does not take parameter 'alfa'"):
        demo.parse_params(["alfa=0.5"], "mergedts")
    # bounds and the algorithm's name are DemoOptions.check's (it names --algorithm)
    from demo.run import DemoOptions

    with pytest.raises(ValueError, match="'alpha' of mergedts must be greater than 0"):
        DemoOptions(algorithm="mergedts",
                    params=demo.parse_params(["alpha=-1"], "mergedts")).check()
    with pytest.raises(ValueError, match="--algorithm: unknown algorithm 'nosuch'"):
        DemoOptions(algorithm="nosuch", params=demo.parse_params([], "nosuch")).check()


def test_the_demo_command_exits_2_on_a_bad_param(capsys):
    from cli.main import main
    assert main(["demo", "--algorithm", "mergedts", "--param", "alpha=abc"]) == 2
    err = capsys.readouterr().err
    assert "--param alpha: expected a number, got 'abc'" in err and "Traceback" not in err
