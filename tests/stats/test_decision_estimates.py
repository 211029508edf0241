"""``rankduel simulate --estimate``: a seeded run of MergeMED on 6 arms records the
estimated comparisons to a decision at each checkpoint, changes nothing else in the run,
and the command writes them per run.

A long run of pure code (20,000 steps, three times), so in the stats tier
(``scripts/test stats``); the decision module itself is checked in
tests/unit/test_decision.py.
"""

from __future__ import annotations

import json

import numpy as np

from bandits.matrices import bradley_terry
from bandits.simulator import simulate_run


def test_simulate_records_the_estimate_at_each_checkpoint(tmp_path):
    P = bradley_terry(6, gap=0.1, seed=3)
    res = simulate_run(P, "mergemed", 20000, seed=1, estimate=True)
    assert len(res.estimates) == res.checkpoints.size
    assert res.estimates[-1] == 0 and any(e and e > 0 for e in res.estimates)
    plain = simulate_run(P, "mergemed", 20000, seed=1)
    assert plain.estimates is None and plain.regret.tolist() == res.regret.tolist()
    from cli.main import main

    np.savetxt(tmp_path / "P.txt", P)
    out = tmp_path / "out"
    assert main(["simulate", "--matrix", str(tmp_path / "P.txt"), "--algorithm", "mergemed",
                 "--steps", "20000", "--out", str(out), "--estimate"]) == 0
    run0 = json.loads((out / "summary.json").read_text())["per_run"][0]
    assert len(run0["estimated_comparisons_to_decide"]) == len(
        json.loads((out / "summary.json").read_text())["checkpoints"])
