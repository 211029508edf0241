"""A judging campaign's logic, pure: queries with their pools, a judge per query, test
pairs, assessors and tasks (Yan 2022, §5.1–5.2), over plain JSON state so the live service
can keep it in Redis and any process can continue it.

The state (:func:`new_campaign`) holds, per query, its pool merged into classes of exact
duplicates (§5.2: judged once, expanded afterwards), the judge's ``state_dict()`` and the
seed it was built with (``judge_seed``), the operator's test pairs, and the **log** of
every judgment applied to it (``[assessor, i, j, outcome, no_difference]``, in order of
application); per assessor, the test pairs answered and answered correctly, and their
judgments: held by the judges (``judgments``), waiting in a bank (``banked``, below) or
removed because the assessor was excluded (``dropped``).

A **task** (:func:`make_task`) gives one assessor up to ``target`` pairs to judge — from
the queries still running, never a pair this assessor judged before, within the judge's
budget and per-pair cap — plus ``tests`` test pairs, all shuffled, each with its sides
drawn at random. Its target pairs are *pending* in their judges until the task is applied
or abandoned; each carries its query's generation (``gen``) at the time.

**Applying** a submitted task (:func:`apply_task`) first scores its test pairs. §5.1: "data
from workers who did not correctly answer at least 75 % of the test pairs was excluded".
An assessor whose record, this task included, falls below 75 % is excluded for good: this
task's judgments are dropped, the assessor gets no more tasks, later tasks of theirs still
in the queue are dropped unscored, and *every judgment of theirs applied before* is taken
out too, as the thesis does. A judge cannot take back a judgment it has acted on, so each
query whose log holds the assessor's judgments is **rebuilt**: a fresh judge from the same
seed replays the log without the excluded assessors (:func:`replay`) — it asks for pairs
as it would live, and each pair it asks for is answered from the log (first logged first)
while the log has an unused judgment of that pair; a pair the log cannot answer (its
judgments were the excluded assessor's, or are still out with an assessor) goes back to
the judge. The replay stops at the first request the log cannot answer at all; the logged
judgments it did not reach wait in the query's **bank**. The query's ``gen`` goes up by
one.

The bank serves later: when a judge asks :func:`make_task` for a pair with a banked
judgment, that judgment is recorded at once instead of handing the pair out. A task made
before a rebuild (an older ``gen``) holds pairs the rebuilt judge never asked for: when it
is applied its judgments go to the log and the bank, and when abandoned nothing is given
back. Cost: an exclusion replays up to ``budget`` judgments per query it touches (one
judge rebuilt from scratch each), in the worker's transaction; judgments the rebuilt judge
never asks for stay banked unused (``banked`` in :func:`summary`), so a campaign with
exclusions may collect more judgments than its budget uses.

An abandoned task (:func:`abandon_task`) gives its pairs back.

A state written before the log existed (no ``log`` in a query) keeps working, but its
queries cannot be replayed: an exclusion there removes only the exposing task's judgments.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from judging import judge_from_state, make_judge
from judging.base import Judge
from judging.pools import merge_duplicates

#: §5.1: the share of test pairs an assessor must answer correctly
PASS_RATE = 0.75
#: pairs a replay asks its judge for at a time (a live task asks for ten)
REPLAY_BATCH = 10


def new_assessor() -> dict[str, Any]:
    """An assessor's record before their first task."""
    return {"correct": 0, "answered": 0, "excluded": False, "judgments": 0, "banked": 0,
            "dropped": 0}


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
        judge_seed = int(seed) * 1000 + n
        judge = make_judge(algorithm, len(dup.groups), seed=judge_seed, **params)
        texts = {str(it["id"]): it for it in q["items"]}
        out["queries"][str(q["id"])] = {
            "text": q["text"],
            "classes": [list(g) for g in dup.groups],
            "items": {i: {"text": texts[i].get("text"), "url": texts[i].get("url")}
                      for i in texts},
            "merged": dup.merged,
            "judge": judge.state_dict(),
            "tests": list(q.get("test_pairs") or []),
            "judge_seed": judge_seed,
            "gen": 0,
            "log": [],
            "bank": {},
            "rebuilds": 0,
        }
        out["order"].append(str(q["id"]))
    return out


