"""The policy learns from a metric other than the click: an experiment's ``primary``
(:func:`service.outcomes.declared.learns_clicks`). Each attributed event of that metric (an
order, a cart) is one comparison for the policy, applied by the policy's own
``update()``; the clicks then only feed the click metric's ``W``
(:func:`service.credit.protocol.credit_batch`, credit script target ``click``).

Why a transaction and not the credit script: conversions are rare next to searches (one
basket per twenty searches is typical), so one optimistic transaction per drained batch
of events costs little, and applying each event with ``update()`` on the full current
state, at the global selection count ``t``, decides every elimination and stage change at
exactly its place in the order, as :func:`service.credit.protocol.resolve_hold` does for a
held click: no guard and no hold are needed.

Exactly once: the transaction WATCHes the experiment, ``W`` and the events, and writes
``W``, ``n``, the structure, each event's ``pc`` mark and its ``outcome`` entry in the log
together; an event that has the mark is skipped. The metrics' credit script runs after it
(:func:`service.credit.outcome_events.credit_events`) and takes the event off the pending
set, so a worker that dies between the two leaves the event pending: the next drain
finds the mark and only counts the metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from bandits.base import RETIRED, DuelingBandit
from service.credit.protocol import commit_and_tell
from service.credit.step import update_policy
from service.store import MAX_ATTEMPTS, Contention, Store, audit_entry
from service.store.snapshot import encode_structure
from service.webhooks import verdicts

#: one event for the policy: (pending member, digest, its mark from
#: :func:`service.credit.outcome_events.outcomes`, its impression's segment labels)
Item = tuple[str, str, Mapping[str, Any], Sequence[str]]


@dataclass
class Learnt:
    """What the policy's update of a batch of events did: each event's log mark, the
    audit entries (eliminations, stage changes) and whether the policy changed."""

    marks: dict[str, dict[str, Any]] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False


def learn(bandit: DuelingBandit, items: Sequence[Item], metric: str, *, t: int,
          names: Mapping[int, str]) -> Learnt:
    """Apply each event's outcomes on ``metric`` to ``bandit`` in order (pure).

    An event's mark in the log: ``status`` ``credited`` with its ``outcomes`` (those
    between rankers still in the experiment), or ``stale`` (every one involves a ranker
    retired since), and the event's ``metric``, ``impression``, ``value`` and ``t``.

    >>> from bandits import make_bandit
    >>> b = make_bandit("uniform", 2, seed=0)
    >>> out = learn(b, [("~d", "d", {"impression": "e.1", "value": 40.0,
    ...                              "outcomes": {"revenue": [[1, 0, 0.7]]}}, ())],
    ...             "revenue", t=3, names={0: "a", 1: "b"})
    >>> out.marks["~d"]["outcomes"], b.W.tolist(), out.changed
    ([[1, 0, 0.7]], [[0.0, 0.30000000000000004], [0.7, 0.0]], True)
    """
    out = Learnt()
    synced = False
    for member, _digest, mark, _labels in items:
        rows = (mark.get("outcomes") or {}).get(metric) or []
        live = [(int(i), int(j), float(s)) for i, j, s in rows
                if bandit.status[int(i)] != RETIRED and bandit.status[int(j)] != RETIRED]
        entry: dict[str, Any] = {"status": "stale", "metric": metric,
                                 "impression": mark.get("impression"),
                                 "value": mark.get("value"), "t": t}
        if live:
            if not synced:
                bandit.sync_step(t)
                synced = True
            out.audit += update_policy(bandit, live, dict(names))
            out.changed = True
            entry.update(status="credited", outcomes=[[i, j, s] for i, j, s in live])
        out.marks[member] = entry
    return out


def credit_primary(store: Store, exp_id: str, items: Sequence[Item], metric: str) -> int:
    """Let the policy of ``exp_id`` learn from ``items`` (events of its primary
    ``metric``) once each, in one optimistic transaction; the number applied now (an
    event already learnt from, by another worker, is skipped)."""
    digests = [d for _, d, _, _ in items]
    for _attempt in range(MAX_ATTEMPTS):
        with store.pipeline(transaction=True) as pipe:
            try:
                store.outcomes.watch_primary(pipe, exp_id, digests)
                events = store.outcomes.read_outcome_events(exp_id, digests)
                todo = [it for it, ev in zip(items, events, strict=True)
                        if ev is not None and "pc" not in ev]
                if not todo:
                    pipe.reset()
                    return 0
                snap = store.experiments.snapshot(exp_id, full=True)
                bandit = snap.bandit
                before = encode_structure(bandit)["state"]
                told = verdicts.verdicts(bandit)
                done = learn(bandit, todo, metric, t=snap.selections or 0, names=snap.names)
                pipe.multi()
                moved = False
                if done.changed:
                    moved = encode_structure(bandit)["state"] != before
                    store.experiments.write_state(pipe, exp_id, bandit, structure=moved)
                    store.experiments.add_audit(exp_id, *(audit_entry(store.clock(), **e)
                                                          for e in done.audit), pipe=pipe)
                store.outcomes.write_primary_marks(
                    pipe, exp_id, [(m, d, done.marks[m], labels) for m, d, _, labels in todo],
                    state_written=done.changed)
                commit_and_tell(store, pipe, exp_id, snap, bandit, told, moved=moved)
                return len(todo)
            except redis.WatchError:
                store.credits.count_conflict(exp_id)
    raise Contention(f"gave up applying {len(items)} events to the policy of {exp_id} "
                     f"after {MAX_ATTEMPTS} attempts")
