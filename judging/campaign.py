"""A judging campaign's logic, pure: queries with their pools, a judge per query, test
pairs, assessors and tasks (seed 004 §5.1–5.2), over plain JSON state so the live service
can keep it in Redis and any process can continue it.

The state (:func:`new_campaign`) holds, per query, its pool merged into classes of exact
duplicates (§5.2: judged once, expanded afterwards), the judge's ``state_dict()``, and
the operator's test pairs; per assessor, the test pairs answered and answered correctly.

A **task** (:func:`make_task`) gives one assessor up to ``target`` pairs to judge — from
the queries still running, never a pair this assessor judged before, within the judge's
budget and per-pair cap — plus ``tests`` test pairs, all shuffled, each with its sides
drawn at random. Its target pairs are *pending* in their judges until the task is applied
or abandoned.

**Applying** a submitted task (:func:`apply_task`) first scores its test pairs. §5.1: "data
from workers who did not correctly answer at least 75 % of the test pairs was excluded".
An assessor whose record, this task included, falls below 75 % is excluded: this task's
target judgments are dropped (their pairs go back to the judges) and the assessor gets no
more tasks. *Departure from the thesis*, which dropped an excluded worker's data after
the fact: a live campaign cannot take back judgments its algorithm already acted on, so
each task is judged on the assessor's record at the moment it is applied; with three test
pairs per task, a careless assessor answering at random passes a task with probability
1/8, so almost all of their work is dropped with the task that exposes them.

An abandoned task (:func:`abandon_task`) gives its pairs back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judging import judge_from_state, make_judge
from judging.pools import merge_duplicates

#: §5.1: the share of test pairs an assessor must answer correctly
PASS_RATE = 0.75


def new_campaign(queries: Sequence[dict[str, Any]], *, algorithm: str = "recommended",
                 params: dict[str, Any] | None = None, seed: int = 0) -> dict[str, Any]:
    """The initial state of a campaign.

    ``queries``: ``[{"id", "text", "items": [{"id", "text"}], "test_pairs": [{"better":
    {"id", "text"}, "worse": {"id", "text"}}]}]``. Raises ValueError for what cannot be
    judged (a pool of fewer than two distinct items, a duplicate item id).
    """
    params = dict(params or {})
    out: dict[str, Any] = {"algorithm": algorithm, "params": params, "seed": int(seed),
                           "queries": {}, "order": [], "assessors": {}, "task_seq": 0}
    for n, q in enumerate(queries):
        dup = merge_duplicates([(str(it["id"]), str(it.get("text") or it.get("url")))
                                for it in q["items"]])
        if len(dup.groups) < 2:
            raise ValueError(f"query {q['id']!r}: its pool has fewer than two distinct items")
        judge = make_judge(algorithm, len(dup.groups), seed=int(seed) * 1000 + n, **params)
        texts = {str(it["id"]): it for it in q["items"]}
        out["queries"][str(q["id"])] = {
            "text": q["text"],
            "classes": [list(g) for g in dup.groups],
            "items": {i: {"text": texts[i].get("text"), "url": texts[i].get("url")}
                      for i in texts},
            "merged": dup.merged,
            "judge": judge.state_dict(),
            "tests": list(q.get("test_pairs") or []),
        }
        out["order"].append(str(q["id"]))
    return out


def _item(query: dict[str, Any], cls: int) -> dict[str, Any]:
    rep = query["classes"][cls][0]
    return {"id": rep, **query["items"][rep]}


def assessor_excluded(state: dict[str, Any], assessor: str) -> bool:
    return bool(state["assessors"].get(assessor, {}).get("excluded"))


def make_task(state: dict[str, Any], assessor: str, judged: set[str], rng: np.random.Generator,
              *, target: int = 10, tests: int = 3) -> dict[str, Any] | None:
    """A task for ``assessor`` (None when no query has a pair to ask now); the chosen
    pairs become pending in their judges (``state`` is changed in place).

    ``judged``: the pairs this assessor judged before, as ``"query:i:j"``."""
    pairs: list[dict[str, Any]] = []
    for qid in state["order"]:
        if len(pairs) >= target:
            break
        query = state["queries"][qid]
        judge = judge_from_state(query["judge"])
        if judge.done:
            continue
        asked = judge.request(target - len(pairs))
        for i, j in asked:
            key = f"{qid}:{i}:{j}"
            if key in judged:
                judge.cancel(i, j)  # another assessor will get it
                continue
            pairs.append({"query": qid, "i": int(i), "j": int(j), "test": False})
        query["judge"] = judge.state_dict()
    if not pairs:
        return None
    pool = [(qid, t) for qid in {p["query"] for p in pairs}
            for t in state["queries"][qid]["tests"]]
    if pool:
        for k in rng.choice(len(pool), size=min(tests, len(pool)), replace=False):
            qid, t = pool[int(k)]
            pairs.append({"query": qid, "test": True, "better": t["better"], "worse": t["worse"]})
    order = rng.permutation(len(pairs))
    shown = []
    for n, k in enumerate(order):
        p = dict(pairs[int(k)])
        p["pair"] = n
        p["swap"] = bool(rng.random() < 0.5)  # the left/right order shown
        shown.append(p)
    state["task_seq"] += 1
    return {"assessor": assessor, "pairs": shown}


def present(state: dict[str, Any], task: dict[str, Any]) -> list[dict[str, Any]]:
    """What the assessor sees of a task: per pair its query text and the two items,
    left and right (the test pairs look like any other)."""
    out = []
    for p in task["pairs"]:
        query = state["queries"][p["query"]]
        if p["test"]:
            a, b = p["better"], p["worse"]
        else:
            a, b = _item(query, p["i"]), _item(query, p["j"])
        left, right = (b, a) if p["swap"] else (a, b)
        out.append({"pair": p["pair"], "query": query["text"], "query_id": p["query"],
                    "left": left, "right": right})
    return out


def apply_task(state: dict[str, Any], task: dict[str, Any],
               answers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Apply a submitted task (``answers``: pair number -> ``{"choice": "left"|"right",
    "no_difference": bool}``); returns what happened (``kept`` or ``excluded``, test
    pairs right, judgments recorded). ``state`` is changed in place."""
    who = task["assessor"]
    record = state["assessors"].setdefault(who, {"correct": 0, "answered": 0,
                                                 "excluded": False, "judgments": 0})
    right = 0
    tests = [p for p in task["pairs"] if p["test"]]
    for p in tests:
        picked_first = (answers[p["pair"]]["choice"] == "left") != p["swap"]
        right += picked_first  # the first of a test pair is its better item
    record["correct"] += right
    record["answered"] += len(tests)
    passed = record["correct"] >= PASS_RATE * record["answered"]
    if not passed:
        record["excluded"] = True
    recorded = 0
    for p in task["pairs"]:
        if p["test"]:
            continue
        query = state["queries"][p["query"]]
        judge = judge_from_state(query["judge"])
        if passed:
            a = answers[p["pair"]]
            i_won = (a["choice"] == "left") != p["swap"]  # left is i unless swapped
            judge.record(p["i"], p["j"], 1.0 if i_won else 0.0,
                         no_difference=bool(a.get("no_difference")))
            recorded += 1
        else:
            judge.cancel(p["i"], p["j"])
        query["judge"] = judge.state_dict()
    record["judgments"] += recorded
    return {"status": "kept" if passed else "excluded", "tests_right": right,
            "tests": len(tests), "recorded": recorded}


