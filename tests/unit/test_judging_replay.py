"""An excluded assessor's judgments drop out retroactively (Yan 2022, §5.1), pure: the
campaign logic of :mod:`judging.campaign` driven the way the service drives it (a task's
rng from the campaign seed and task number, the pairs an assessor judged remembered at
submission), with simulated assessors and fixed seeds.

The scenario: good assessors (right 90 % of the time) and a *turncoat* who answers the
test pairs of their first two tasks right and every target pair wrong, then fails the test
pairs of the third task (6 of 9 right < 75 %) and is excluded. One good assessor's task
is still out when that happens; it comes back after the rebuild.
"""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest

from judging import judge_from_state
from judging.campaign import (
    PASS_RATE,
    apply_task,
    make_task,
    new_campaign,
    replay,
    summary,
)

K = 16  # the gauntlet's opening pairs every item with six others: 48 opening pairs


def pools(n_queries: int = 2) -> list[dict]:
    """Items ``q<k>-<n>`` of a planted order (``n`` = rank = the item's class index)."""
    out = []
    for k in range(n_queries):
        items = [{"id": f"q{k}-{n}", "text": f"answer {n} to question {k}"} for n in range(K)]
        tests = [{"better": {"id": f"q{k}-0", "text": "x"},
                  "worse": {"id": f"off-{k}-{t}", "text": f"soup #{t}"}} for t in range(4)]
        out.append({"id": f"Q{k}", "text": f"question {k}", "items": items,
                    "test_pairs": tests})
    return out


def campaign(algorithm: str = "recommended") -> dict:
    return new_campaign(pools(), algorithm=algorithm, seed=5,
                        params={"budget": 300, "max_per_pair": 3})


def answers(task: dict, rng: np.random.Generator, *, targets_right: float,
            tests_right: bool) -> dict[int, dict]:
    """``pair -> {"choice"}``: test pairs right or wrong, target pairs right with
    probability ``targets_right`` (the planted order: the lower class index is better)."""
    out = {}
    for p in task["pairs"]:
        # the first of a test pair is its better item; of a target pair (i < j), i
        first_left = tests_right if p["test"] else bool(rng.random() < targets_right)
        out[p["pair"]] = {"choice": "left" if first_left != p["swap"] else "right",
                          "no_difference": bool(rng.random() < 0.1)}
    return out


class Campaign:
    """The service's calls on a pure state; ``roundtrip`` passes the state (and the tasks
    out) through JSON between every two calls, as Redis does."""

    def __init__(self, state: dict, *, roundtrip: bool = False) -> None:
        self.state = state
        self.roundtrip = roundtrip
        self.judged: dict[str, set[str]] = {}
        self.out: dict[str, tuple[dict, dict]] = {}  # task id -> (task, answers) not applied

    def _rt(self) -> None:
        if self.roundtrip:
            self.state = json.loads(json.dumps(self.state))
            self.out = json.loads(json.dumps(self.out))
            for tid, (task, ans) in self.out.items():
                self.out[tid] = (task, {int(k): v for k, v in ans.items()})

    def add(self, who: str) -> None:
        from judging.campaign import new_assessor

        self.state["assessors"][who] = new_assessor()
        self.judged[who] = set()

    def task(self, who: str) -> tuple[str, dict] | None:
        self._rt()
        rng = np.random.default_rng([self.state["seed"], self.state["task_seq"]])
        task = make_task(self.state, who, self.judged[who], rng)
        if task is None:
            return None
        return f"t{self.state['task_seq']}", task

    def submit(self, tid: str, task: dict, ans: dict) -> None:
        self.judged[task["assessor"]] |= {f"{p['query']}:{p['i']}:{p['j']}"
                                          for p in task["pairs"] if not p["test"]}
        self.out[tid] = (task, ans)

    def apply(self, tid: str) -> dict:
        self._rt()
        task, ans = self.out.pop(tid)
        return apply_task(self.state, task, ans)


def kept_entries(query: dict, excluded: set[str]) -> list[list]:
    """Log entries the judge should hold: not by an excluded assessor, not banked."""
    banked = {idx for idxs in query["bank"].values() for idx in idxs}
    return [e for idx, e in enumerate(query["log"])
            if e[0] not in excluded and idx not in banked]


