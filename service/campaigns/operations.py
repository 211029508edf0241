"""Judging campaigns: the I/O around :mod:`judging.campaign`.

Stored by :mod:`service.store.campaigns` under the keys of :mod:`service.store.keys` (one hash
tag per campaign, so each campaign's transactions run on one shard).

Every change is one optimistic transaction on the campaign hash
(:func:`service.transaction.transact`), so two API processes and the worker never lose
each other's writes, and a judgment is recorded once whatever the retries: a task's
answers are stored once (a replay with the same answers gets the same reply, different
answers 409) and applied once (the worker takes a task off ``submitted`` in the
transaction that applies it).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import numpy as np

from judging import campaign as logic
from service.errors import Conflict, Forbidden, NotFound, Unprocessable
from service.store import Store
from service.transaction import transact


class Campaigns:
    """Judging campaigns on the service's Redis."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # ------------------------------------------------------------------ reads
    def _load(self, cid: str) -> tuple[dict[str, Any], dict[str, Any]]:
        found = self.store.campaigns.campaign(cid)
        if found is None:
            raise NotFound(f"no judging campaign {cid!r}")
        return found

    def state(self, cid: str) -> dict[str, Any]:
        """The campaign as ``GET /judging/campaigns/ID`` shows it."""
        meta, state = self._load(cid)
        tasks = list(self.store.campaigns.campaign_tasks(cid).values())
        statuses: dict[str, int] = {}
        for t in tasks:
            statuses[t["status"]] = statuses.get(t["status"], 0) + 1
        return {"id": cid, "name": meta["name"], "algorithm": state["algorithm"],
                "params": state["params"], "created_at": meta["created_at"],
                "tasks": statuses, **logic.summary(state)}

    def campaign_of(self, assessor: str) -> str:
        cid = self.store.campaigns.campaign_of_assessor(assessor)
        if cid is None:
            raise Forbidden(f"{assessor!r} is not an assessor of any campaign")
        return cid

    def with_submitted(self) -> list[str]:
        """Campaigns with submitted tasks not applied yet."""
        ids = self.list_ids()
        return [cid for cid, n in zip(ids, self.store.campaigns.submitted_counts(ids), strict=True)
                if n]

    def list_ids(self) -> list[str]:
        return self.store.campaigns.campaign_ids()

    def export(self, cid: str) -> dict[str, Any]:
        return self._load(cid)[1]

    # ------------------------------------------------------------------ operator
    def create(self, spec: dict[str, Any]) -> str:
        cid = secrets.token_hex(6)
        try:
            state = logic.new_campaign(spec["queries"], algorithm=spec["algorithm"],
                                       params=spec.get("params") or {},
                                       seed=spec.get("seed") or secrets.randbits(31))
        except (ValueError, TypeError) as exc:
            raise Unprocessable(str(exc)) from None
        now = time.time()
        meta = {"name": spec["name"], "created_at": now, "task_ttl_s": spec["task_ttl_s"]}
        self.store.campaigns.create_campaign(cid, meta, state, now)
        return cid

    def add_assessor(self, cid: str, assessor: str | None) -> str:
        """Register an assessor (a fresh random id unless one is given); 409 if taken."""
        who = assessor or secrets.token_urlsafe(12)
        self._load(cid)  # 404 for an unknown campaign
        if not self.store.campaigns.take_assessor(who, cid):
            raise Conflict(f"assessor {who!r} exists already")

        def write(data, pipe):
            _meta, state = data
            state["assessors"][who] = logic.new_assessor()
            self.store.campaigns.write_campaign_state(pipe, cid, state)
            return who

        return transact(self.store, self.store.campaigns.campaign_watch(cid),
                        lambda: self._load(cid), write)

    # ------------------------------------------------------------------ assessors
    def next_task(self, cid: str, assessor: str) -> dict[str, Any] | None:
        """The assessor's open task, or a new one; None when nothing can be asked now."""
        def read():
            meta, state = self._load(cid)
            tasks = self.store.campaigns.campaign_tasks(cid)
            judged = self.store.campaigns.judged(cid, assessor)
            return meta, state, tasks, judged

        def write(data, pipe):
            meta, state, tasks, judged = data
            if assessor not in state["assessors"]:
                raise Forbidden(f"{assessor!r} is not an assessor of campaign {cid!r}")
            if logic.assessor_excluded(state, assessor):
                raise Forbidden(f"assessor {assessor!r} was excluded: fewer than "
                                f"{logic.PASS_RATE:.0%} of the test pairs answered correctly")
            now = time.time()
            for tid, t in tasks.items():  # abandoned tasks give their pairs back
                if t["status"] == "open" and now - t["created"] > meta["task_ttl_s"]:
                    logic.abandon_task(state, t)
                    t["status"] = "abandoned"
                    self.store.campaigns.write_task(pipe, cid, tid, t)
            mine = [(tid, t) for tid, t in tasks.items()
                    if t["assessor"] == assessor and t["status"] == "open"]
            if mine:
                tid, task = mine[0]
            else:
                rng = np.random.default_rng([state["seed"], state["task_seq"]])
                task = logic.make_task(state, assessor, judged, rng)
                if task is None:
                    self.store.campaigns.write_campaign_state(pipe, cid, state)
                    return None
                tid = f"{cid}.{state['task_seq']}"
                task.update(status="open", created=now)
                self.store.campaigns.write_task(pipe, cid, tid, task)
            self.store.campaigns.write_campaign_state(pipe, cid, state)
            return {"task_id": tid, "campaign": cid, "assessor": assessor,
                    "pairs": logic.present(state, task)}

        return transact(self.store, self.store.campaigns.campaign_watch(cid, tasks=True),
                        read, write)

    def submit(self, cid: str, task_id: str, assessor: str,
               answers: dict[int, dict[str, Any]], *,
               duplicates: int = 0) -> tuple[dict[str, Any], bool]:
        """Store a task's answers once; ``(reply, newly submitted)``. ``duplicates``:
        judgments of a pair judged twice in the request (422 once the task is found)."""
        def read():
            task = self.store.campaigns.campaign_task(cid, task_id) if cid else None
            if task is None:
                raise NotFound(f"no task {task_id!r} in campaign {cid!r}")
            return task

        def write(task, pipe):
            if task["assessor"] != assessor:
                raise Forbidden(f"task {task_id!r} was given to another assessor")
            if duplicates:
                raise Unprocessable("each pair of the task may be judged once")
            numbers = {p["pair"] for p in task["pairs"]}
            if set(answers) != numbers:
                missing = sorted(numbers - set(answers))
                extra = sorted(set(answers) - numbers)
                raise Unprocessable(f"a task's judgments must answer each of its pairs "
                                    f"once: missing {missing}, not in the task {extra}")
            if task["status"] in ("submitted", "applied"):
                if task["answers"] != {str(k): v for k, v in answers.items()}:
                    raise Conflict(f"task {task_id!r} was submitted with other judgments")
                return {"task_id": task_id, "status": task["status"], "replay": True}, False
            if task["status"] != "open":
                raise Conflict(f"task {task_id!r} is {task['status']}")
            task["answers"] = {str(k): v for k, v in answers.items()}
            task["status"] = "submitted"
            self.store.campaigns.write_task(pipe, cid, task_id, task)
            keys = [f"{p['query']}:{p['i']}:{p['j']}" for p in task["pairs"] if not p["test"]]
            self.store.campaigns.push_submitted(pipe, cid, task_id, assessor, keys)
            return {"task_id": task_id, "status": "submitted", "replay": False}, True

        watch = self.store.campaigns.campaign_watch(cid, state=False, tasks=True)
        return transact(self.store, watch, read, write)

    # ------------------------------------------------------------------ the worker
    def apply_submitted(self, cid: str) -> int:
        """Apply every submitted task, in order, each in its own transaction; how many."""
        done = 0
        while True:
            tid = self.store.campaigns.first_submitted(cid)
            if tid is None:
                return done

            def read(tid=tid):
                _meta, state = self._load(cid)
                return state, self.store.campaigns.campaign_task(cid, tid)

            def write(data, pipe, tid=tid):
                state, task = data
                self.store.campaigns.drop_submitted(pipe, cid, tid)
                if task is None or task["status"] != "submitted":
                    return 0  # applied before (a retried worker): nothing twice
                answers = {int(k): v for k, v in task["answers"].items()}
                task["result"] = logic.apply_task(state, task, answers)
                task["status"] = "applied"
                self.store.campaigns.write_task(pipe, cid, tid, task)
                self.store.campaigns.write_campaign_state(pipe, cid, state)
                return 1

            done += transact(self.store, self.store.campaigns.campaign_watch(cid, tasks=True,
                                                                             submitted=True),
                             read, write)
