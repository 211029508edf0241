"""Continuation of an interleaving to the next result page (``Interleaver.extend``).

The property every method must have: pages 1..N, each continuing the last with the
same generator, are the first N·k documents of one interleaving of depth N·k, and their
record is that interleaving's record, so a click anywhere credits as if the long list had
been shown at once.
"""

from __future__ import annotations

import numpy as np
import pytest

import interleaving
from interleaving import METHODS, MULTILEAVE_METHODS, get_method

#: methods whose first k documents are the same from a ranker's top k as from its top N·k
RANK_BASED = [m for m in METHODS if not m.startswith("probabilistic")]


def _lists(seed: int, m: int, depth: int, *, shared_top: int = 0) -> list[list[str]]:
    """``m`` rankings of ``depth`` documents drawn from an overlapping pool; the first
    ``shared_top`` identical in every ranking."""
    gen = np.random.default_rng(seed)
    pool = [f"d{i}" for i in range(int(depth * 1.8) + 2)]
    top = pool[:shared_top]
    out = []
    for _ in range(m):
        rest = [d for d in gen.permutation(pool[shared_top:]).tolist()]
        out.append(top + rest[: depth - shared_top])
    return out


def _participants(method: str) -> list[int]:
    return [2, 3, 4] if method in MULTILEAVE_METHODS else [2]


def _paged(method: str, pages: list[list[list[str]]], k: int, seed: int):
    """Serve page 1 with ``pages[0]``, then continue page i with ``pages[i]``."""
    rng = np.random.default_rng(seed)
    shown, record = interleaving.interleave(method, pages[0], k, rng)
    for i, lists in enumerate(pages[1:], start=2):
        before = list(shown)
        shown, record = interleaving.extend(record, shown, lists, i * k, rng)
        assert shown[: len(before)] == before  # what was shown stays shown
    return shown, record


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k,n_pages", [(3, 2), (5, 3), (10, 2)])
def test_pages_with_the_same_lists_are_one_interleaving(method, k, n_pages):
    for seed in range(25):
        for m in _participants(method):
            lists = _lists(seed, m, n_pages * k, shared_top=seed % 3)
            shown, record = _paged(method, [lists] * n_pages, k, seed)
            once, once_record = interleaving.interleave(
                method, lists, n_pages * k, np.random.default_rng(seed))
            assert shown == once, (method, seed, m)
            assert record == once_record, (method, seed, m)


@pytest.mark.parametrize("method", RANK_BASED)
@pytest.mark.parametrize("k,n_pages", [(3, 3), (5, 2), (10, 2)])
def test_pages_from_deepening_lists_are_one_interleaving(method, k, n_pages):
    """The service asks the rankers for i·k results on page i: for the rank-based
    methods, pages drawn from top-k, top-2k, ... lists are the one draw from the top N·k."""
    for seed in range(40):
        for m in _participants(method):
            full = _lists(seed, m, n_pages * k, shared_top=(0, 1, k, k + 1)[seed % 4])
            pages = [[r[: i * k] for r in full] for i in range(1, n_pages + 1)]
            shown, record = _paged(method, pages, k, seed)
            once, once_record = interleaving.interleave(
                method, full, n_pages * k, np.random.default_rng(seed))
            assert shown == once, (method, seed, m)
            assert record == once_record, (method, seed, m)


@pytest.mark.parametrize("method", RANK_BASED)
def test_clicks_on_any_page_credit_as_the_long_list(method):
    k = 5
    for seed in range(30):
        m = 3 if method in MULTILEAVE_METHODS else 2
        full = _lists(seed, m, 2 * k)
        shown, record = _paged(method, [[r[:k] for r in full], full], k, seed)
        _, once_record = interleaving.interleave(method, full, 2 * k,
                                                 np.random.default_rng(seed))
        gen = np.random.default_rng(seed + 1000)
        for _ in range(5):
            clicks = sorted(set(gen.integers(0, len(shown), size=gen.integers(1, 4)).tolist()))
            assert interleaving.credit(record, clicks) == interleaving.credit(once_record,
                                                                              clicks)
        assert record["len"] == len(shown) == 2 * k


