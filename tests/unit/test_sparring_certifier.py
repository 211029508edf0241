"""The Sparring Certifier (``recommended``): registry, defaults, certification, readmission
and the state round trip. The guard's flag rates are in test_merge_guard.py; full-size
regret in bench/results/policy/README.md."""

from __future__ import annotations

import numpy as np
import pytest

from bandits import bandit_from_state, get_algorithm, make_bandit
from bandits.base import ACTIVE, ELIMINATED
from bandits.matrices import bradley_terry, condorcet_winner
from bandits.merge_med import MED_ALPHA
from bandits.simulator import simulate_run
from bandits.sparring_certifier import SparringCertifier


def test_registered_under_its_name_and_recommended():
    assert get_algorithm("recommended") is SparringCertifier
    assert get_algorithm("sparring_certifier") is SparringCertifier
    assert SparringCertifier.condorcet_guard and SparringCertifier.elimination_test
    with pytest.raises(ValueError, match="batch_size"):
        make_bandit("recommended", 20, batch_size=4)


def test_defaults_and_round_trip():
    b = make_bandit("recommended", 30, seed=1)
    assert b.params() == {"alpha": MED_ALPHA, "c": 4e6, "delta": 0.01, "check_every": 1000,
                          "verify_scale": 0.5, "error_rate": 0.05}
    assert bandit_from_state(b.state_dict()).params() == b.params()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_certifies_the_condorcet_winner(seed):
    # 12 arms, gaps >= 0.05: every run must end with the winner alone, certified (all
    # others eliminated), and flat: less than 1 % more regret from 100,000 to 200,000
    # steps, most of them skipped as the champion against itself
    P = bradley_terry(12, gap=0.05, seed=seed)
    r = simulate_run(P, "recommended", 200_000, seed=seed)
    assert r.correct and not r.flagged_non_condorcet
    assert r.regret[-1] < 1.01 * r.regret[np.searchsorted(r.checkpoints, 100_000)]
    assert r.looped_steps < 100_000


def test_state_round_trip_mid_run_continues_identically():
    P = bradley_terry(10, gap=0.03, seed=7)
    env1, env2 = np.random.default_rng(5), np.random.default_rng(5)
    a = SparringCertifier(10, seed=3)
    for _ in range(3000):
        i, j = a.select()
        a.update(i, j, float(env1.random() < P[i, j]))
    b = bandit_from_state(a.state_dict())
    env2.bit_generator.state = env1.bit_generator.state
    for _ in range(3000):
        p, q = a.select(), b.select()
        assert p == q
        u = env1.random()
        assert u == env2.random()
        a.update(*p, float(u < P[p]))
        b.update(*q, float(u < P[q]))
    assert a.state_dict() == b.state_dict()