def _upgrade(state: dict[str, Any]) -> None:
    """Add what a state written before the replay lacks (in place)."""
    for n, qid in enumerate(state["order"]):
        query = state["queries"][qid]
        if "log" not in query:  # no history: replayable only if nothing was judged yet
            query["log"] = [] if query["judge"]["n_judgments"] == 0 else None
        query.setdefault("judge_seed", int(state["seed"]) * 1000 + n)
        query.setdefault("gen", 0)
        query.setdefault("bank", {})
        query.setdefault("rebuilds", 0)
    for record in state["assessors"].values():
        for k, v in new_assessor().items():
            record.setdefault(k, v)


def _item(query: dict[str, Any], cls: int) -> dict[str, Any]:
    rep = query["classes"][cls][0]
    return {"id": rep, **query["items"][rep]}


def assessor_excluded(state: dict[str, Any], assessor: str) -> bool:
    return bool(state["assessors"].get(assessor, {}).get("excluded"))


def _excluded(state: dict[str, Any]) -> set[str]:
    return {a for a, r in state["assessors"].items() if r.get("excluded")}


def _bank_key(i: int, j: int) -> str:
    return f"{int(i)}:{int(j)}"


def _record(judge: Judge, entry: Sequence[Any]) -> None:
    """Record a log entry ``[assessor, i, j, outcome, no_difference]`` in ``judge``."""
    _who, i, j, outcome, no_difference = entry
    judge.record(int(i), int(j), float(outcome), no_difference=bool(no_difference))


def replay(algorithm: str, n_items: int, seed: int, params: dict[str, Any],
           log: Sequence[Sequence[Any]],
           excluded: Iterable[str] = ()) -> tuple[Judge, dict[str, list[int]]]:
    """A fresh judge fed the judgments of ``log`` that are not by an ``excluded``
    assessor, and the bank of those it did not use (``"i:j"`` -> log indices, oldest
    first).

    The judge asks for :data:`REPLAY_BATCH` pairs at a time; each pair with an unused
    logged judgment gets the oldest one, every other pair is cancelled (it goes back to the
    judge, to be handed out live). The replay ends when a request brings no pair the log
    can answer, or the judge is done; every round that goes on uses a log entry, so it
    ends within ``len(log)`` rounds. Nothing is left pending.
    """
    judge = make_judge(algorithm, int(n_items), seed=int(seed), **params)
    out = set(excluded)
    unused: dict[tuple[int, int], list[int]] = {}
    for idx, (who, i, j, *_rest) in enumerate(log):
        if who not in out:
            unused.setdefault((int(i), int(j)), []).append(idx)
    while not judge.done:
        used = 0
        for i, j in judge.request(REPLAY_BATCH):
            idxs = unused.get((i, j))
            if idxs:
                _record(judge, log[idxs.pop(0)])
                used += 1
            else:
                judge.cancel(i, j)
        if not used:
            break
    bank = {_bank_key(i, j): idxs for (i, j), idxs in sorted(unused.items()) if idxs}
    return judge, bank


def _tally(query: dict[str, Any], excluded: set[str]) -> dict[str, list[int]]:
    """Per assessor not excluded: ``[judgments in the judge, judgments banked]``."""
    banked = {idx for idxs in query["bank"].values() for idx in idxs}
    out: dict[str, list[int]] = {}
    for idx, entry in enumerate(query["log"] or []):
        if entry[0] not in excluded:
            out.setdefault(entry[0], [0, 0])[idx in banked] += 1
    return out


