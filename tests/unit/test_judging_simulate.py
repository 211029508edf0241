"""The judging simulator: cases, determinism, job independence, scoring, delays."""

from __future__ import annotations

import numpy as np
import pytest

from judging.simulate import (
    RunResult,
    case_a,
    case_b,
    default_winners,
    run_all,
    simulate_run,
    summarize,
    validate_matrix,
)


def test_cases_match_seed_004_section_4():
    A, B = case_a(), case_b()
    assert A.P.shape == B.P.shape == (100, 100)
    # Case A: i < j => q_ij = 0.75, however far apart
    assert A.P[0, 1] == A.P[0, 99] == A.P[50, 51] == 0.75 and A.P[99, 0] == 0.25
    # Case B: 0 and 1 tie, beat everyone else with 0.75; all else ties
    assert B.P[0, 1] == B.P[1, 0] == 0.5
    assert (B.P[:2, 2:] == 0.75).all() and (B.P[2:, 2:] == 0.5).all()
    assert A.winners == (0,) and B.winners == (0, 1)
    validate_matrix(A.P)
    validate_matrix(B.P)
    with pytest.raises(ValueError):
        validate_matrix(np.array([[0.5, 0.9], [0.9, 0.5]]))
    assert default_winners(A.P) == (0,) and default_winners(B.P) == (0, 1)


def test_same_seed_same_run_and_common_coins_across_algorithms():
    P = case_a(30).P
    a = simulate_run(P, "prefbest", 7, budget=400)
    b = simulate_run(P, "prefbest", 7, budget=400)
    assert a == b
    c = simulate_run(P, "prefbest", 8, budget=400)
    assert (a.returned, a.judgments) != (c.returned, c.judgments) or a.seed != c.seed


def test_results_do_not_depend_on_jobs_or_chunks():
    P = case_b(24).P
    one = run_all(P, ["prefbest", "gauntlet"], 6, seed=3, jobs=1, budget=300)
    two = run_all(P, ["prefbest", "gauntlet"], 6, seed=3, jobs=2, chunk=2, budget=300)
    assert one == two
    assert [r.seed for r in one["gauntlet"]] == list(range(3, 9))


def test_budget_cap_and_out_of_order_delivery():
    P = case_a(40).P
    for in_flight in (1, 4):
        r = simulate_run(P, "gauntlet", 1, budget=250, max_per_pair=4, in_flight=in_flight)
        assert r.judgments <= 250 and r.per_pair_max <= 4 and r.returned
    # the prefBest phases wait for their last judgment however they arrive
    r = simulate_run(case_a(12).P, "prefbest", 2, budget=None, in_flight=5, batch=3)
    assert r.finished and r.returned


def test_summarize_counts_strictly_and_as_the_thesis_does():
    W = (0, 1)
    runs = [
        RunResult(0, [0], 900, 7, 0.8, True),       # one winner, alone
        RunResult(1, [0, 1], 950, 10, 0.7, True),   # exactly both
        RunResult(2, [1, 5], 960, 9, 0.6, True),    # one winner and another item
        RunResult(3, [0, 1, 7], 999, 8, 0.0, False),  # both and another item
        RunResult(4, [9], 800, 6, 0.9, True),       # no winner
    ]
    s = summarize(runs, W)
    assert (s["best_found"], s["one_found"], s["both_found"]) == (2, 1, 1)
    assert (s["contains_winner"], s["contains_one"], s["contains_all"]) == (4, 2, 2)
    assert s["nonwinners_returned"] == 3 and s["returned_mean"] == 1.8
    assert (s["judgments_min"], s["judgments_max"]) == (800, 999)
    assert (s["assessors_per_pair_min"], s["assessors_per_pair_max"]) == (6, 10)
    assert s["runs"] == 5 and s["finished"] == 4