def test_an_eliminated_winner_is_readmitted_after_convergence():
    # a state converged on arm 1 with the Condorcet winner 0 eliminated by a fluke: the
    # verification compares 0 with 1 until 0 beats it by the elimination test, then 0
    # is the champion again and 1 is eliminated by it
    P = bradley_terry(6, gap=0.05, seed=2)
    w = condorcet_winner(P)
    other = (w + 1) % 6
    b = SparringCertifier(6, seed=1, check_every=200)
    st = b.state_dict()
    W = P * 300.0
    np.fill_diagonal(W, 0.0)
    W[w, other], W[other, w] = 140.0, 160.0  # the fluke (not refuted at half the test)
    st["W"] = W.tolist()
    st["status"] = [ELIMINATED] * 6
    st["status"][other] = ACTIVE
    st["eliminated"] = {str(a): {"step": 1, "by": other} for a in range(6) if a != other}
    b = SparringCertifier.from_state(st)
    env = np.random.default_rng(0)
    for _ in range(200_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        if b.status[w] == ACTIVE:
            break
    assert b.active_arms() == [w] and b.eliminated[other]["by"] == w
    assert [x[:2] for x in b.structure()["readmitted"]] == [[w, other]]


def test_select_is_spread_over_challengers_live():
    # copies of one stored state select (for different t) the leader against several
    # different challengers, not all against one
    P = bradley_terry(20, gap=0.01, seed=1)
    b = SparringCertifier(20, seed=2)
    env = np.random.default_rng(1)
    for _ in range(150):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
    picks = {b.select_at(b.t + k, np.random.default_rng([3, k])) for k in range(1, 60)}
    assert len(b.active_arms()) > 5 and len({p[1] for p in picks}) >= 5


def test_a_winner_dropped_before_convergence_comes_back():
    # issue 32: the winner 0 was soft-eliminated by a fluke and the two survivors (1, 2)
    # are near-tied, so the run never converges; the winner still faces the leader in
    # the certification duels, beats it by the elimination test and is readmitted, and
    # the run ends certified on it. At δ = 10⁻⁶ the verdicts' edges need more evidence
    # than the elimination test, so the readmission comes first (at the default δ the
    # winner shows the survivors worse first: the next test)
    P = np.array([[0.5, 0.6, 0.6, 0.7], [0.4, 0.5, 0.501, 0.6],
                  [0.4, 0.499, 0.5, 0.6], [0.3, 0.4, 0.4, 0.5]])
    b = SparringCertifier(4, seed=1, check_every=200, error_rate=1e-6)
    st = b.state_dict()
    W = P * 400.0
    np.fill_diagonal(W, 0.0)
    W[0, 1], W[1, 0] = 185.0, 215.0  # the fluke (not shown worse at 1 − δ)
    st["W"] = W.tolist()
    st["status"] = [ELIMINATED, ACTIVE, ACTIVE, ELIMINATED]
    st["eliminated"] = {"0": {"step": 1, "by": 1}, "3": {"step": 1, "by": 1}}
    b = SparringCertifier.from_state(st)
    assert b.verdicts()["no_longer_shown"] == [0, 3] and b.verdicts()["shown_worse"] == {}
    env = np.random.default_rng(0)
    for _ in range(100_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        if b.certificate is not None:
            break
    assert b.revived and b.revived[0][0] == 0
    v = b.verdicts()
    assert v["certified"] == 0 and set(v["shown_worse"]) == {1, 2, 3}
    assert v["no_longer_shown"] == [] and b.best_arm() == 0


def test_a_dropped_winner_shows_the_survivors_worse_and_is_certified():
    # the same fluke at the default δ: the winner, no longer shown, still meets the
    # leader in the certification duels; the edges it draws (checked after every
    # comparison) show the survivors worse, it is back in play and certified at the
    # comparison of the last edge, long before a check period of 1,000
    P = np.array([[0.5, 0.6, 0.6, 0.7], [0.4, 0.5, 0.501, 0.6],
                  [0.4, 0.499, 0.5, 0.6], [0.3, 0.4, 0.4, 0.5]])
    st = SparringCertifier(4, seed=1).state_dict()
    W = P * 400.0
    np.fill_diagonal(W, 0.0)
    W[0, 1], W[1, 0] = 185.0, 215.0
    st["W"] = W.tolist()
    st["status"] = [ELIMINATED, ACTIVE, ACTIVE, ELIMINATED]
    st["eliminated"] = {"0": {"step": 1, "by": 1}, "3": {"step": 1, "by": 1}}
    b = SparringCertifier.from_state(st)
    env = np.random.default_rng(0)
    for _ in range(20_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
        if b.certificate is not None:
            break
    v = b.verdicts()
    assert v["certified"] == 0 and set(v["shown_worse"]) == {1, 2, 3}
    assert b.status[0] == ACTIVE and b.best_arm() == 0
    # certified at the comparison that drew the last edge, not at a periodic check
    last = max(at for _, at in b.worse.values())
    assert v["certified_at"] == last and last % 1000 != 0


def test_verdicts_are_kept_in_the_state_and_reported():
    from bandits.decision import as_dict, decide

    P = bradley_terry(6, gap=0.1, seed=4)
    r = simulate_run(P, "recommended", 30_000, seed=2, shuffle=False)
    assert r.correct
    b = SparringCertifier(6, seed=5, error_rate=0.01)
    env = np.random.default_rng(3)
    for _ in range(30_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < P[i, j]))
    v = b.verdicts()
    assert v["certified"] == condorcet_winner(P) and v["error_rate"] == 0.01
    assert bandit_from_state(b.state_dict()).verdicts() == v
    d = decide(b)
    assert d.certified and d.confidence == pytest.approx(0.99) and d.error_rate == 0.01
    assert "1%" in d.statement and set(d.shown_worse) == set(range(6)) - {v["certified"]}
    assert as_dict(d, {})["error_rate"] == 0.01


def test_two_rankers_are_certified_at_the_comparison_that_crosses_the_boundary():
    # the verdict is checked after every comparison: the certificate's step is the first
    # at which the loser's edge is drawn by the betting test (bandits.confidence), far
    # below the policy's check period
    from bandits import confidence

    env = np.random.default_rng(8)
    b = SparringCertifier(2, seed=8)
    first = None
    for _ in range(2_000):
        i, j = b.select()
        b.update(i, j, float(env.random() < (0.75 if i == 0 else 0.25)) if i != j else 0.5)
        n = b.W[0, 1] + b.W[1, 0]
        if first is None and confidence.crossed(b.W[0, 1], n, 0.025):
            first = b.n_updates
        if b.certificate is not None:
            break
    assert b.certificate == {"champion": 0, "at": first} and first < 200
    assert b.verdicts()["shown_worse"] == {1: 0}