def _rebuild(state: dict[str, Any], qid: str, excluded: set[str], newly: str) -> None:
    """Replace the judge of ``qid`` by a replay of its log without ``excluded`` (``newly``
    the assessor just excluded); move the counts of ``newly``'s judgments there to
    nothing, the others' between ``judgments`` and ``banked`` as the replay used them."""
    query = state["queries"][qid]
    before = _tally(query, excluded - {newly})
    judge, query["bank"] = replay(state["algorithm"], len(query["classes"]),
                                  query["judge_seed"], state["params"], query["log"], excluded)
    query["judge"] = judge.state_dict()
    query["gen"] += 1
    query["rebuilds"] += 1
    after = _tally(query, excluded)
    for who in before.keys() | after.keys():
        b, a = before.get(who, [0, 0]), after.get(who, [0, 0])
        record = state["assessors"][who]
        record["judgments"] += a[0] - b[0]
        record["banked"] += a[1] - b[1]


def _take_banked(state: dict[str, Any], query: dict[str, Any], judge: Judge,
                 i: int, j: int) -> bool:
    """Answer the pending pair ``(i, j)`` from the bank, if it holds a judgment of it."""
    key = _bank_key(i, j)
    idxs = query["bank"].get(key)
    if not idxs:
        return False
    entry = query["log"][idxs.pop(0)]
    if not idxs:
        del query["bank"][key]
    _record(judge, entry)
    record = state["assessors"][entry[0]]
    record["banked"] -= 1
    record["judgments"] += 1
    return True


