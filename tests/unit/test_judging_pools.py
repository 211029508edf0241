"""Exact duplicates (Yan 2022, §5.2) and the test-pair rule (§5.1)."""

from __future__ import annotations

import numpy as np

from judging import make_judge
from judging.pools import Quality, assessor_quality, drop_excluded, merge_duplicates


def test_merge_duplicates_is_exact_and_expands_back():
    pool = [("p1", "Nicole Jaffe voiced Velma."), ("p2", "Taliesin Jaffe is an actor."),
            ("p3", "Nicole Jaffe voiced Velma."), ("p4", "Nicole Jaffe voiced Velma. "),
            ("p5", "Taliesin Jaffe is an actor.")]
    d = merge_duplicates(pool)
    assert d.groups == (("p1", "p3"), ("p2", "p5"), ("p4",))  # trailing space: distinct
    assert d.representatives == ["p1", "p2", "p4"] and d.merged == 2
    assert d.expand([0, 2]) == ["p1", "p3", "p4"]


def test_duplicates_merged_before_judging_share_the_verdict():
    # 6 passages, two of them identical copies of the best one: merged, the pool has 5
    texts = {f"d{i}": f"text {i}" for i in range(6)}
    texts["d4"] = texts["d0"]
    d = merge_duplicates(texts)
    reps = d.representatives
    assert len(reps) == 5 and "d4" not in reps
    best_text = texts["d0"]
    j = make_judge("prefbest", len(reps), seed=0)
    while not j.done:
        for a, b in j.request(10):
            ta, tb = texts[reps[a]], texts[reps[b]]
            j.record(a, b, 1.0 if ta == best_text else 0.0 if tb == best_text else 0.5)
    assert d.expand(j.best()) == ["d0", "d4"]  # the copy is returned with its original


def test_unmerged_duplicate_of_the_best_item_is_a_tie_and_returned_often():
    # §5.2's unplanned test of equality tolerance: an unmerged copy of the best item
    # (p = 0.5 against it, same wins against the rest) should also come out on top
    K = 20
    P = np.full((K, K), 0.5)
    P[[0, 7], :] = 0.8
    P[:, [0, 7]] = 0.2
    P[np.ix_([0, 7], [0, 7])] = 0.5
    rng = np.random.default_rng(4)
    both = alone = 0
    for seed in range(20):
        j = make_judge("gauntlet_ties", K, seed=seed, budget=300)
        while not j.done:
            for a, b in j.request(10):
                j.record(a, b, float(rng.random() < P[a, b]))
        both += j.best() == frozenset({0, 7})
        alone += len(j.best()) == 1 and j.best() <= {0, 7}
    # the 7-of-10 final keeps a true tie with probability 0.656 once both reach it: about
    # 12 of 20 runs expected (13 here), and a best item with nothing else in nearly all;
    # the bounds sit ~2.5 binomial sd below the expectation
    assert both >= 7 and both + alone >= 17, (both, alone)


def test_test_pair_rule_is_75_percent():
    answers = ([("a", True)] * 3 + [("b", True)] * 2 + [("b", False)]
               + [("c", True)] * 5 + [("c", False)] + [("d", True)] * 3 + [("d", False)])
    q = assessor_quality(answers)
    assert {k: v.passed for k, v in q.items()} == {"a": True, "b": False, "c": True, "d": True}
    assert q["b"] == Quality(2, 3, False) and q["d"].rate == 0.75
    judgments = [{"assessor": w, "pair": (i, i + 1)} for i, w in enumerate("abcde")]
    kept, dropped = drop_excluded(judgments, q)
    assert [j["assessor"] for j in kept] == ["a", "c", "d", "e"]  # e: not measured yet
    assert [j["assessor"] for j in dropped] == ["b"]
