"""The synthetic search world."""

from __future__ import annotations

import numpy as np
import pytest

from interleaving.world import World


def test_same_seed_same_world_different_seed_different_world():
    a, b, c = World(4, 10, n_queries=30), World(4, 10, n_queries=30), World(5, 10, n_queries=30)
    assert (a.order == b.order).all() and (a.grade_table == b.grade_table).all()
    assert a.ranking(3, 7, 10) == b.ranking(3, 7, 10)
    assert not (a.grade_table.shape == c.grade_table.shape
                and (a.grade_table == c.grade_table).all())


def test_rankings_are_unique_ids_of_the_query_and_short_when_the_query_is():
    w = World(1, 5, n_queries=40, docs_per_query=(3, 15))
    for q in range(40):
        n = int(w.n_docs[q])
        for r in range(5):
            docs = w.ranking(r, q, 10)
            assert len(docs) == len(set(docs)) == min(10, n)
            assert all(d.startswith(f"q{q}-d") for d in docs)
            g = w.grades(q, docs)
            assert g.min() >= 0 and g.max() <= 4
    top = w.top_k(10)
    assert top.shape == (5, 40, 10)
    assert ((top >= 0).sum(axis=2) == np.minimum(10, w.n_docs)[None, :]).all()


def test_every_query_has_a_relevant_document():
    w = World(2, 3, n_queries=300, docs_per_query=(1, 4))
    assert (w.grade_table.max(axis=1) >= 1).all()


def test_grades_reject_documents_of_other_queries():
    w = World(1, 2, n_queries=5)
    with pytest.raises(ValueError):
        w.grades(0, ["q1-d0"])
    with pytest.raises(ValueError):
        w.grades(0, [f"q0-d{int(w.n_docs[0])}"])
    with pytest.raises(ValueError):
        w.ranking(2, 0)
    with pytest.raises(ValueError):
        w.query_text(5)


def test_query_texts_are_distinct_and_round_trip():
    w = World(3, 2, n_queries=2000)  # more queries than word pairs: numbered texts
    texts = [w.query_text(q) for q in range(2000)]
    assert len(set(texts)) == 2000
    assert all(w.query_id(t) == q for q, t in enumerate(texts))
    assert w.query_id("  " + texts[5].upper() + " ") == 5
    assert w.query_id("no such query at all") is None


def test_ndcg_is_in_range_and_ranks_quality():
    w = World(6, 30, n_queries=100)
    nd = w.ndcg_all(10)
    assert ((nd > 0) & (nd <= 1)).all()
    uninf = [r for r in range(30) if w.kinds[r] == "uninformative"]
    informative = [r for r in range(30) if w.beta[r] > 0.5]
    assert uninf and informative
    assert nd[uninf].max() < nd[informative].min()
    assert w.true_best == int(np.argmax(nd))
    assert w.ndcg(w.true_best) == pytest.approx(nd.max())


def test_ndcg_of_an_ideal_ranking_is_one():
    w = World(1, 1, n_queries=20)
    ideal = np.argsort(-w.grade_table, axis=1, kind="stable")
    w.order = ideal[None].astype(np.int16)
    w._ndcg_cache.clear()
    assert w.ndcg(0) == pytest.approx(1.0)


def test_near_tied_rankers_are_near_copies():
    w = World(7, 40, n_queries=50)
    tied = [r for r in range(40) if w.kinds[r].startswith("near-tie of")]
    assert tied
    nd = w.ndcg_all(10)
    for r in tied:
        src = int(w.kinds[r].split()[-1])
        assert w.beta[r] == w.beta[src]
        assert abs(nd[r] - nd[src]) < 0.05
        same_top = np.mean([w.ranking(r, q, 1) == w.ranking(src, q, 1) for q in range(50)])
        assert same_top > 0.5


def test_clear_best_is_clearly_best():
    w = World(9, 20, clear_best=True)
    nd = np.sort(w.ndcg_all(10))
    assert w.kinds[w.true_best] == "clear best"
    assert nd[-1] - nd[-2] > 0.05


def test_from_spec_and_repr():
    w = World.from_spec("12:4", n_queries=10)
    assert (w.seed, w.n_rankers, w.n_queries) == (12, 4, 10)
    for bad in ("12", "a:b", "1:2:3"):
        with pytest.raises(ValueError, match="SEED:K"):
            World.from_spec(bad)
    text = repr(w)
    assert text.startswith("World(seed=12, rankers=4") and "NDCG@10" in text


def test_sample_query_is_uniform():
    w = World(1, 2, n_queries=4)
    rng = np.random.default_rng(0)
    counts = np.bincount([w.sample_query(rng) for _ in range(8000)], minlength=4)
    # 2,000 expected per query: SE ~ 39; 200 is ~5 SE
    assert np.abs(counts - 2000).max() < 200
