"""The heterogeneity flag of the report per segment (service.reports.segments), seeded
offline runs of its counts:

* **false flags**: where no segment value prefers another ranker to the champion, the
  report read every 200 comparisons for 6,000 comparisons (30 looks: its bounds are
  anytime-valid) flags something, ever, in at most 5 % of the runs (δ = 0.05; the
  Bonferroni-corrected anytime bound makes it far rarer), at the hardest null (every
  ranker exactly as good as the champion in every value) and at a plain one;
* **power**: where mobile users prefer ranker 1 (p = 0.75 against the champion), the
  flag is raised by 6,000 comparisons in at least 90 % of the runs, and names mobile.

The champion is fixed (arm 0): the flag's guarantee is over the values × rankers tested
against whichever champion the policy names.
"""

from __future__ import annotations

import numpy as np

from service.reports.segments import per_segment

DIMS = {"device": ["mobile", "desktop", "other"], "market": ["de", "fr", "us", "other"]}
DEVICE_P = [0.45, 0.45, 0.10]
MARKET_P = [0.3, 0.3, 0.3, 0.1]
PAIRS = np.array([(0, 1), (0, 2), (1, 2)])
NAMES = {0: "c", 1: "r1", 2: "r2"}
N, LOOK, RUNS = 6000, 200, 200


def run(rng, p_beats_champion) -> list[dict]:
    """One run's flags at each look; ``p_beats_champion(arm, device)`` is the chance
    that ``arm`` beats the champion for a user of that device (r1 vs r2: ½).

    The counts of each look are those of the comparisons before it: the running sums of
    the blocks of ``LOOK`` comparisons (sums of 0, ½ and 1, so exact), not a recount of
    the prefix at every look."""
    pair = PAIRS[rng.integers(0, 3, N)]
    dev = rng.choice(3, N, p=DEVICE_P)
    mkt = rng.choice(4, N, p=MARKET_P)
    u = rng.random(N)
    tie = rng.random(N) < 0.1
    # s: the outcome for the pair's first arm (the champion in pairs (0, r))
    p_arm = np.array([[1 - p_beats_champion(j, d) for d in range(3)] for j in range(3)])
    p_first = np.where(pair[:, 0] == 0, p_arm[pair[:, 1], dev], 0.5)
    s = np.where(tie, 0.5, (u < p_first).astype(float))
    # per dimension: each comparison's cell (value, first arm, second arm), and the
    # running W (value × 3 × 3) and tie counts
    cells = {"device": dev * 9 + pair[:, 0] * 3 + pair[:, 1],
             "market": mkt * 9 + pair[:, 0] * 3 + pair[:, 1]}
    W = {dim: np.zeros((len(vals), 3, 3)) for dim, vals in DIMS.items()}
    T = {dim: np.zeros((len(vals), 3, 3), dtype=np.int64) for dim, vals in DIMS.items()}
    looks = []
    for end in range(LOOK, N + 1, LOOK):
        block = slice(end - LOOK, end)
        for dim, vals in DIMS.items():
            size = len(vals) * 9
            c = cells[dim][block]
            won = np.bincount(c, weights=s[block], minlength=size).reshape(-1, 3, 3)
            lost = np.bincount(c, weights=1 - s[block], minlength=size).reshape(-1, 3, 3)
            W[dim] += won + lost.transpose(0, 2, 1)
            T[dim] += np.bincount(c[tie[block]], minlength=size).reshape(-1, 3, 3)
        mats = {dim: {name: W[dim][v].copy() for v, name in enumerate(vals)}
                for dim, vals in DIMS.items()}
        ties = {f"{dim}={name}": {(int(i), int(j)): int(T[dim][v, i, j]) for i, j in PAIRS}
                for dim, vals in DIMS.items() for v, name in enumerate(vals)}
        looks.append(per_segment(DIMS, mats, ties, 0, [1, 2], NAMES)["heterogeneous"])
    return looks


def flagged_runs(p_beats_champion, seed) -> list[list[dict]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(RUNS):
        looks = run(rng, p_beats_champion)
        out.append(next((f for f in looks if f), []))
    return out


def test_no_segment_differs_flags_at_most_5_percent_of_runs():
    for p, seed in ((lambda arm, dev: 0.5, 11), (lambda arm, dev: 0.45, 12)):
        flags = flagged_runs(p, seed)
        rate = sum(bool(f) for f in flags) / RUNS
        assert rate <= 0.05, rate


def test_a_segment_that_prefers_another_ranker_is_flagged_and_named():
    flags = flagged_runs(lambda arm, dev: 0.75 if (arm, dev) == (1, 0) else 0.4, 13)
    hits = [f for f in flags if f]
    assert len(hits) >= 0.9 * RUNS, len(hits)
    assert all({"dimension": "device", "value": "mobile", "ranker": "r1"}.items()
               <= f[0].items() for f in hits)
