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
    that ``arm`` beats the champion for a user of that device (r1 vs r2: ½)."""
    pair = PAIRS[rng.integers(0, 3, N)]
    dev = rng.choice(3, N, p=DEVICE_P)
    mkt = rng.choice(4, N, p=MARKET_P)
    u = rng.random(N)
    tie = rng.random(N) < 0.1
    # s: the outcome for the pair's first arm (the champion in pairs (0, r))
    p_first = np.array([1 - p_beats_champion(j, d) if i == 0 else 0.5
                        for (i, j), d in zip(pair, dev, strict=True)])
    s = np.where(tie, 0.5, (u < p_first).astype(float))
    looks = []
    for end in range(LOOK, N + 1, LOOK):
        mats = {"device": {v: np.zeros((3, 3)) for v in DIMS["device"]},
                "market": {v: np.zeros((3, 3)) for v in DIMS["market"]}}
        ties: dict[str, dict[tuple[int, int], int]] = {}
        for dim, idx in (("device", dev[:end]), ("market", mkt[:end])):
            for v, name in enumerate(DIMS[dim]):
                sel = idx == v
                W = mats[dim][name]
                np.add.at(W, (pair[:end][sel, 0], pair[:end][sel, 1]), s[:end][sel])
                np.add.at(W, (pair[:end][sel, 1], pair[:end][sel, 0]), 1 - s[:end][sel])
                t = ties.setdefault(f"{dim}={name}", {})
                for (i, j) in PAIRS:
                    t[int(i), int(j)] = int(np.sum(sel & tie[:end] & (pair[:end, 0] == i)
                                                   & (pair[:end, 1] == j)))
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
