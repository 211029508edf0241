"""A stored structure decodes to a policy that encodes it again, byte for byte: a hold's
resolution (:func:`service.credit.protocol.resolve_hold`) compares the policy's structure
after ``update()`` with the stored string to tell whether it moved, so a policy whose
round trip changed the string would bump ``sv`` (and refuse every worker's view) at
every hold."""

from __future__ import annotations

import numpy as np
import pytest

import bandits
from bandits.matrices import bradley_terry, non_condorcet
from service.store.snapshot import decode_bandit, encode_structure, encode_w

PAIRWISE = [n for n in bandits.ALGORITHMS if not bandits.get_algorithm(n).multi]


@pytest.mark.parametrize("name", PAIRWISE)
@pytest.mark.parametrize("matrix", ["bt8", "nc8"])
def test_stored_structure_round_trips(name: str, matrix: str) -> None:
    P = (bradley_terry(8, gap=0.05, seed=2) if matrix == "bt8"
         else non_condorcet(8, gap=0.05, upset=0.3, seed=1))
    b = bandits.make_bandit(name, 8, seed=1)
    env = np.random.default_rng(3)
    checked = 0
    for t in range(3000):
        i, j = b.select()[:2]
        b.update(i, j, float(env.random() < P[i, j]))
        if t % 149 == 0:
            stored = encode_structure(b)["state"]
            loaded = decode_bandit(encode_w(b), stored, b.n_updates, b.t)
            assert encode_structure(loaded)["state"] == stored, (name, t)
            checked += 1
    assert checked == 21
