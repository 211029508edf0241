"""MergeGuard (alias ``recommended``) and the non-Condorcet guard of
:mod:`bandits.condorcet_check`.

Statistical checks use fixed seeds, small K and short horizons; the tolerances are
stated at each test. The full-size rates belong in BENCHMARKS.md.
"""

from __future__ import annotations

import numpy as np
import pytest

from bandits import bandit_from_state, get_algorithm, make_bandit
from bandits.condorcet_check import check
from bandits.matrices import bradley_terry, non_condorcet
from bandits.merge_guard import MergeGuard
from bandits.simulator import simulate_run


def test_registered_under_its_name_and_recommended():
    assert get_algorithm("recommended") is MergeGuard
    assert get_algorithm("mergeguard") is MergeGuard
    assert make_bandit("recommended", 20).params()["on_non_condorcet"] == "flag"
    with pytest.raises(ValueError, match="on_non_condorcet"):
        make_bandit("recommended", 20, on_non_condorcet="panic")


def test_check_never_flags_a_condorcet_matrix_with_exact_counts():
    # counts exactly proportional to P: a Condorcet winner is never beaten
    P = bradley_terry(12, seed=3)
    W = P * 5000.0
    np.fill_diagonal(W, 0.0)
    assert check(W, list(range(12)))["flagged"] is False


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flag_raised_on_non_condorcet(seed):
    # 8 arms, upsets of 0.3: the guard must flag within 60,000 steps in each of these
    # three seeded runs (at full size BENCHMARKS.md gives the rate)
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=seed)
    r = simulate_run(P, "recommended", 60_000, seed=seed, params={"check_every": 200})
    assert r.flagged_non_condorcet and r.flagged_at is not None


def test_no_flag_on_condorcet_runs():
    # δ = 0.01 per run; 6 seeded runs must all stay unflagged (a false flag here would
    # be a 1-in-100 event per run, so a failure points at a broken bound)
    P = bradley_terry(10, seed=5)
    flags = [
        simulate_run(P, "recommended", 40_000, seed=s, params={"check_every": 200})
        .flagged_non_condorcet
        for s in range(6)
    ]
    assert not any(flags)


def test_switch_plays_every_surviving_arm_and_round_trips():
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    env = np.random.default_rng(0)
    b = MergeGuard(8, seed=1, check_every=200, on_non_condorcet="switch")
    for _ in range(60_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
    s = b.structure()
    assert s["non_condorcet"]["flagged"] and s["mode"] == "copeland"
    c = bandit_from_state(b.state_dict())
    assert c.structure() == b.structure()
    rng1, rng2 = np.random.default_rng(9), np.random.default_rng(9)
    assert b.select_at(b.t + 1, rng1) == c.select_at(c.t + 1, rng2)
    before = b.state_dict()["W"]
    b.select()
    assert b.state_dict()["W"] == before  # select() changes nothing stored


def test_defaults_are_mergedts_tuned_values_plus_the_guard():
    p = MergeGuard(40, seed=1).params()
    assert p == {"preset": "tuned", "alpha": 0.8**6, "batch_size": 16, "c": 4e6,
                 "delta": 0.01, "on_non_condorcet": "flag", "check_every": 1000,
                 "verify_every": 32, "verify_min": 32}


def test_credit_path_emits_the_audit_event_once_and_describe_names_rankers():
    from service.credit import _update
    from service.experiments import _non_condorcet

    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    env = np.random.default_rng(0)
    b = MergeGuard(8, seed=1, check_every=200)
    names = {a: f"r{a}" for a in range(8)}
    events = []
    for _ in range(60_000):
        i, j = b.select()
        events += [e for e in _update(b, [(i, j, float(env.random() < P[i, j]))], names)
                   if e["action"] == "non_condorcet_flagged"]
    assert len(events) == 1 and events[0]["step"] == b.flagged_at
    assert events[0]["cycle"] or events[0]["beat_champion"]
    state = _non_condorcet(b.structure(), names)
    assert state["flagged"] and all(n.startswith("r") for n in state["cycle"] +
                                    state["beat_champion"])


def test_simulate_cli_reports_the_flag_per_run(tmp_path, capsys):
    import json

    from cli.main import main as cli

    P_path = tmp_path / "NC.txt"
    assert cli(["matrix", "generate", "--kind", "non-condorcet", "--k", "8", "--upset", "0.3",
                "--gap", "0.05", "--seed", "0", "--out", str(P_path)]) == 0
    out = tmp_path / "run"
    assert cli(["simulate", "--matrix", str(P_path), "--algorithm", "recommended",
                "--param", "check_every=200", "--steps", "60000", "--runs", "2",
                "--seed", "0", "--out", str(out)]) == 0
    runs = json.loads((out / "summary.json").read_text())["per_run"]
    assert all({"flagged_non_condorcet", "flagged_at"} <= set(r) for r in runs)
    flagged = [r for r in runs if r["flagged_non_condorcet"]]
    assert flagged and all(isinstance(r["flagged_at"], int) for r in flagged)
    assert "flagged_non_condorcet in" in capsys.readouterr().out