def make_task(state: dict[str, Any], assessor: str, judged: set[str], rng: np.random.Generator,
              *, target: int = 10, tests: int = 3) -> dict[str, Any] | None:
    """A task for ``assessor`` (None when no query has a pair to ask now); the chosen
    pairs become pending in their judges, and pairs the bank can answer are answered from
    it (``state`` is changed in place).

    ``judged``: the pairs this assessor judged before, as ``"query:i:j"``."""
    _upgrade(state)
    pairs: list[dict[str, Any]] = []
    for qid in state["order"]:
        if len(pairs) >= target:
            break
        query = state["queries"][qid]
        judge = judge_from_state(query["judge"])
        # each round that goes on has used a banked judgment: at most len(bank) + 1 rounds
        while not judge.done and len(pairs) < target:
            from_bank = 0
            for i, j in judge.request(target - len(pairs)):
                if _take_banked(state, query, judge, i, j):
                    from_bank += 1
                elif f"{qid}:{i}:{j}" in judged:
                    judge.cancel(i, j)  # another assessor will get it
                else:
                    pairs.append({"query": qid, "i": int(i), "j": int(j), "test": False,
                                  "gen": query["gen"]})
            if not from_bank:
                break
        query["judge"] = judge.state_dict()
    if not pairs:
        return None
    pool = [(qid, t) for qid in dict.fromkeys(p["query"] for p in pairs)
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


class _Judges(dict):
    """The judges a task touches, each read from the state once and written back once
    (:meth:`save`), not once per pair."""

    def __init__(self, state: dict[str, Any]) -> None:
        super().__init__()
        self.state = state

    def __missing__(self, qid: str) -> Judge:
        judge = self[qid] = judge_from_state(self.state["queries"][qid]["judge"])
        return judge

    def save(self) -> None:
        for qid, judge in self.items():
            self.state["queries"][qid]["judge"] = judge.state_dict()


def _current(query: dict[str, Any], p: dict[str, Any]) -> bool:
    """Whether a task's target pair is pending in the query's judge (made since the last
    rebuild)."""
    return int(p.get("gen", 0)) == int(query["gen"])


def apply_task(state: dict[str, Any], task: dict[str, Any],
               answers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Apply a submitted task (``answers``: pair number -> ``{"choice": "left"|"right",
    "no_difference": bool}``); returns what happened: ``status`` (``kept`` or
    ``excluded``), test pairs right, judgments ``recorded`` in the judges and ``banked``
    (a task made before a rebuild), and on an exclusion the assessor's judgments
    ``dropped`` and the queries ``rebuilt``. ``state`` is changed in place."""
    _upgrade(state)
    who = task["assessor"]
    record = state["assessors"].setdefault(who, new_assessor())
    was_excluded = bool(record["excluded"])
    right = 0
    tests = [p for p in task["pairs"] if p["test"]]
    for p in tests:
        picked_first = (answers[p["pair"]]["choice"] == "left") != p["swap"]
        right += picked_first  # the first of a test pair is its better item
    if was_excluded:  # a task still queued when the assessor was excluded: not scored
        passed = False
    else:
        record["correct"] += right
        record["answered"] += len(tests)
        passed = record["correct"] >= PASS_RATE * record["answered"]
        if not passed:
            record["excluded"] = True
    recorded = banked = 0
    targets = [p for p in task["pairs"] if not p["test"]]
    judges = _Judges(state)
    for p in targets:
        query = state["queries"][p["query"]]
        i, j = int(p["i"]), int(p["j"])
        current = _current(query, p)
        if not passed:
            if current:
                judges[p["query"]].cancel(i, j)
            continue
        a = answers[p["pair"]]
        i_won = (a["choice"] == "left") != p["swap"]  # left is i unless swapped
        entry = [who, i, j, 1.0 if i_won else 0.0, bool(a.get("no_difference"))]
        if query["log"] is not None:
            query["log"].append(entry)
        if current:
            _record(judges[p["query"]], entry)
            recorded += 1
        elif query["log"] is not None:
            query["bank"].setdefault(_bank_key(i, j), []).append(len(query["log"]) - 1)
            banked += 1
    judges.save()
    record["judgments"] += recorded
    record["banked"] += banked
    out = {"status": "kept" if passed else "excluded", "tests_right": right,
           "tests": len(tests), "recorded": recorded, "banked": banked}
    if passed:
        return out
    dropped = len(targets)
    rebuilt = []
    if not was_excluded:  # just excluded: take out every judgment of theirs
        kept = record["judgments"] + record["banked"]
        excluded = _excluded(state)
        for qid in state["order"]:
            log = state["queries"][qid]["log"]
            if log and any(entry[0] == who for entry in log):
                _rebuild(state, qid, excluded, who)
                rebuilt.append(qid)
        # what is left is in queries without a log (a state from before the replay)
        dropped += kept - record["judgments"] - record["banked"]
    record["dropped"] += dropped
    return {**out, "dropped": dropped, "rebuilt": rebuilt}


def abandon_task(state: dict[str, Any], task: dict[str, Any]) -> None:
    """Give an unanswered task's pairs back to their judges (pairs made before a rebuild
    are not pending in the rebuilt judge: nothing to give back)."""
    _upgrade(state)
    judges = _Judges(state)
    for p in task["pairs"]:
        if not p["test"] and _current(state["queries"][p["query"]], p):
            judges[p["query"]].cancel(p["i"], p["j"])
    judges.save()


def summary(state: dict[str, Any]) -> dict[str, Any]:
    """Per query: phase, pool size, judgments, best items (duplicates expanded), the
    judge's confidence, judgments banked and rebuilds; per assessor their test record and
    judgments kept (``judgments``), banked and dropped."""
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
            "banked": sum(len(v) for v in query.get("bank", {}).values()),
            "rebuilds": query.get("rebuilds", 0),
        }
    assessors = {a: {**new_assessor(), **r} for a, r in state["assessors"].items()}
    return {"done": all(q["phase"] == "done" for q in queries.values()),
            "queries": queries, "assessors": assessors}


def qrels(state: dict[str, Any]) -> str:
    """The best items of every query as TREC qrels (``query 0 item 1``)."""
    lines = []
    for qid, q in summary(state)["queries"].items():
        lines += [f"{qid} 0 {item} 1" for item in q["best"]]
    return "\n".join(lines) + ("\n" if lines else "")


def preference_graph(state: dict[str, Any]) -> dict[str, Any]:
    """Per query the items and, per judged pair, the preferences between them (edges from
    the winner of the majority; ``wins``/``losses`` from the source's side). The counts
    are the judge's: no excluded assessor's judgment, no banked one."""
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
