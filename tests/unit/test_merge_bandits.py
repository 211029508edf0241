"""MergeDTS (Li et al. 2020, Algorithms 1–3) and MergeRUCB (Zoghi 2017, Algorithm 4).

Every run is seeded; statistical assertions state their tolerance where they make them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from policy_references import reference_dts_pair

from bandits import (
    ACTIVE,
    ELIMINATED,
    RETIRED,
    bandit_from_state,
    check_params,
    get_algorithm,
    make_bandit,
)
from bandits.matrices import bradley_terry, condorcet_winner
from bandits.merge_base import MergeBandit, confidence_constant
from bandits.merge_dts import MergeDTS
from bandits.merge_partition import batch_bounds, pair_batches
from bandits.merge_rucb import MergeRUCB
from bandits.merge_sampling import dts_rows

ALGS = {
    "mergedts": dict(alpha=0.51, batch_size=8, c=1000.0),
    "mergerucb": dict(alpha=0.51, batch_size=4, c=1000.0),
    "mergeguard": dict(alpha=0.51, batch_size=8, c=1000.0),
}


def make(name: str, k: int, seed: int, **over) -> MergeBandit:
    return get_algorithm(name)(k, seed=seed, **{**ALGS[name], **over})


def play(
    b: MergeBandit,
    P: np.ndarray,
    steps: int,
    env: np.random.Generator,
    check=None,
    stop_when_converged: bool = False,
):
    """Simulate ``steps`` comparisons; ``check(b, i, j)`` runs before each update.
    Returns the list of selected pairs."""
    pairs = []
    for u in env.random(steps):
        i, j = b.select()
        if stop_when_converged and i == j:
            break
        if check is not None:
            check(b, i, j)
        pairs.append((i, j))
        b.update(i, j, float(u < P[i, j]))
    return pairs


def ucb(W: np.ndarray, i: int, j: int, bonus: float) -> float:
    n = W[i, j] + W[j, i]
    return 2.0 if n == 0 else W[i, j] / n + math.sqrt(bonus / n)


def test_registered():
    assert get_algorithm("mergedts") is MergeDTS
    assert get_algorithm("mergerucb") is MergeRUCB


# Whether they find the Condorcet winner (20 seeded runs on 32 arms) is in the stats tier:
# tests/stats/test_finding_winners.py.


@pytest.mark.parametrize("name", sorted(ALGS))
def test_structure_invariants_during_run(name):
    """Eliminated arms are never chosen again; chosen pairs come from one batch; no arm
    is eliminated before it was compared; after every stage merge the batch sizes are in
    [0.5M, 1.5M]; line 11 holds in every batch after every update."""
    K = 40
    P = bradley_terry(K, gap=0.05, seed=7)
    b = make(name, K, seed=3)
    lo, hi = batch_bounds(b.batch_size)
    stage_sizes = []
    last_stage = [b.stage]
    verifying = []  # MergeGuard: the steps (indices of play's pairs) it spent verifying
    calls = [0]

    def check(b, i, j):
        calls[0] += 1
        if name == "mergeguard" and (verifying or len(b.active_arms()) == 1):
            # past convergence MergeGuard's verification duels the champion with the
            # arms it eliminated (bandits/champion_verification.py): the merge's invariants end here
            verifying.append(calls[0] - 1)
            assert b.best_arm() in (i, j)
            return
        assert b.status[i] == ACTIVE and b.status[j] == ACTIVE
        assert any(i in bt and j in bt for bt in b.batches)
        if b.stage != last_stage[0]:
            last_stage[0] = b.stage
            stage_sizes.append([len(bt) for bt in b.batches])
        # line 11 at the step being played: no arm has u_ij < 1/2 inside its batch
        bonus = b.bonus(b.t)
        for bt in b.batches:
            for x in bt:
                for y in bt:
                    if x != y:
                        assert ucb(b.W, x, y, bonus) >= 0.5

    pairs = play(b, P, 6000, np.random.default_rng(11), check)
    assert b.stage >= 3, "the run should have gone through several stages"
    assert stage_sizes
    for sizes in stage_sizes:
        if len(sizes) > 1:
            assert all(lo <= s <= hi for s in sizes), sizes
    # no arm eliminated before it was compared, and only on a confident loss:
    # an eliminated arm is never chosen again, so its counts are frozen since then
    assert b.eliminated
    for arm, rec in b.eliminated.items():
        by = rec["by"]
        assert b.status[arm] == ELIMINATED
        assert b.W[arm, by] + b.W[by, arm] > 0
        assert ucb(b.W, arm, by, b.bonus(rec["step"] + 1)) < 0.5
        later = pairs[rec["step"] : verifying[0] if verifying else None]
        assert all(arm not in p for p in later)


def test_pair_batches_bounds_random():
    rng = np.random.default_rng(5)
    for _ in range(300):
        M = int(rng.integers(2, 20))
        lo, hi = batch_bounds(M)
        nb = int(rng.integers(1, 12))
        sizes = rng.integers(1, 2 * hi, size=nb)
        arms = np.arange(sizes.sum())
        batches = [list(map(int, x)) for x in np.split(arms, np.cumsum(sizes)[:-1])]
        out = pair_batches(batches, M)
        assert sorted(a for bt in out for a in bt) == arms.tolist()
        if len(out) > 1:
            assert all(lo <= len(bt) <= hi for bt in out), (M, sizes, out)
        else:
            assert len(out[0]) <= hi or len(arms) <= hi
        # pairing never makes more batches than it was given (unless splitting giants)
        if max(sizes) <= hi:
            assert len(out) <= nb


@pytest.mark.parametrize("name", sorted(ALGS))
def test_add_and_retire_keep_the_winner(name):
    K = 32
    P = bradley_terry(K + 3, gap=0.05, seed=21)
    # relabel by strength (Bradley-Terry is a total order): arm 0 is the second best and
    # wins among arms 0..K+1; the best arm comes last, as the third added arm
    ranked = list(np.argsort(-(P > 0.5).sum(axis=1)))
    order = ranked[1:] + ranked[:1]
    P = P[np.ix_(order, order)]
    assert condorcet_winner(P) == K + 2
    assert condorcet_winner(P[: K + 2, : K + 2]) == 0
    b = make(name, K, seed=4)
    env = np.random.default_rng(8)
    play(b, P, 500, env)
    new = [b.add_arm(), b.add_arm()]
    assert new == [K, K + 1]
    assert all(any(a in bt for bt in b.batches) for a in new)
    victims = [a for a in b.active_arms() if a not in (0, *new)][:3]
    for a in victims:
        b.retire_arm(a)
    seen = set()
    pairs = play(b, P, 15_000, env)
    for i, j in pairs:
        seen.update((i, j))
    assert not seen & set(victims), "a retired arm was chosen"
    assert all(b.status[a] == RETIRED for a in victims)
    assert seen >= set(new), "added arms were never played"
    assert b.best_arm() == 0
    assert b.active_arms() == [0]
    # a stronger newcomer joins the converged field and takes over
    b.add_arm()
    assert b.batches == [[0, K + 2]]
    play(b, P, 8000, env)
    assert b.best_arm() == K + 2
    assert b.eliminated[0]["by"] == K + 2


@pytest.mark.parametrize("name", sorted(ALGS))
def test_same_seed_same_run(name):
    P = bradley_terry(30, gap=0.05, seed=2)
    runs = []
    for _ in range(2):
        b = make(name, 30, seed=9)
        runs.append((play(b, P, 3000, np.random.default_rng(1)), b.W.copy()))
    assert runs[0][0] == runs[1][0]
    assert np.array_equal(runs[0][1], runs[1][1])
    other = make(name, 30, seed=10)
    assert play(other, P, 3000, np.random.default_rng(1)) != runs[0][0]


@pytest.mark.parametrize("name", sorted(ALGS))
def test_state_round_trip_continues_identically(name):
    K = 30
    P = bradley_terry(K + 1, gap=0.05, seed=12)
    a = make(name, K, seed=5)
    env = np.random.default_rng(3)
    play(a, P, 1500, env)
    a.add_arm()
    a.retire_arm(a.active_arms()[1])
    state = json.loads(json.dumps(a.state_dict()))
    b = bandit_from_state(state)
    assert type(b) is type(a)
    assert b.batches == a.batches and b.stage == a.stage and b.c == a.c
    assert b.state_dict() == state
    ua = np.random.default_rng(4)
    ub = np.random.default_rng(4)
    assert play(a, P, 4000, ua) == play(b, P, 4000, ub)
    assert np.array_equal(a.W, b.W)
    assert a.eliminated == b.eliminated


@pytest.mark.parametrize("name", sorted(ALGS))
def test_ties_count_half_and_caches_stay_consistent(name):
    K = 40
    P = bradley_terry(K, gap=0.05, seed=9)
    b = make(name, K, seed=6)
    env = np.random.default_rng(2)
    for _ in range(2500):
        i, j = b.select()
        # a third of the outcomes are ties, the rest follow P
        r, u = env.random(2)
        b.update(i, j, 0.5 if r < 1 / 3 else float(u < P[i, j]))
    i, j = b.select()
    before = (b.W[i, j], b.W[j, i])
    b.update(i, j, 0.5)
    assert (b.W[i, j], b.W[j, i]) == (before[0] + 0.5, before[1] + 0.5)
    assert np.any(b.W % 1 == 0.5)
    assert b.eliminated and len(b.batches) > 1
    # the incremental per-batch caches agree with a rebuild from W
    fresh = bandit_from_state(b.state_dict())
    assert fresh is not b
    if name in ("mergedts", "mergeguard"):
        assert np.array_equal(b._pairs._PP, fresh._pairs._PP)
        assert np.allclose(b._pairs._PU, fresh._pairs._PU, rtol=0, atol=1e-15)
    else:
        for x, y in zip(b._batches, fresh._batches, strict=True):
            assert np.allclose(x.R, y.R, rtol=0, atol=1e-15)
            assert np.allclose(x.S, y.S, rtol=0, atol=1e-15)


def test_select_in_batch_matches_select_rucb():
    """The live service's path (a batch's own data) draws what ``select`` draws; with a
    single batch, from the same generator state, exactly the same pair. (MergeDTS
    prepares draws ahead when there are few batches, so there the two agree in
    distribution: see the tests against the literal pseudo-code below.)"""
    P = bradley_terry(12, gap=0.05, seed=3)
    b = make("mergerucb", 12, seed=2, batch_size=12)
    assert len(b.batches) == 1
    env = np.random.default_rng(5)
    for _ in range(300):
        arms = b.current_batch()
        rng_copy = np.random.default_rng()
        rng_copy.bit_generator.state = b.rng.bit_generator.state
        expected = b.select_in_batch(arms, b.W[np.ix_(arms, arms)], b.t + 1, rng_copy)
        i, j = b.select()
        assert (i, j) == expected
        b.update(i, j, float(env.random() < P[i, j]))


# MergeDTS's pairs against a literal Algorithms 2 and 3 (3,000 seeded draws per case): in
# the stats tier, tests/stats/test_policies_follow_the_papers.py.


def test_default_c_from_horizon():
    # a horizon given without c: C(eps) of Algorithm 1 line 2, whatever the preset
    b = MergeDTS(136, alpha=1.01, horizon=100, seed=0)
    assert round(b.c) == 4066005
    assert b.params()["c"] == b.c
    with pytest.raises(ValueError, match="pass c directly"):
        MergeDTS(10, preset="theoretical", alpha=0.262)
    assert MergeDTS(10, preset="theoretical", alpha=0.262, c=4e6).c == 4e6


#: Li et al. 2020, §5.5's tuned values, the default preset
TUNED = {
    "mergedts": {"alpha": 0.8**6, "batch_size": 16, "c": 4e6},
    "mergerucb": {"alpha": 0.8**6, "batch_size": 8, "c": 4e5},
}


@pytest.mark.parametrize("name", sorted(TUNED))  # MergeGuard's: tests/test_merge_guard.py
def test_presets(name):
    cls = get_algorithm(name)
    # defaults: the tuned preset, shown as effective values
    b = cls(40, seed=1)
    assert b.params() == {"preset": "tuned", **TUNED[name]}
    assert (b.alpha, b.batch_size, b.c) == tuple(TUNED[name].values())
    # the theoretical defaults by name: alpha 1.01, M = 4, C from line 2 with eps = 1e-6
    t = cls(40, preset="theoretical", seed=1)
    assert t.params() == {"preset": "theoretical", "alpha": 1.01, "batch_size": 4,
                          "c": confidence_constant(1.01, 40, 10**6), "horizon": 10**6}
    assert [len(x) for x in t.batches] == [len(x) for x in cls(40, batch_size=4).batches]
    # explicit parameters override the preset's (c of line 2 follows an explicit alpha)
    assert cls(40, batch_size=6).params() == {"preset": "tuned", **TUNED[name], "batch_size": 6}
    o = cls(40, preset="theoretical", alpha=0.8, horizon=1000).params()
    assert o["alpha"] == 0.8 and o["c"] == confidence_constant(0.8, 40, 1000)
    assert cls(40, preset="theoretical", c=7.0).params()["c"] == 7.0
    with pytest.raises(ValueError, match=rf"unknown preset 'paper' for {name}; valid: theo"):
        cls(40, preset="paper")


@pytest.mark.parametrize("name", sorted(ALGS))
def test_effective_params_round_trip(name):
    """The state carries the effective values: a run rebuilt from it has the same
    parameters even with more arms than it started with (C(eps) depends on K), and a
    state written before the presets (no "preset") loads with its own values."""
    b = get_algorithm(name)(10, preset="theoretical", seed=1)
    b.add_arm()
    r = bandit_from_state(json.loads(json.dumps(b.state_dict())))
    assert r.params() == b.params() and r.c == b.c
    old = b.state_dict()
    old["params"] = {"alpha": 1.01, "batch_size": 4, "c": b.c, "horizon": 10**6}
    r = bandit_from_state(old)
    assert (r.alpha, r.batch_size, r.c) == (1.01, 4, b.c)
    assert r.batches == b.batches


def test_check_params_knows_the_preset():
    assert check_params("mergedts", {"preset": "theoretical", "alpha": 0.9}) == {
        "preset": "theoretical", "alpha": 0.9}
    assert check_params("mergerucb", {"batch_size": 8.0}) == {"batch_size": 8}
    with pytest.raises(ValueError, match="valid: alpha, batch_size, c, horizon, preset"):
        check_params("mergedts", {"alfa": 0.5})
    with pytest.raises(ValueError, match="'preset' of mergedts must be a string"):
        check_params("mergedts", {"preset": 1})
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        make_bandit("mergerucb", 10, preset="nope")


def test_initial_batches():
    sizes = [len(x) for x in MergeDTS(136, batch_size=16, c=1.0).batches]
    assert len(sizes) == math.ceil(136 / 16) and max(sizes) - min(sizes) <= 1
    sizes = [len(x) for x in MergeRUCB(136, batch_size=8, c=1.0).batches]
    assert len(sizes) == 136 // 8 and min(sizes) >= 8
    # a would-be one-arm batch merges at once (line 12-13)
    assert MergeDTS(3, batch_size=2, c=1.0).batches == [[0, 1, 2]]


def test_mergedts_caches_after_each_elimination():
    """Eliminations update a batch's cached rows in place (a permutation, not a rebuild
    from W); after every one they equal a rebuild."""
    K = 48
    P = bradley_terry(K, gap=0.05, seed=13)
    b = MergeDTS(K, alpha=0.51, batch_size=16, c=100.0, seed=2)
    env = np.random.default_rng(4)
    checked = 0
    for u in env.random(6000):
        i, j = b.select()
        before = len(b.eliminated)
        b.update(i, j, float(u < P[i, j]))
        if len(b.eliminated) != before and len(b.batches) > 1:
            checked += 1
            for k, arms in enumerate(b.batches):
                PP, pu = dts_rows(b.W[np.ix_(arms, arms)], b._pairs._N)
                assert np.array_equal(b._pairs._PP[k], PP)
                assert np.array_equal(b._pairs._PU[k], pu)
    assert checked >= 10


@pytest.mark.parametrize(("n_batches", "size"), [(1, 12), (1, 16), (2, 12)])
def test_mergedts_prepared_draws_follow_count_changes(n_batches, size):
    """With few batches MergeDTS draws several rounds ahead and corrects each prepared
    draw for the pairs compared since. We let a draw be prepared, change the counts a
    lot (arm 3, the likely a_d before, beats arm 0 now, which also makes arm 3 a
    possible first candidate; the last arm becomes the weakest), then take the
    remaining prepared steps without further updates, in fresh runs (at least 900 pairs
    in all): the first batch's pairs must follow the literal Algorithms 2-3 on the *new*
    counts (total variation below 0.06, sampling noise about 0.025)."""
    last = size - 1
    W = np.zeros((size, size))
    for j in range(1, size):
        W[0, j], W[j, 0] = 100.0, 50.0  # arm 0 is the clear first candidate
    W[0, 3], W[3, 0] = 25.0, 5.0  # ... and arm 3 its weakest opponent
    W[0, last], W[last, 0] = 20.0, 20.0
    after = W.copy()
    after[0, last] += 40.0  # 60:20, now the weakest
    after[3, 0] += 90.0  # 25:95, now arm 3 beats arm 0
    K = size * n_batches
    gen = np.random.default_rng(11)
    ours: dict[tuple[int, int], int] = {}
    for run in range(150 * n_batches):
        b = MergeDTS(K, alpha=0.51, batch_size=size, c=1e12, seed=100 + run)
        b.W[:size, :size] = W
        b._build_all()
        for _ in range(n_batches):
            b.select()  # prepares the draws (and uses the first)
        assert b._pairs._ahead is not None and b._pairs._ahead.next[0] == 1
        for _ in range(40):
            b.update(0, last, 1.0)
        for _ in range(90):
            b.update(3, 0, 1.0)
        assert np.array_equal(b.W[:size, :size], after) and not b.eliminated
        ah = b._pairs._ahead
        while ah.next[0] < ah.L:
            pair = b.select()
            if pair[0] < size:
                ours[pair] = ours.get(pair, 0) + 1
        assert b._pairs._ahead is ah  # all taken from the same prepared draw
    n = sum(ours.values())
    assert n >= 900
    ref: dict[tuple[int, int], int] = {}
    for _ in range(n):
        pair = reference_dts_pair(after, gen)
        ref[pair] = ref.get(pair, 0) + 1
    keys = set(ours) | set(ref)
    tv = sum(abs(ours.get(k, 0) - ref.get(k, 0)) for k in keys) / 2 / n
    assert tv < 0.06, (tv, sorted(ours.items()), sorted(ref.items()))


#: what a Merge policy's state holds: the base class' fields, batches and stage; no cache
#: MergeGuard keeps its guard in the state too, and whether its last check saw the current
#: counts (``checked_clean``: the simulator's quiet-steps skip needs it across a round
#: trip; the live store drops it, service.store.snapshot.W_DERIVED, as it moves with every W)
GUARD_KEYS = {"mergedts": set(), "mergerucb": set(), "mergeguard": {"guard", "checked_clean"}}
STATE_KEYS = {"algorithm", "params", "K", "t", "n_updates", "W", "status", "eliminated", "rng",
              "batches", "stage", "stage_field"}


def test_mergedts_round_trip_mid_lookahead():
    """Draws prepared ahead are a cache, not state: a snapshot taken while a prepared
    draw is half used (with pairs compared since) holds none of it, and the run and its
    restored copy continue exactly alike (the snapshot drops the original's cache too)."""
    P = bradley_terry(24, gap=0.05, seed=4)
    a = MergeDTS(24, alpha=0.51, batch_size=12, c=1e6, seed=8)
    env = np.random.default_rng(6)
    play(a, P, 300, env)
    for _ in range(50):
        if a._pairs._ahead is not None and 0 < a._pairs._ahead.next[0] < a._pairs._ahead.L:
            break
        play(a, P, 1, env)
    assert a._pairs._ahead is not None and any(a._pairs._ahead.changed)
    state = json.loads(json.dumps(a.state_dict()))
    assert set(state) == STATE_KEYS
    b = bandit_from_state(state)
    assert play(a, P, 3000, np.random.default_rng(7)) == play(b, P, 3000, np.random.default_rng(7))
    assert np.array_equal(a.W, b.W)


@pytest.mark.parametrize("name", sorted(ALGS))
@pytest.mark.parametrize(("K", "batch_size"), [(64, 4), (40, 16), (12, 12), (8, 8)])
def test_state_holds_no_cache(name, K, batch_size):
    """Whatever the regime (many batches with pairs prepared by a stacked draw, few large
    batches drawn ahead, one large or one small batch), the state holds only what
    defines the run, and a snapshot taken after any step continues identically."""
    P = bradley_terry(K, gap=0.05, seed=K)
    a = make(name, K, seed=3, batch_size=batch_size)
    env = np.random.default_rng(1)
    for steps in (1, 2, 3, 7, 50):
        play(a, P, steps, env)
        state = json.loads(json.dumps(a.state_dict()))
        assert set(state) == STATE_KEYS | GUARD_KEYS[name]
        b = bandit_from_state(state)
        assert b.state_dict() == state
        if name in ("mergedts", "mergeguard"):
            assert a._pairs._ahead is None and all(bt.choice is None for bt in a._batches)
        ua, ub = np.random.default_rng(steps), np.random.default_rng(steps)
        assert play(a, P, 40, ua) == play(b, P, 40, ub)
        assert np.array_equal(a.W, b.W) and a.batches == b.batches


@pytest.mark.parametrize("name", sorted(ALGS))
@pytest.mark.parametrize(("K", "batch_size"), [(64, 4), (40, 16), (12, 12), (8, 8)])
def test_select_at_is_a_function_of_state_step_and_generator(name, K, batch_size):
    """Live, every API process calls ``select_at(t, rng)`` on its own copy, with a fresh
    generator seeded from (experiment seed, t), and t jumps between calls: the pair must
    not depend on what either copy selected before (nor on draws ``select()`` prepared
    ahead), and the copy's own generator is left alone."""
    P = bradley_terry(K, gap=0.05, seed=K)
    base = make(name, K, seed=3, batch_size=batch_size)
    play(base, P, 300, np.random.default_rng(2))
    state = json.loads(json.dumps(base.state_dict()))
    a, b = bandit_from_state(state), bandit_from_state(state)
    for _ in range(37):  # a prepares draws (and moves its generator and t)
        a.select()
    for t in (5, 1000, 77):
        b.select_at(t, np.random.default_rng(t))
    rng_a = a.rng.bit_generator.state
    for t in (301, 302, 350, 10_000, 303, 1_000_000):
        pa = a.select_at(t, np.random.default_rng([42, t]))
        pb = b.select_at(t, np.random.default_rng([42, t]))
        fresh = bandit_from_state(state).select_at(t, np.random.default_rng([42, t]))
        assert pa == pb == fresh
        assert a.t == t
        arms = base.current_batch(t)
        assert pa[0] in arms and pa[1] in arms
        # the batch's own data and the step are all it depends on
        W_sub = base.W[np.ix_(arms, arms)]
        assert pa == base.select_in_batch(arms, W_sub, t, np.random.default_rng([42, t]))
    assert a.rng.bit_generator.state == rng_a
    # different generators do draw different pairs
    pairs = {a.select_at(400, np.random.default_rng(s)) for s in range(40)}
    assert len(pairs) > 1


@pytest.mark.parametrize("name", sorted(ALGS))
def test_structure(name):
    b = make(name, 40, seed=1)
    s = b.structure()
    extra = {"mode", "non_condorcet", "readmitted"} if name == "mergeguard" else set()
    assert set(s) == {"stage", "batches"} | extra
    assert {k: s[k] for k in ("stage", "batches")} == {"stage": b.stage, "batches": b.batches}
    assert json.loads(json.dumps(s)) == s
    play(b, bradley_terry(40, gap=0.05, seed=1), 3000, np.random.default_rng(1))
    s = b.structure()
    assert s["stage"] > 1 and s["batches"] == b.batches
    assert type(s["stage"]) is int
    assert all(type(a) is int for bt in s["batches"] for a in bt)
    assert sorted(a for bt in s["batches"] for a in bt) == b.active_arms()


def test_the_merge_family_is_composed_not_stacked():
    """Every Merge policy is one level below MergeBandit (two below DuelingBandit; the
    framework's batch structure is a mixin, not a policy) and declares its components;
    each declares the presets its ``preset`` parameter names."""
    from bandits import get_algorithm
    from bandits.base import DuelingBandit
    from bandits.merge_base import MergeBandit
    from bandits.merge_components import EliminationTest, PairRule

    merge = [get_algorithm(n) for n in ("mergedts", "mergerucb", "mergeguard", "mergemed")]
    for cls in merge:
        assert cls.__bases__ == (MergeBandit,), cls
        assert [c for c in cls.__mro__ if issubclass(c, DuelingBandit)] == [
            cls, MergeBandit, DuelingBandit], cls
        assert issubclass(cls.PAIRS, PairRule) and isinstance(cls.ELIMINATION, EliminationTest)
        assert set(cls.PRESETS) == set(cls.PARAMS["preset"].choices), cls
        assert cls.PARAMS["preset"].default in cls.PRESETS
        assert cls.condorcet_guard == (cls.GUARD is not None)
        if cls.GUARD is not None:  # the guard's parameters, declared once on it
            assert set(cls.GUARD.PARAMS) <= set(cls.PARAMS)


def test_draw_one_is_draw_stacked_of_one_batch():
    """The one-batch kernel of select_at draws exactly what the stacked kernel draws
    (the same generator calls), leaving the generator in the same state."""
    from bandits.merge_sampling import draw_one, draw_stacked

    rs = np.random.default_rng(5)
    for _ in range(300):
        n = int(rs.integers(11, 20))
        W = rs.integers(0, 50, (n, n)).astype(float)
        np.fill_diagonal(W, 0.0)
        PP, pu = dts_rows(W, n)
        seed = int(rs.integers(1 << 40))
        g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
        cs, ds = draw_stacked(pu[None], PP[None], g2)
        assert draw_one(PP, pu, g1) == (cs[0], ds[0])
        assert g1.random() == g2.random()


def test_select_at_rows_follow_the_wins():
    """select_at keeps a batch's rows between calls (the live service draws many steps
    from one state); after an update the rows are those of the new wins: every draw
    equals a fresh copy's."""
    rng = np.random.default_rng(3)
    live = MergeDTS(12, seed=1)
    for step in range(1, 600):
        if step % 7 == 0:
            i, j = live.select()
            live.update(i, j, float(rng.random() < 0.6))
        fresh = MergeDTS.from_state(live.state_dict())
        t = int(rng.integers(1, 10_000))
        assert live.select_at(t, np.random.default_rng([t, 1])) == \
            fresh.select_at(t, np.random.default_rng([t, 1]))