@pytest.mark.parametrize("method", ["probabilistic", "probabilistic_multileave"])
def test_probabilistic_continues_its_sampling_from_deeper_lists(method):
    """With lists that deepen, page 2 is drawn from the top-2k softmaxes without what was
    shown; page 1's posteriors are kept (they are those of the draws that happened) and
    every slot's posterior is a distribution over the rankers that had the document."""
    k = 5
    for seed in range(30):
        m = 3 if method in MULTILEAVE_METHODS else 2
        full = _lists(seed, m, 2 * k)
        rng = np.random.default_rng(seed)
        first, rec1 = interleaving.interleave(method, [r[:k] for r in full], k, rng)
        shown, rec2 = interleaving.extend(rec1, first, full, 2 * k, rng)
        assert shown[:k] == first and len(set(shown)) == len(shown) == 2 * k
        assert rec2["post"][:k] == rec1["post"]
        for doc, row in zip(shown, rec2["post"], strict=True):
            assert sum(row) == pytest.approx(1.0)
            assert all(p == 0.0 for j, p in enumerate(row) if doc not in full[j])


def test_an_identical_top_continues_as_prefix_on_the_next_page():
    """Lists that agree beyond page 1: page 1 is all shared prefix (no team), page 2 goes
    on with the prefix while the lists agree, then drafts."""
    a = [f"s{i}" for i in range(7)] + ["a1", "a2", "a3"]
    b = [f"s{i}" for i in range(7)] + ["b1", "b2", "b3"]
    rng = np.random.default_rng(3)
    shown, record = interleaving.interleave("team_draft", [a[:5], b[:5]], 5, rng)
    assert record["teams"] == [-1] * 5
    shown, record = interleaving.extend(record, shown, [a, b], 10, rng)
    assert shown[:7] == a[:7] and record["teams"][:7] == [-1] * 7
    assert sorted(record["teams"][7:]) == [0, 0, 1] or sorted(record["teams"][7:]) == [0, 1, 1]


@pytest.mark.parametrize("method", METHODS)
def test_a_depth_already_shown_changes_nothing_and_nothing_repeats(method):
    m = 3 if method in MULTILEAVE_METHODS else 2
    lists = _lists(7, m, 10)
    rng = np.random.default_rng(7)
    shown, record = interleaving.interleave(method, lists, 10, rng)
    state = interleaving.rng_state(rng)
    same, same_record = interleaving.extend(record, shown, lists, 10, rng)
    assert (same, same_record) == (shown, record)
    assert interleaving.rng_state(rng) == state  # no draw
    # a ranker that now returns other documents: only new ones are added
    other = [[f"x{i}" for i in range(20)] for _ in range(m)]
    more, _ = interleaving.extend(record, shown, other, 20, rng)
    assert more[:10] == shown and all(d.startswith("x") for d in more[10:])


def test_extend_refuses_a_mismatched_record():
    lists = _lists(1, 2, 6)
    rng = np.random.default_rng(1)
    shown, record = interleaving.interleave("team_draft", lists, 6, rng)
    with pytest.raises(ValueError, match="participants"):
        get_method("team_draft").extend(record, shown, [*lists, lists[0]], 12, rng)
    with pytest.raises(ValueError, match="not 'probabilistic'"):
        get_method("probabilistic").extend(record, shown, lists, 12, rng)
    with pytest.raises(ValueError, match="describes 6"):
        interleaving.extend(record, shown[:3], lists, 12, rng)
    # records written before continuation existed cannot be continued
    for method, key in (("sosm", "teams"), ("balanced", "next")):
        shown, rec = interleaving.interleave(method, lists, 6, rng)
        del rec[key]
        with pytest.raises(ValueError, match="predates continuation"):
            interleaving.extend(rec, shown, lists, 12, rng)
        assert interleaving.credit(rec, [0]) is not None  # its credit still works


def test_the_generator_state_round_trips_through_json():
    import json

    rng = np.random.default_rng([12, 34, 1])
    rng.random(3)
    saved = json.loads(json.dumps(interleaving.rng_state(rng)))
    again = interleaving.rng_from_state(saved)
    assert again.random(5).tolist() == rng.random(5).tolist()
