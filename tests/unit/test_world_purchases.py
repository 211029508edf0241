"""The demo world's purchases (:meth:`interleaving.world.World.add_purchases`): the clear
best ranker wins on relevance (clicks) and ranks bait, attractive documents that never
sell, high; the buyers' ranker demotes bait and sells more."""

import numpy as np

from demo.world_rankers import demo_world
from interleaving.world import World


def _sales(w: World, r: int, k: int = 3) -> tuple[float, float]:
    """Mean over queries of the bait share of ranker r's top k, and of the expected sales
    (purchase probability × relevance-ordered attention) of its top k."""
    top = w.top_k(k)[r].astype(int)
    q = np.arange(w.n_queries)[:, None]
    ok = top >= 0
    bait = np.where(ok, w.bait[q, np.maximum(top, 0)], False)
    buy = np.where(ok, w.buy_p[q, np.maximum(top, 0)], 0.0)
    return float(bait.mean()), float(buy.sum(axis=1).mean())


def test_the_buyers_ranker_loses_relevance_and_wins_sales():
    w = World(seed=1, n_rankers=12, n_queries=200, clear_best=True)
    nd_before = w.ndcg_all(10).copy()
    best = w.true_best
    buyers = w.add_purchases()
    assert w.true_best == best != buyers and w.kinds[buyers] == "buyers'"
    nd = w.ndcg_all(10)
    assert nd[buyers] < nd[best]
    others = [r for r in range(12) if r != buyers]
    assert np.array_equal(nd[others], nd_before[others])  # every other ranker unchanged
    bait_best, sales_best = _sales(w, best)
    bait_buyers, sales_buyers = _sales(w, buyers)
    assert bait_buyers == 0 < bait_best and sales_buyers > sales_best
    assert float(w.buy_p[w.bait].max()) == 0.0 and (w.price > 0).all()


def test_purchases_follow_clicks_and_the_model():
    w = demo_world(1, 12)
    rng = np.random.default_rng(0)
    q = 3
    ids = w.ranking(w.buyers, q, 10)
    bought = [w.purchases(q, ids, [0, 1, 2], rng) for _ in range(400)]
    assert all(d in ids[:3] for b in bought for d, _ in b)  # only what was clicked
    j = int(ids[0].rsplit("-d", 1)[1])
    rate = sum(any(d == ids[0] for d, _ in b) for b in bought) / 400
    assert abs(rate - w.buy_p[q, j]) < 0.08
    assert w.purchases(q, ids, [], rng) == []
    plain = World(seed=1, n_rankers=3, n_queries=5)
    assert plain.purchases(0, plain.ranking(0, 0, 3), [0], rng) == []
