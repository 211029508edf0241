"""``rankduel judge simulate`` and ``rankduel judge evaluate``: the documented contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli.main import main as cli
from judging.evaluate import evaluate, mrr, parse_qrels, parse_run

FIELDS = {"best_found", "one_found", "both_found", "returned_mean", "judgments_min",
          "judgments_max", "assessors_per_pair_max"}


def test_simulate_case_writes_the_documented_summary(tmp_path, capsys):
    out = tmp_path / "sim"
    rc = cli(["judge", "simulate", "--case", "B", "--items", "16", "--algorithm",
              "prefbest,recommended", "--budget", "200", "--runs", "4", "--seed", "5",
              "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "summary.json").read_text())
    assert set(doc["algorithms"]) == {"prefbest", "recommended"}
    for s in doc["algorithms"].values():
        assert set(s) >= FIELDS
        assert s["runs"] == 4 and s["judgments_max"] <= 200
        assert s["assessors_per_pair_max"] <= 10
        assert 0 <= s["both_found"] <= s["best_found"] <= 4
    assert doc["winners"] == [0, 1] and doc["K"] == 16 and doc["budget"] == 200
    runs = json.loads((out / "runs.json").read_text())
    assert len(runs["prefbest"]) == 4
    table = capsys.readouterr().out
    assert "prefbest" in table and "recommended" in table and "comparisons" in table


def test_simulate_matrix_with_winners_and_params(tmp_path, capsys):
    K = 12
    P = np.full((K, K), 0.5)
    P[3, :] = 0.9
    P[:, 3] = 0.1
    P[3, 3] = 0.5
    path = tmp_path / "P.txt"
    np.savetxt(path, P)
    out = tmp_path / "m"
    rc = cli(["judge", "simulate", "--matrix", str(path), "--winners", "3", "--algorithm",
              "prefbest_extra,gauntlet", "--param", "gauntlet.n0=4", "--budget", "300",
              "--runs", "3", "--seed", "1", "--out", str(out), "--jobs", "2"])
    assert rc == 0
    doc = json.loads((out / "summary.json").read_text())
    assert doc["winners"] == [3] and doc["params"]["gauntlet"] == {"n0": 4}
    assert doc["algorithms"]["gauntlet"]["contains_winner"] >= 2  # 0.9 is easy to see


@pytest.mark.parametrize("argv", [
    ["--case", "A", "--algorithm", "nosuch"],
    ["--case", "A", "--matrix", "x.txt", "--algorithm", "prefbest"],
    ["--algorithm", "prefbest"],
    ["--case", "A", "--algorithm", "prefbest", "--param", "nope=1"],
])
def test_simulate_rejects_bad_input(tmp_path, capsys, argv):
    rc = 2
    try:
        rc = cli(["judge", "simulate", *argv, "--runs", "1", "--out", str(tmp_path)])
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    assert rc == 2


# ---------------------------------------------------------------------- evaluate
QRELS = """\
q1 0 a 1
q1 0 b 0
q2 0 c 2
q2 0 d 1
q3 0 z 1
"""
RUN_GOOD = """\
q1 Q0 a 1 9.0 good
q1 Q0 b 2 8.0 good
q2 Q0 x 1 9.0 good
q2 Q0 d 2 8.0 good
q3 Q0 y 1 5.0 good
q3 Q0 z 2 5.0 good
"""
RUN_BAD = """\
q1 Q0 b 1 9.0 bad
q1 Q0 y 2 8.0 bad
q1 Q0 a 3 7.0 bad
q2 Q0 c 1 3.0 bad
"""


def test_mrr_by_hand():
    q = parse_qrels(QRELS.splitlines())
    assert q == {"q1": {"a"}, "q2": {"c", "d"}, "q3": {"z"}}
    good = parse_run(RUN_GOOD.splitlines())
    # q3: z and y tie at 5.0 -> trec_eval order is by docid descending: z before y
    assert good["q3"] == ["z", "y"]
    # good: q1 rank 1, q2 first best at rank 2, q3 rank 1 -> (1 + 1/2 + 1) / 3
    assert mrr(good, q) == pytest.approx(2.5 / 3)
    bad = parse_run(RUN_BAD.splitlines())
    # bad: q1 rank 3, q2 rank 1, q3 missing -> (1/3 + 1 + 0) / 3
    assert mrr(bad, q) == pytest.approx((1 / 3 + 1) / 3)
    assert mrr(good, q, depth=1) == pytest.approx(2 / 3)
    assert [s.name for s in evaluate({"bad": bad, "good": good}, q)] == ["good", "bad"]


def test_evaluate_cli(tmp_path, capsys):
    (tmp_path / "best.qrels").write_text(QRELS)
    (tmp_path / "good.trec").write_text(RUN_GOOD)
    (tmp_path / "bad.trec").write_text(RUN_BAD)
    rc = cli(["judge", "evaluate", "--qrels", str(tmp_path / "best.qrels"),
              "--run", str(tmp_path / "bad.trec"), "--run", str(tmp_path / "good.trec")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "good.trec" in out and "0.8333" in out and "0.4444" in out
    assert "ordering: good.trec > bad.trec" in out
    rc = cli(["judge", "evaluate", "--qrels", str(tmp_path / "best.qrels"),
              "--run", str(tmp_path / "good.trec"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["ordering"] == ["good.trec"] and doc["runs"][0]["answered"] == 3
