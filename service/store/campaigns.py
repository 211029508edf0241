"""Judging campaigns in Redis: plain reads and writes of a campaign's hash, its tasks,
what each assessor judged and the queue of submitted tasks (keys in
:mod:`service.store.keys`). The transactions around them, and every decision, are
:mod:`service.campaigns.operations`'s."""

from __future__ import annotations

import json
from typing import Any

from service.store.base import StorePart
from service.store.keys import (
    JUDGING_CAMPAIGNS,
    assessor_key,
    campaign_judged_key,
    campaign_key,
    campaign_submitted_key,
    campaign_tasks_key,
)
from service.store.snapshot import text


class JudgingStore(StorePart):
    """A judging campaign's stored parts."""

    # ------------------------------------------------------------------ keys to WATCH
    @staticmethod
    def campaign_watch(cid: str, *, state: bool = True, tasks: bool = False,
                       submitted: bool = False) -> list[str]:
        """The keys a campaign transaction WATCHes: its hash (``state``), its tasks, its
        submitted queue."""
        return ([campaign_key(cid)] * state + [campaign_tasks_key(cid)] * tasks
                + [campaign_submitted_key(cid)] * submitted)

    # ------------------------------------------------------------------ reads
    def campaign(self, cid: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """``(meta, state)`` of campaign ``cid``; None when unknown."""
        meta, state = self.r.hmget(campaign_key(cid), "meta", "state")
        if meta is None or state is None:
            return None
        return json.loads(meta), json.loads(state)

    def campaign_tasks(self, cid: str) -> dict[str, dict[str, Any]]:
        """Every task of the campaign by id."""
        return {text(k): json.loads(v) for k, v in self.r.hgetall(campaign_tasks_key(cid)).items()}

    def campaign_task(self, cid: str, task_id: str) -> dict[str, Any] | None:
        raw = self.r.hget(campaign_tasks_key(cid), task_id)
        return json.loads(raw) if raw is not None else None

    def judged(self, cid: str, assessor: str) -> set[str]:
        """The ``query:i:j`` pairs ``assessor`` has judged."""
        return {text(x) for x in self.r.smembers(campaign_judged_key(cid, assessor))}

    def campaign_of_assessor(self, assessor: str) -> str | None:
        return text(self.r.get(assessor_key(assessor)))

    def campaign_ids(self) -> list[str]:
        return [text(x) for x in self.r.zrange(JUDGING_CAMPAIGNS, 0, -1)]

    def submitted_counts(self, ids: list[str]) -> list[int]:
        """How many submitted tasks wait in each campaign of ``ids`` (one round trip)."""
        pipe = self.r.pipeline(transaction=False)
        for cid in ids:
            pipe.llen(campaign_submitted_key(cid))
        return [int(n) for n in pipe.execute()]

    def first_submitted(self, cid: str) -> str | None:
        """The submitted task to apply next."""
        return text(self.r.lindex(campaign_submitted_key(cid), 0))

    # ------------------------------------------------------------------ writes
    def create_campaign(self, cid: str, meta: dict[str, Any], state: dict[str, Any],
                        created_at: float) -> None:
        self.r.hset(campaign_key(cid), mapping={"meta": json.dumps(meta),
                                                "state": json.dumps(state)})
        self.r.zadd(JUDGING_CAMPAIGNS, {cid: created_at})

    def take_assessor(self, assessor: str, cid: str) -> bool:
        """Register ``assessor`` with campaign ``cid``; False if the id is taken."""
        return bool(self.r.set(assessor_key(assessor), cid, nx=True))

    @staticmethod
    def write_campaign_state(pipe, cid: str, state: dict[str, Any]) -> None:
        pipe.hset(campaign_key(cid), "state", json.dumps(state))

    @staticmethod
    def write_task(pipe, cid: str, task_id: str, task: dict[str, Any]) -> None:
        pipe.hset(campaign_tasks_key(cid), task_id, json.dumps(task))

    @staticmethod
    def push_submitted(pipe, cid: str, task_id: str, assessor: str,
                       judged: list[str]) -> None:
        """Queue a submitted task and record the pairs its assessor judged."""
        pipe.rpush(campaign_submitted_key(cid), task_id)
        if judged:
            pipe.sadd(campaign_judged_key(cid, assessor), *judged)

    @staticmethod
    def drop_submitted(pipe, cid: str, task_id: str) -> None:
        pipe.lrem(campaign_submitted_key(cid), 1, task_id)
