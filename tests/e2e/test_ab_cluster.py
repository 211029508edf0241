"""The A/B counters and the split counts on a real Redis Cluster (3 masters): every
script touches the keys of one hash tag (an experiment's, a placement's), so each runs on
one shard; the moments match the Python's, and a placement's users count once."""

from __future__ import annotations

import secrets

import pytest

from rollout.ab import Moments, UserCounts
from service.store import Store
from service.store.client import connect
from service.store.keys import exp_key, new_impression_id


@pytest.fixture(scope="module")
def cluster_store(stack):
    client = connect(stack.start_redis_cluster(3), cluster=True)
    yield Store(client)
    client.close()


def test_ab_counts_and_splits_on_a_cluster(cluster_store):
    store = cluster_store
    users = {}
    for _ in range(12):  # experiments spread over the shards
        exp = secrets.token_hex(6)
        store.r.hset(exp_key(exp), "meta", "{}")
        imps = []
        for u in range(5):
            imp = new_impression_id(exp)
            assert store.ab.save_ab_search(imp, exp_id=exp, t=u, arm=u % 2, user=f"u{u}",
                                           shown=["d"], urls=[None], token_expires=10**10,
                                           ttl_s=600, counters={"impressions": 1})
            imps.append(imp)
        assert store.ab.ab_click(exp, imps[0]) == 1 and store.ab.ab_click(exp, imps[0]) == 0
        got = store.ab.ab_moments(exp)
        want = Moments.of([UserCounts(1, 1).values()["ctr"]] + [0.0] * 2)
        assert Moments.from_json(got[0]["ctr"]) == want
        users[exp] = got
    for n in range(6):  # placements spread over the shards
        name = f"c{n}-{secrets.token_hex(2)}"
        pipe = store.pipeline(transaction=False)
        store.splits.record_period(pipe, name, 1, {"e": 0.5, "control": 0.5})
        pipe.execute()
        assert store.splits.count_split(name, {(1, "e"): 2}, {(1, "e"): {"a", "b"}}) == 2
        assert store.splits.count_split(name, {(1, "control"): 1}, {(1, "control"): {"a"}}) == 0
        [period] = store.splits.split_counts(name)
        assert period["users"] == {"e": 2} and period["searches"] == {"e": 2, "control": 1}
