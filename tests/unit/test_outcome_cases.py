"""How outcomes enter W: the rule (:mod:`bandits.outcomes`), a policy's own ``update_many``
and ``rankduel replay`` (:mod:`service.events.replay`, from a file in either export
format) against the one table of cases they share with the credit script and the hold's
writes (``bandits/outcome_cases.json``; the Redis side: tests/service/
test_outcome_cases_store.py). And ``rankduel replay`` prints, byte for byte, what it
printed before the rule was shared."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bandits
from bandits.outcomes import Tally, add, ties, writes
from cli.main import main
from service.events.export import writer
from service.events.replay import read, replay

CASES = json.loads((Path(__file__).resolve().parents[2] / "bandits"
                    / "outcome_cases.json").read_text())["cases"]
IDS = [c["name"] for c in CASES]


def pairs(d: dict) -> dict[tuple[int, int], float]:
    """The table's ``{"i:j": x}`` as ``{(i, j): x}``."""
    return {tuple(int(x) for x in key.split(":")): v for key, v in d.items()}


def matrix(by_pair: dict, k: int) -> list[list[float]]:
    out = np.zeros((k, k))
    for (i, j), x in pairs(by_pair).items():
        out[i, j] = x
    return out.tolist()


def events(cases: list[dict]) -> list[dict]:
    """An export's events for the impressions of ``cases``, in order: each impression's
    event, a click, its outcome event (as :func:`service.store.event_log.event` reads
    them)."""
    out = []
    for case in cases:
        for imp in case["impressions"]:
            n = len(out)
            out += [{"cursor": f"{n}-0", "type": "impression", "id": f"e.{n}",
                     "seg": imp["seg"]},
                    {"cursor": f"{n}-1", "type": "click", "id": f"e.{n}", "positions": [0],
                     "dwell": {}},
                    {"cursor": f"{n}-2", "type": "outcome", "id": f"e.{n}",
                     "mark": {"status": "credited" if imp["outcomes"] else "no_clicks",
                              "outcomes": imp["outcomes"], "t": n},
                     "seg": imp["seg"]}]
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_rule_adds_as_the_table_says(case):
    t = Tally()
    for imp in case["impressions"]:
        t.add(imp["outcomes"], imp["seg"])
    assert t.k == case["k"]
    assert t.matrix().tolist() == case["W"]  # exactly: the shares are dyadic
    assert t.total.ties == pairs(case["ties"])
    assert (t.total.n, t.outcomes) == (case["n"], case["outcomes"])
    assert set(t.labels) == set(case["segments"])
    for label, want in case["segments"].items():
        got = t.labels[label]
        assert (got.W, got.ties, got.n) == (pairs(want["W"]), pairs(want["ties"]), want["n"])
    # the parts agree with the tally: add() on a matrix, writes() and ties() one by one
    W = np.zeros((case["k"], case["k"]))
    for imp in case["impressions"]:
        add(W, imp["outcomes"])
    assert W.tolist() == case["W"]
    every = [o for imp in case["impressions"] for o in imp["outcomes"]]
    assert all(x != 0 for _, _, x in writes(every))
    assert len(ties(every)) == sum(case["ties"].values())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_policys_update_writes_the_same_w(case):
    # the hold's transaction writes W through the policy's own update (bandits/base.py);
    # an impression without outcomes is no update (service.credit.step)
    b = bandits.make_bandit("uniform", case["k"], seed=0)
    for imp in case["impressions"]:
        if imp["outcomes"]:
            b.update_many(imp["outcomes"])
    assert b.W.tolist() == case["W"] and b.n_updates == case["n"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_replay_of_an_export_gives_the_tables_w(case, fmt, tmp_path):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / f"events.{fmt}"
    write, close = writer(fmt, out)
    write(events([case]))
    close()
    got = replay(read(out))
    assert got["arms"] == case["k"] and got["W"] == case["W"]
    assert got["outcomes"] == case["outcomes"]
    # replay shows a label that saw a comparison of two arms (the store keeps its n too)
    want: dict[str, dict[str, list]] = {}
    for label, counts in sorted(case["segments"].items()):
        if counts["W"]:
            dim, _, value = label.partition("=")
            want.setdefault(dim, {})[value] = matrix(counts["W"], case["k"])
    assert got["segment_W"] == want


#: ``rankduel replay``'s output for the impressions of every case in one log, as printed
#: before the rule moved out of the command (its output is a contract: byte for byte)
PRINTED = (
    '{"arms": 4, "W": [[0.0, 7.25, 1.5, 1.0], [5.75, 0.0, 1.0, 1.0], [2.5, 1.0, 0.0, 0.0], '
    '[0.0, 0.0, 0.0, 0.0]], "segment_W": {"device": {"desktop": [[0.0, 1.0, 0.5, 0.0], '
    '[2.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], "mobile": [[0.0, '
    '5.75, 0.5, 0.0], [3.25, 0.0, 0.0, 0.0], [0.5, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], '
    '"other": [[0.0, 0.5, 0.0, 1.0], [0.5, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, '
    '0.0, 0.0]]}, "market": {"de": [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, '
    '0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], "fr": [[0.0, 0.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0], '
    '[1.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], "us": [[0.0, 1.5, 0.5, 1.0], [0.5, 0.0, '
    '0.0, 1.0], [0.5, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]}}, "outcomes": 25}\n')


def test_replay_prints_what_it_printed_before(tmp_path, capsys):
    out = tmp_path / "all.jsonl"
    out.write_text("".join(json.dumps(e) + "\n" for e in events(CASES)))
    assert main(["replay", str(out)]) == 0
    assert capsys.readouterr().out == PRINTED


def test_the_table_can_tell_the_implementations_apart():
    every = [(o, imp) for c in CASES for imp in c["impressions"] for o in imp["outcomes"]]
    shares = {o[2] for o, _ in every}
    assert {0.0, 0.5, 1.0} < shares and shares - {0.0, 0.5, 1.0}  # and a fraction
    assert any(o[0] == o[1] and o[2] == 0.5 for o, _ in every)  # i == j, as a tie
    assert any(len({tuple(sorted(o[:2])) for o in imp["outcomes"]}) < len(imp["outcomes"])
               for c in CASES for imp in c["impressions"])  # one pair twice in an impression
    assert any(not imp["outcomes"] and imp["seg"] for c in CASES for imp in c["impressions"])
    assert any(len(c["segments"]) > 1 for c in CASES)
    for c in CASES:  # every case uses its last arm, so replay's K is the case's
        assert c["k"] == 1 + max(a for imp in c["impressions"] for o in imp["outcomes"]
                                 for a in o[:2]), c["name"]

    # and a wrong rule does contradict it: each of these disagrees with some case
    def total(case, rule):
        W = np.zeros((case["k"], case["k"]))
        for imp in case["impressions"]:
            rule(W, imp["outcomes"])
        return W.tolist()

    def self_too(W, outcomes):  # i == j adds as well
        for i, j, s in outcomes:
            W[i, j] += s
            W[j, i] += 1 - s

    def last_wins(W, outcomes):  # one impression's outcomes read W once (no running sum)
        base = W.copy()
        for i, j, s in outcomes:
            if i != j:
                W[i, j], W[j, i] = base[i, j] + s, base[j, i] + 1 - s

    def swapped(W, outcomes):  # s credited to j
        add(W, [(j, i, s) for i, j, s in outcomes])

    for rule in (self_too, last_wins, swapped):
        assert any(total(c, rule) != c["W"] for c in CASES), rule.__name__