def abandon_task(state: dict[str, Any], task: dict[str, Any]) -> None:
    """Give an unanswered task's pairs back to their judges."""
    for p in task["pairs"]:
        if p["test"]:
            continue
        query = state["queries"][p["query"]]
        judge = judge_from_state(query["judge"])
        judge.cancel(p["i"], p["j"])
        query["judge"] = judge.state_dict()


def summary(state: dict[str, Any]) -> dict[str, Any]:
    """Per query: phase, pool size, judgments, best items (duplicates expanded) and the
    judge's confidence; per assessor their test record."""
    queries = {}
    for qid in state["order"]:
        query = state["queries"][qid]
        judge = judge_from_state(query["judge"])
        res = judge.result()
        best = sorted(x for cls in res.best for x in query["classes"][cls])
        queries[qid] = {
            "phase": "done" if judge.done else "judging",
            "pool": sum(len(c) for c in query["classes"]),
            "distinct_items": len(query["classes"]),
            "merged_duplicates": query["merged"],
            "judgments": judge.n_judgments,
            "pending": judge.n_pending,
            "best": best,
            "confidence": res.confidence,
            "statement": res.statement,
        }
    return {"done": all(q["phase"] == "done" for q in queries.values()),
            "queries": queries, "assessors": state["assessors"]}


def qrels(state: dict[str, Any]) -> str:
    """The best items of every query as TREC qrels (``query 0 item 1``)."""
    lines = []
    for qid, q in summary(state)["queries"].items():
        lines += [f"{qid} 0 {item} 1" for item in q["best"]]
    return "\n".join(lines) + ("\n" if lines else "")


def preference_graph(state: dict[str, Any]) -> dict[str, Any]:
    """Per query the items and, per judged pair, the preferences between them (edges from
    the winner of the majority; ``wins``/``losses`` from the source's side)."""
    out = {}
    for qid in state["order"]:
        query = state["queries"][qid]
        W = np.array(query["judge"]["W"])
        N = np.array(query["judge"]["N"])
        nodes = [{"id": c[0], "duplicates": c[1:]} for c in query["classes"]]
        edges = []
        for i in range(len(nodes)):
            for j in range(i + 1, len(nodes)):
                if N[i, j] == 0:
                    continue
                a, b = (i, j) if W[i, j] >= W[j, i] else (j, i)
                edges.append({"from": nodes[a]["id"], "to": nodes[b]["id"],
                              "wins": float(W[a, b]), "losses": float(W[b, a]),
                              "judgments": int(N[i, j])})
        out[qid] = {"nodes": nodes, "edges": edges}
    return {"queries": out}
