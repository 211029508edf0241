"""MergeGuard, MergeMED and the non-Condorcet guard of :mod:`bandits.condorcet_check`
(the guard of ``recommended``, the Sparring Certifier, too).

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
from bandits.merge_med import MergeMED, kl_half
from bandits.simulator import simulate_run


def test_registered_under_its_name():
    assert get_algorithm("mergemed") is MergeMED
    assert get_algorithm("mergeguard") is MergeGuard
    assert make_bandit("mergemed", 20).params()["on_non_condorcet"] == "flag"
    with pytest.raises(ValueError, match="on_non_condorcet"):
        make_bandit("mergemed", 20, on_non_condorcet="panic")


def test_check_never_flags_a_condorcet_matrix_with_exact_counts():
    # counts exactly proportional to P: a Condorcet winner is never beaten
    P = bradley_terry(12, seed=3)
    W = P * 5000.0
    np.fill_diagonal(W, 0.0)
    assert check(W, list(range(12)))["flagged"] is False


def test_an_edge_of_a_fair_pair_is_drawn_at_most_at_its_level():
    # p = 1/2 exactly, the worst case of the null: 2,000 seeded paths of 5,000
    # comparisons, each edge at level delta/(K-1) = 0.05. The mixture boundary is crossed
    # on 1.75 % of the paths (binomial s.e. 0.3 %); the level 5 % is ten s.e. above, and
    # a fixed-n Hoeffding radius at the same level is crossed on 11.7 % of them
    from bandits.condorcet_check import edge_radius

    rng = np.random.default_rng(7)
    n = np.arange(1, 5001, dtype=float)
    p_hat = np.cumsum(rng.random((2000, 5000)) < 0.5, axis=1) / n
    crossed = (p_hat - edge_radius(n, 11, 0.5) > 0.5).any(axis=1).mean()
    assert crossed <= 0.05
    fixed_n = np.sqrt(np.log(1 / 0.05) / (2 * n))
    assert (p_hat - fixed_n > 0.5).any(axis=1).mean() > 0.05  # the test can tell


@pytest.mark.parametrize("name", ["mergemed", "recommended"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_flag_raised_on_non_condorcet(seed, name):
    # 8 arms, upsets of 0.3: the guard must flag within 60,000 steps in each of these
    # three seeded runs (at full size BENCHMARKS.md gives the rate)
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=seed)
    r = simulate_run(P, name, 60_000, seed=seed, params={"check_every": 200})
    assert r.flagged_non_condorcet and r.flagged_at is not None


@pytest.mark.parametrize("name", ["mergemed", "recommended"])
def test_no_flag_on_condorcet_runs(name):
    # δ = 0.01 per run; 6 seeded runs must all stay unflagged (a false flag here would
    # be a 1-in-100 event per run, so a failure points at a broken bound)
    P = bradley_terry(10, seed=5)
    flags = [
        simulate_run(P, name, 40_000, seed=s, params={"check_every": 200})
        .flagged_non_condorcet
        for s in range(6)
    ]
    assert not any(flags)


@pytest.mark.parametrize("cls", [MergeGuard, MergeMED])
def test_switch_plays_every_surviving_arm_and_round_trips(cls):
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    env = np.random.default_rng(0)
    b = cls(8, seed=1, check_every=200, on_non_condorcet="switch")
    for _ in range(60_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        # on this instance the guard flags at comparison 600; 2,000 comparisons in the
        # switched mode (ten check periods) are what the checks below need of the run
        if b.guard.flagged and b.n_updates >= b.guard.flagged_at + 2_000:
            break
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
                 "verify_scale": 1.0}


def test_mergemed_defaults_are_its_tuned_values():
    p = make_bandit("mergemed", 40, seed=1).params()
    assert p == {"preset": "tuned", "alpha": 0.236, "batch_size": 24, "c": 4e6,
                 "delta": 0.01, "on_non_condorcet": "flag", "check_every": 1000,
                 "verify_scale": 0.5}
    assert bandit_from_state(make_bandit("mergemed", 40, seed=1).state_dict()).params() == p


def test_divergence_test_eliminates_whenever_the_hoeffding_test_does():
    # n kl(p, ½) >= 2 n (½ - p)² (Pinsker): every pair MergeDTS's bound eliminates, the
    # divergence test eliminates too, and strictly sooner when p is far from ½
    b = MergeMED(4, seed=0)
    bonus = b.alpha * np.log(b.t + 1 + b.c)
    for n in (10.0, 40.0, 200.0, 3000.0):
        for w in np.arange(0.0, n / 2, n / 40):
            hoeffding = w / n + np.sqrt(bonus / n) < 0.5
            assert not hoeffding or b._beaten(w, n)
    assert b._beaten(0.0, 11.0) and not (np.sqrt(bonus / 11.0) < 0.5)  # 11 straight losses
    assert kl_half(0.5) == 0.0 and not b._beaten(10.0, 20.0)


@pytest.mark.parametrize("cls", [MergeGuard, MergeMED])
def test_credit_path_emits_the_audit_event_once_and_describe_names_rankers(cls):
    from service.credit.step import update_policy as _update
    from service.experiments.operations import _non_condorcet

    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    env = np.random.default_rng(0)
    b = cls(8, seed=1, check_every=200)
    names = {a: f"r{a}" for a in range(8)}
    events = []
    for _ in range(60_000):
        i, j = b.select()
        events += [e for e in _update(b, [(i, j, float(env.random() < P[i, j]))], names)
                   if e["action"] == "non_condorcet_flagged"]
        # the guard flags at comparison 600 here; "once" is checked over the next 10,000
        # comparisons (50 check periods), where a repeated event would show
        if b.guard.flagged and b.n_updates >= b.guard.flagged_at + 10_000:
            break
    assert len(events) == 1 and events[0]["step"] == b.guard.flagged_at
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


@pytest.mark.parametrize("name", ["mergeguard", "recommended"])
def test_quiet_skips_equal_the_full_loop(name):
    # the simulator skips the steps quiet_steps() vouches for; the run must be the one
    # the full loop gives (same regret at every checkpoint, same flag, same winner)
    P = bradley_terry(12, gap=0.05, seed=4)
    fast = simulate_run(P, name, 60_000, seed=3, params={"check_every": 200})
    slow = simulate_run(P, name, 60_000, seed=3, params={"check_every": 200},
                        fast_forward=False)
    np.testing.assert_allclose(fast.regret, slow.regret, rtol=1e-12, atol=1e-9)
    assert (fast.identified, fast.flagged_at) == (slow.identified, slow.flagged_at)
    assert fast.looped_steps < slow.looped_steps  # something was skipped


def _converged_guard(P: np.ndarray, w_up: float, n_up: float) -> MergeGuard:
    """A MergeGuard converged on arm 0 with every other arm eliminated by arm 1, and
    arm 7 compared ``n_up`` times with 0, winning ``w_up`` of them (the rest of W is
    P scaled to 400 comparisons per pair)."""
    K = P.shape[0]
    st = MergeGuard(K, seed=1, check_every=200).state_dict()
    W = P * 400.0
    np.fill_diagonal(W, 0.0)
    W[7, 0], W[0, 7] = w_up, n_up - w_up
    st["W"] = W.tolist()
    st["status"] = [0] + [1] * (K - 1)
    st["eliminated"] = {str(a): {"step": 1, "by": 1 if a != 1 else 0} for a in range(1, K)}
    st["batches"], st["stage"], st["stage_field"] = [[0]], 4, 1
    return MergeGuard.from_state(st)


def test_verification_keeps_comparing_an_eliminated_upsetter():
    # the old rule stopped after 32 comparisons that went the champion's way; now arm 7,
    # which beats the champion (p = 0.8), stays due (u_70 >= 1/2 by MergeDTS's bound
    # after 10 wins in 40) and is compared until the data show the upset
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    b = _converged_guard(P, w_up=10.0, n_up=40.0)
    assert not b.guard.flagged and b.quiet_steps() == 0
    env = np.random.default_rng(0)
    pairs = set()
    for _ in range(5_000):
        i, j = b.select()
        pairs.add((i, j))
        b.update(i, j, float(env.random() < P[i, j]))
        if b.guard.flagged:
            break
    assert b.guard.flagged and b.structure()["non_condorcet"]["evidence"]["beat_champion"]
    # 7 beat 0 by the elimination test first and was readmitted in its place; 7 itself
    # loses to arms 1..5 with confidence (the counts say so already): flagged at once
    assert [x[:2] for x in b.structure()["readmitted"]] == [[7, 0]]
    # while 0 was champion, arms 1..6 (which lose to it by far) were never due
    assert {p for p in pairs if 0 in p} <= {(0, 0), (0, 7)}


def test_verification_stops_on_a_condorcet_instance():
    # the same state on a matrix where 0 beats 7 (p = 0.8): after a few dozen
    # comparisons arm 7 is refuted; the bound α log(t + C) grows so slowly (C = 4·10⁶)
    # that it is due again only after many thousand steps, which the simulator skips
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    P[7, 0], P[0, 7] = 0.2, 0.8
    b = _converged_guard(P, w_up=10.0, n_up=40.0)
    env = np.random.default_rng(0)
    n7 = 0
    for _ in range(3_000):
        i, j = b.select()
        n7 += (i, j) == (0, 7)
        b.update(i, j, float(env.random() < P[i, j]))
    assert not b.guard.flagged and 0 < n7 < 200
    assert b.quiet_steps() > 10_000
    c = bandit_from_state(b.state_dict())
    assert c.quiet_steps() == b.quiet_steps()


@pytest.mark.parametrize("name", ["mergeguard", "mergemed"])
def test_live_loop_without_delay_is_the_plain_loop(name):
    # the live-like loop with D = 0, B = 1 and no reload: the plain loop's regret step
    # for step, with the quiet skips of the plain loop and none in the live one
    P = bradley_terry(7, gap=0.1, spread=3.0, seed=2)
    plain = simulate_run(P, name, 20_000, seed=5, params={"check_every": 200})
    live = simulate_run(P, name, 20_000, seed=5, params={"check_every": 200},
                        record_shown=True)
    np.testing.assert_allclose(plain.regret, live.regret, rtol=1e-12, atol=1e-9)
    assert (plain.identified, plain.flagged_at) == (live.identified, live.flagged_at)


@pytest.mark.parametrize("name", ["mergeguard", "mergemed"])
def test_add_retire_round_trip_and_select_changes_nothing_stored(name):
    import json

    P = bradley_terry(10, gap=0.05, spread=3.0, seed=8)
    env = np.random.default_rng(1)
    b = make_bandit(name, 8, seed=2, check_every=200)
    for step in range(40_000):
        if step == 5_000:
            b.retire_arm(3)
        if step == 20_000:  # after convergence: the field comes alive again
            b.add_arm()
            b.add_arm()
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        if step % 997 == 0:
            st = json.dumps(b.state_dict())
            c = bandit_from_state(json.loads(st))
            assert c.structure() == b.structure()
            t = b.t
            for ahead in (1, 2, 50):
                rng1, rng2 = np.random.default_rng([4, step]), np.random.default_rng([4, step])
                assert b.select_at(t + ahead, rng1) == c.select_at(t + ahead, rng2)
            b.t = t  # select_at sets t (the live step); nothing else is stored
            assert json.dumps(b.state_dict()) == st
    assert b.status[3] == 2 and b.best_arm() == int(np.argmax((P > 0.5).sum(axis=1)))
    assert not b.structure()["non_condorcet"]["flagged"]


@pytest.mark.parametrize("cls", [MergeGuard, MergeMED])
def test_an_eliminated_condorcet_winner_is_readmitted(cls):
    # arm 7 is the Condorcet winner (p = 0.6 against every arm) but was eliminated after
    # a bad start (16 wins in 40 against the champion 0): verification keeps comparing
    # it with 0 until it beats 0 by the elimination test itself; then it comes back and
    # 0 is eliminated, and nothing is flagged (no confident edge against arm 7)
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    P[7, :], P[:, 7] = 0.6, 0.4
    P[7, 7] = 0.5
    st = _converged_guard(P, w_up=16.0, n_up=40.0).state_dict()
    st["algorithm"], st["params"] = cls.name, {**st["params"], **cls(8).params()}
    b = cls.from_state(st)
    env = np.random.default_rng(3)
    for _ in range(20_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
    assert b.best_arm() == 7 and b.status[0] == 1 and b.eliminated[0]["by"] == 7
    assert [x[:2] for x in b.structure()["readmitted"]] == [[7, 0]]
    assert not b.guard.flagged
    c = bandit_from_state(b.state_dict())
    assert c.structure() == b.structure()


def test_a_cycle_of_readmissions_stops_and_restores_the_merge_champion():
    # NC32-like: arm 7 upsets the champion 0 and is readmitted, the arms that beat 7 are
    # readmitted in turn, and the first readmission that would bring back an earlier
    # champion stops the walk (cycled) and puts 0 back; verification then compares 0
    # with 7 until the guard flags, with 0 in charge
    P = non_condorcet(8, gap=0.05, upset=0.3, seed=0)
    st = _converged_guard(P, w_up=16.0, n_up=40.0).state_dict()
    W = np.asarray(st["W"])
    W[7, 1:7] = W[1:7, 7] = 0.0  # 7 never met arms 1..6: it must be compared to be refuted
    st["W"] = W.tolist()
    st["params"]["check_every"] = 10**6  # no guard check in this test: readmission alone
    b = MergeGuard.from_state(st)
    env = np.random.default_rng(5)
    for _ in range(20_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        if b.guard.verification.cycled:
            break
    v = b.guard.verification
    assert v.cycled and b.best_arm() == 0 and v.readmitted[0][:2] == [7, 0]
    assert bandit_from_state(b.state_dict()).guard.verification.cycled
    pairs = {b.select() for _ in range(50)}
    assert pairs <= {(0, 0), (0, 7)}  # 0 in charge, 7 (which beats it) still due


def test_a_state_of_the_earlier_version_loads():
    # experiments stored before this change carry verify_every/verify_min and targets
    b = MergeGuard(6, seed=1)
    st = b.state_dict()
    st["params"] = {**st["params"], "verify_every": 32, "verify_min": 32}
    st["params"].pop("verify_scale")
    st["guard"]["targets"] = [1, 2]
    c = bandit_from_state(st)
    assert isinstance(c, MergeGuard) and c.params()["verify_scale"] == 1.0
    assert c.select_at(1, np.random.default_rng(0)) == b.select_at(1, np.random.default_rng(0))
