"""Judging campaigns in Redis: the I/O around :mod:`judging.campaign`.

Keys (one hash tag per campaign, so each campaign's transactions run on one shard)::

    rd:{jc-<c>}                  HASH  meta (JSON: name, created_at, task_ttl_s), state
                                       (JSON: judging.campaign's state)
    rd:{jc-<c>}:tasks            HASH  task id -> JSON {assessor, pairs, status: open |
                                       submitted | applied | abandoned, created, answers,
                                       result}
    rd:{jc-<c>}:judged:<a>       SET   "query:i:j" pairs assessor a has judged
    rd:{jc-<c>}:submitted        LIST  submitted task ids, in order, until applied
    rd:judging:campaigns         ZSET  campaign ids by creation time
    rd:judging:assessor:<a>      STR   the campaign of assessor a

Every change is one optimistic transaction on the campaign hash (``Store.transact``), so
two API processes and the worker never lose each other's writes, and a judgment is
recorded once whatever the retries: a task's answers are stored once (a replay with the
same answers gets the same reply, different answers 409) and applied once (the worker
takes a task off ``submitted`` in the transaction that applies it).
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import numpy as np

from judging import campaign as logic
from service.errors import Conflict, Forbidden, NotFound, Unprocessable
from service.store import Store

CAMPAIGNS = "rd:judging:campaigns"


def _assessor_key(assessor: str) -> str:
    """The campaign of an assessor id (ids are unique across campaigns: the task route
    takes the assessor alone)."""
    return f"rd:judging:assessor:{assessor}"


def _key(cid: str) -> str:
    return f"rd:{{jc-{cid}}}"


def _tasks(cid: str) -> str:
    return f"{_key(cid)}:tasks"


def _judged(cid: str, assessor: str) -> str:
    return f"{_key(cid)}:judged:{assessor}"


def _submitted(cid: str) -> str:
    return f"{_key(cid)}:submitted"


class Campaigns:
    """Judging campaigns on the service's Redis."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.r = store.r

    # ------------------------------------------------------------------ reads
    def _load(self, cid: str) -> tuple[dict[str, Any], dict[str, Any]]:
        meta, state = self.r.hmget(_key(cid), "meta", "state")
        if meta is None or state is None:
            raise NotFound(f"no judging campaign {cid!r}")
        return json.loads(meta), json.loads(state)

    def state(self, cid: str) -> dict[str, Any]:
        """The campaign as ``GET /judging/campaigns/ID`` shows it."""
        meta, state = self._load(cid)
        tasks = [json.loads(t) for t in self.r.hvals(_tasks(cid))]
        statuses: dict[str, int] = {}
        for t in tasks:
            statuses[t["status"]] = statuses.get(t["status"], 0) + 1
        return {"id": cid, "name": meta["name"], "algorithm": state["algorithm"],
                "params": state["params"], "created_at": meta["created_at"],
                "tasks": statuses, **logic.summary(state)}

    def campaign_of(self, assessor: str) -> str:
        cid = self.r.get(_assessor_key(assessor))
        if cid is None:
            raise Forbidden(f"{assessor!r} is not an assessor of any campaign")
        return cid.decode()

    def with_submitted(self) -> list[str]:
        """Campaigns with submitted tasks not applied yet."""
        ids = self.list_ids()
        pipe = self.r.pipeline(transaction=False)
        for cid in ids:
            pipe.llen(_submitted(cid))
        return [cid for cid, n in zip(ids, pipe.execute(), strict=True) if n]

    def list_ids(self) -> list[str]:
        return [x.decode() if isinstance(x, bytes) else x
                for x in self.r.zrange(CAMPAIGNS, 0, -1)]

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
        self.r.hset(_key(cid), mapping={"meta": json.dumps(meta), "state": json.dumps(state)})
        self.r.zadd(CAMPAIGNS, {cid: now})
        return cid

    def add_assessor(self, cid: str, assessor: str | None) -> str:
        """Register an assessor (a fresh random id unless one is given); 409 if taken."""
        who = assessor or secrets.token_urlsafe(12)
        self._load(cid)  # 404 for an unknown campaign
        if not self.r.set(_assessor_key(who), cid, nx=True):
            raise Conflict(f"assessor {who!r} exists already")

        def write(data, pipe):
            _meta, state = data
            state["assessors"][who] = logic.new_assessor()
            pipe.hset(_key(cid), "state", json.dumps(state))
            return who

        return self.store.transact([_key(cid)], lambda: self._load(cid), write)

    # ------------------------------------------------------------------ assessors
    def next_task(self, cid: str, assessor: str) -> dict[str, Any] | None:
        """The assessor's open task, or a new one; None when nothing can be asked now."""
        def read():
            meta, state = self._load(cid)
            tasks = {k.decode(): json.loads(v) for k, v in self.r.hgetall(_tasks(cid)).items()}
            judged = {x.decode() for x in self.r.smembers(_judged(cid, assessor))}
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
                    pipe.hset(_tasks(cid), tid, json.dumps(t))
            mine = [(tid, t) for tid, t in tasks.items()
                    if t["assessor"] == assessor and t["status"] == "open"]
            if mine:
                tid, task = mine[0]
            else:
                rng = np.random.default_rng([state["seed"], state["task_seq"]])
                task = logic.make_task(state, assessor, judged, rng)
                if task is None:
                    pipe.hset(_key(cid), "state", json.dumps(state))
                    return None
                tid = f"{cid}.{state['task_seq']}"
                task.update(status="open", created=now)
                pipe.hset(_tasks(cid), tid, json.dumps(task))
            pipe.hset(_key(cid), "state", json.dumps(state))
            return {"task_id": tid, "campaign": cid, "assessor": assessor,
                    "pairs": logic.present(state, task)}

        return self.store.transact([_key(cid), _tasks(cid)], read, write)

    def submit(self, cid: str, task_id: str, assessor: str,
               answers: dict[int, dict[str, Any]], *,
               duplicates: int = 0) -> tuple[dict[str, Any], bool]:
        """Store a task's answers once; ``(reply, newly submitted)``. ``duplicates``:
        judgments of a pair judged twice in the request (422 once the task is found)."""
        def read():
            raw = self.r.hget(_tasks(cid), task_id) if cid else None
            if raw is None:
                raise NotFound(f"no task {task_id!r} in campaign {cid!r}")
            return json.loads(raw)

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
            pipe.hset(_tasks(cid), task_id, json.dumps(task))
            pipe.rpush(_submitted(cid), task_id)
            keys = [f"{p['query']}:{p['i']}:{p['j']}" for p in task["pairs"] if not p["test"]]
            if keys:
                pipe.sadd(_judged(cid, assessor), *keys)
            return {"task_id": task_id, "status": "submitted", "replay": False}, True

        return self.store.transact([_tasks(cid)], read, write)

    # ------------------------------------------------------------------ the worker
    def apply_submitted(self, cid: str) -> int:
        """Apply every submitted task, in order, each in its own transaction; how many."""
        done = 0
        while True:
            head = self.r.lindex(_submitted(cid), 0)
            if head is None:
                return done
            tid = head.decode()

            def read(tid=tid):
                _meta, state = self._load(cid)
                raw = self.r.hget(_tasks(cid), tid)
                return state, json.loads(raw) if raw else None

            def write(data, pipe, tid=tid):
                state, task = data
                pipe.lrem(_submitted(cid), 1, tid)
                if task is None or task["status"] != "submitted":
                    return 0  # applied before (a retried worker): nothing twice
                answers = {int(k): v for k, v in task["answers"].items()}
                task["result"] = logic.apply_task(state, task, answers)
                task["status"] = "applied"
                pipe.hset(_tasks(cid), tid, json.dumps(task))
                pipe.hset(_key(cid), "state", json.dumps(state))
                return 1

            done += self.store.transact([_key(cid), _tasks(cid), _submitted(cid)], read, write)