def check_consistent(c: Campaign) -> None:
    """Each judge holds exactly the kept judgments (W, N, D checked pair by pair, against
    the log, not through the replay), its pending pairs are exactly the target pairs of
    the tasks out since its last rebuild, and the per-assessor counts add up."""
    state = c.state
    excluded = {a for a, r in state["assessors"].items() if r["excluded"]}
    out_pending: dict[str, dict[tuple[int, int], int]] = {}
    for task, _ans in c.out.values():
        for p in task["pairs"]:
            if not p["test"] and p["gen"] == state["queries"][p["query"]]["gen"]:
                pend = out_pending.setdefault(p["query"], {})
                pend[(p["i"], p["j"])] = pend.get((p["i"], p["j"]), 0) + 1
    total = banked = 0
    for qid, query in state["queries"].items():
        judge = judge_from_state(query["judge"])
        W, N, D = np.zeros((K, K)), np.zeros((K, K), int), np.zeros((K, K), int)
        for who, i, j, s, nd in kept_entries(query, excluded):
            assert who not in excluded
            W[i, j] += s
            W[j, i] += 1 - s
            N[i, j] += 1
            N[j, i] += 1
            D[i, j] += nd
            D[j, i] += nd
        np.testing.assert_array_equal(judge.W, W)
        np.testing.assert_array_equal(judge.N, N)
        np.testing.assert_array_equal(judge.D, D)
        assert judge.n_judgments == N.sum() // 2
        assert judge.pending == out_pending.get(qid, {})
        total += judge.n_judgments
        banked += sum(len(v) for v in query["bank"].values())
        for idxs in query["bank"].values():
            assert all(query["log"][idx][0] not in excluded for idx in idxs)
    records = state["assessors"]
    assert total == sum(r["judgments"] for r in records.values())
    assert banked == sum(r["banked"] for r in records.values())
    for a in excluded:
        assert records[a]["judgments"] == records[a]["banked"] == 0
        assert records[a]["correct"] < PASS_RATE * records[a]["answered"]


GOOD = [f"g{n}" for n in range(6)]
TURNCOAT = "turncoat"


def run(algorithm: str = "recommended", *, roundtrip: bool = False, check: bool = True,
        rounds: int = 60) -> tuple[Campaign, dict]:
    """The scenario of the module docstring; returns the campaign and what was seen."""
    c = Campaign(campaign(algorithm), roundtrip=roundtrip)
    rng = np.random.default_rng(11)
    for a in [TURNCOAT, *GOOD]:
        c.add(a)
    seen: dict = {"turncoat_tasks": 0, "turncoat_targets": 0}
    for rnd in range(rounds):
        active = 0
        for a in [TURNCOAT, *GOOD]:
            if c.state["assessors"][a]["excluded"]:
                continue
            got = c.task(a)
            if got is None:
                continue
            active += 1
            tid, task = got
            if a == TURNCOAT:
                seen["turncoat_tasks"] += 1
                seen["turncoat_targets"] += sum(not p["test"] for p in task["pairs"])
                ans = answers(task, rng, targets_right=0.0,
                              tests_right=seen["turncoat_tasks"] <= 2)
            else:
                ans = answers(task, rng, targets_right=0.9, tests_right=True)
            c.submit(tid, task, ans)
            if a == "g0" and rnd == 1:
                seen["held"] = tid  # g0's second task stays out until after the exclusion
                continue
            if a == TURNCOAT and seen["turncoat_tasks"] == 3:
                seen["before"] = json.loads(json.dumps(c.state))
            res = c.apply(tid)
            if a == TURNCOAT and seen["turncoat_tasks"] == 3:
                seen["exposed"] = res
                seen["after"] = json.loads(json.dumps(c.state))
            if check:
                check_consistent(c)
        if rnd == 3:  # the held task comes back: made before the rebuild
            seen["bank_before_held"] = json.loads(json.dumps(c.state))
            seen["held_result"] = c.apply(seen["held"])
            seen["after_held"] = json.loads(json.dumps(c.state))
            if check:
                check_consistent(c)
        if not active and rnd > 3:  # (before: waiting for the held task, perhaps)
            break
    return c, seen


@functools.cache
def checked_run(algorithm: str) -> tuple[Campaign, dict]:
    """:func:`run` with every step checked, once per algorithm for the module (the tests
    only read it: what they change, they copy first)."""
    return run(algorithm)


@pytest.mark.parametrize("algorithm", ["recommended", "prefbest"])
def test_an_excluded_assessors_judgments_leave_every_judge(algorithm):
    c, seen = checked_run(algorithm)
    before, after, res = seen["before"], seen["after"], seen["exposed"]
    t_before = before["assessors"][TURNCOAT]
    # the turncoat passed two tasks and their (always wrong) judgments were in the judges
    assert t_before["correct"] == t_before["answered"] == 6
    assert t_before["judgments"] >= 10 and not t_before["excluded"]
    held_in = sum(judge_from_state(q["judge"]).n_judgments for q in before["queries"].values())
    assert held_in > 0
    # the third task exposes them: all their judgments go, and every query they touched
    # is rebuilt
    assert res["status"] == "excluded" and res["tests_right"] == 0
    t_after = after["assessors"][TURNCOAT]
    assert t_after["excluded"] and t_after["judgments"] == t_after["banked"] == 0
    assert t_after["dropped"] == seen["turncoat_targets"] == res["dropped"]
    touched = [qid for qid, q in before["queries"].items()
               if any(e[0] == TURNCOAT for e in q["log"])]
    assert touched and res["rebuilt"] == touched
    for qid in touched:
        q = after["queries"][qid]
        assert q["gen"] == q["rebuilds"] == 1
        # the rebuilt judge is the replay of the others' judgments from the judge's seed
        others = [e for e in q["log"] if e[0] != TURNCOAT]
        judge, bank = replay(algorithm, K, q["judge_seed"], after["params"], others)
        rebuilt = judge_from_state(q["judge"])
        np.testing.assert_array_equal(rebuilt.W, judge.W)
        np.testing.assert_array_equal(rebuilt.N, judge.N)
        assert rebuilt.n_pending == 0 and rebuilt.n_judgments == judge.n_judgments
        assert sum(map(len, bank.values())) == sum(map(len, q["bank"].values()))
        # nothing of the turncoat's in N: the kept judgments of each pair are all there is
        kept = kept_entries(q, {TURNCOAT})
        assert rebuilt.N.sum() // 2 == len(kept)
        for i, j in zip(*np.nonzero(np.triu(rebuilt.N)), strict=True):
            mine = [e for e in kept if (e[1], e[2]) == (i, j)]
            assert rebuilt.N[i, j] == len(mine)
            assert rebuilt.W[i, j] == sum(e[3] for e in mine)
    # the campaign goes on to its end without them (check_consistent ran at every step)
    s = summary(c.state)
    assert s["done"], s["queries"]
    assert s["assessors"][TURNCOAT]["judgments"] == 0
    assert all(s["assessors"][a]["dropped"] == 0 for a in GOOD)
    for k in range(2):  # the planted best is found, the turncoat's lies gone
        assert f"q{k}-0" in s["queries"][f"Q{k}"]["best"], s["queries"][f"Q{k}"]


def test_a_task_made_before_a_rebuild_is_banked_and_used_when_asked_for():
    _, seen = checked_run("recommended")
    before, after, res = seen["bank_before_held"], seen["after_held"], seen["held_result"]
    held = seen["held"]
    assert res["status"] == "kept" and res["recorded"] == 0 and res["banked"] >= 1
    # every pair of the held task was made in generation 0 and its queries were rebuilt
    n_targets = res["banked"]
    g0 = after["assessors"]["g0"]
    assert g0["banked"] - before["assessors"]["g0"]["banked"] == n_targets
    for qid, q in after["queries"].items():  # nothing recorded in the judges
        assert q["judge"]["N"] == before["queries"][qid]["judge"]["N"]
    banked = [(qid, q["log"][idx]) for qid, q in after["queries"].items()
              for idxs in q["bank"].values() for idx in idxs if q["log"][idx][0] == "g0"]
    assert len(banked) >= n_targets, held
    # from here on, each task made: a pair the judge asks for that the bank can answer is
    # recorded from it and not handed out; replay the campaign step by step to watch
    c2 = Campaign(json.loads(json.dumps(after)))
    used = 0
    rng = np.random.default_rng(3)
    for _round in range(40):
        for a in GOOD:
            bank0 = {qid: {k: list(v) for k, v in q["bank"].items()}
                     for qid, q in c2.state["queries"].items()}
            n0 = {qid: np.array(q["judge"]["N"]) for qid, q in c2.state["queries"].items()}
            c2.judged[a] = set()  # anyone may get any pair: only the bank keeps one back
            got = c2.task(a)
            if got is None:
                continue
            tid, task = got
            for qid, q in c2.state["queries"].items():
                took: dict[tuple[int, int], int] = {}
                for key, idxs in bank0[qid].items():
                    left = len(q["bank"].get(key, []))
                    if left < len(idxs):
                        i, j = map(int, key.split(":"))
                        took[(i, j)] = len(idxs) - left
                        assert q["bank"].get(key, []) == idxs[len(idxs) - left:]  # FIFO
                dN = np.array(q["judge"]["N"]) - n0[qid]
                for (i, j), n in took.items():
                    assert dN[i, j] == n  # recorded in the judge at once
                    used += n
                assert dN.sum() // 2 == sum(took.values())  # nothing else recorded
                # a pair is handed out only when the bank has no judgment of it (the judge
                # may want one more of a pair it just got from the bank, within the cap)
                for p in task["pairs"]:
                    if not p["test"] and p["query"] == qid:
                        assert f"{p['i']}:{p['j']}" not in q["bank"], p
            c2.submit(tid, task, answers(task, rng, targets_right=0.9, tests_right=True))
            c2.apply(tid)
            check_consistent(c2)
    assert used >= 1
    left = [e for q in c2.state["queries"].values() for idxs in q["bank"].values()
            for e in (q["log"][idx] for idx in idxs) if e[0] == "g0"]
    assert len(left) < len(banked)  # g0's banked judgments were used


@pytest.mark.parametrize("algorithm", ["recommended", "prefbest"])
def test_a_restart_mid_campaign_changes_nothing(algorithm):
    """State and tasks through JSON between every two calls (as the service keeps them
    in Redis; any process may continue) end exactly where the run kept in memory ends."""
    whole, _ = checked_run(algorithm)  # checking reads the state, never changes it
    restarted, _ = run(algorithm, roundtrip=True, check=False)
    assert json.dumps(restarted.state, sort_keys=True) == json.dumps(whole.state,
                                                                     sort_keys=True)


def test_the_replay_ends_and_uses_each_logged_judgment_at_most_once():
    """Unit: a log whose judgments the new judge never asks for stays banked whole; one
    the judge asks for in its first request is used; every used entry once."""
    log = [["a", 0, 1, 1.0, False], ["a", 0, 1, 0.0, True], ["b", 2, 3, 1.0, False]]
    judge, bank = replay("prefbest", 4, 0, {"budget": 50, "max_per_pair": 3}, log)
    used = judge.n_judgments
    assert used + sum(map(len, bank.values())) == len(log)
    assert judge.n_pending == 0
    assert judge.N[0, 1] + len(bank.get("0:1", [])) == 2
    judge, bank = replay("prefbest", 4, 0, {"budget": 50, "max_per_pair": 3}, log,
                         excluded={"a", "b"})
    assert judge.n_judgments == 0 and bank == {}



def test_a_state_from_before_the_log_keeps_working():
    """A campaign stored before the replay existed (no log, seed, gen or bank in its
    queries; assessors without banked/dropped; tasks without gen) goes on: a query judged
    then cannot be replayed, so an exclusion there drops the exposing task only; a query
    not judged yet starts its log."""
    state = campaign()
    for query in state["queries"].values():
        for k in ("log", "judge_seed", "gen", "bank", "rebuilds"):
            del query[k]
    c = Campaign(state)
    for a in ("g0", TURNCOAT):
        c.add(a)
        del c.state["assessors"][a]["banked"], c.state["assessors"][a]["dropped"]
    judge = judge_from_state(state["queries"]["Q0"]["judge"])  # g0's task, applied then
    for i, j in judge.request(10):
        judge.record(i, j, 1.0)
    state["queries"]["Q0"]["judge"] = judge.state_dict()
    state["assessors"]["g0"]["judgments"] = 10
    rng = np.random.default_rng(2)
    for n in range(2):
        tid, task = c.task(TURNCOAT)
        for p in task["pairs"]:
            p.pop("gen", None)
        c.submit(tid, task, answers(task, rng, targets_right=0.0, tests_right=n == 0))
        res = c.apply(tid)
        if n == 0:
            assert res["status"] == "kept" and res["recorded"] == 10
            assert c.state["queries"]["Q0"]["log"] is None  # judged before: no history
            assert c.state["queries"]["Q1"]["log"] == []
    assert res["status"] == "excluded" and res["rebuilt"] == [] and res["dropped"] == 10
    t = c.state["assessors"][TURNCOAT]
    assert t["judgments"] == 10 and t["dropped"] == 10  # the first task's stay in Q0
    s = summary(c.state)
    assert s["queries"]["Q0"]["judgments"] == 20 and s["queries"]["Q0"]["rebuilds"] == 0
    assert s["assessors"]["g0"]["dropped"] == 0
