"""The credit step: an impression's clicks become duel outcomes and one policy update.

Pure: no Redis, no Celery. The worker's task (:mod:`workers.tasks`) reads a batch of
impressions and the experiment's snapshot, calls :func:`apply`, and commits what it
returns together with each impression's ``credited`` mark in one optimistic transaction
(:meth:`service.store.Store.transact`); so each impression changes ``W`` at most once.

What an impression yields, in order of precedence:

* ``missing``: unknown, expired, or of another experiment; ``already``: credited before.
* ``credited``: the outcomes changed the policy. Outcomes are the interleaving method's
  verdict on the clicks (``interleaving.credit``) plus one **forfeit** per ranker that
  failed to answer while an opponent answered (a loss to each opponent that answered:
  the live service departs from the papers here, which assume every ranker answers; a
  persistently failing ranker is then eliminated like any loser). A pairwise impression
  yields one outcome (``update``), a multileaved one all of its pairs as one step
  (``update_many``).
* ``no_clicks``: a duel without clicks (no outcome); ``no_duel``: one list was shown.
* ``stale``: every outcome involves a ranker retired since.
* ``error``: a record this code cannot read; closed and counted, never retried for ever.

Before the first update the policy's step counter is moved to the experiment's global
selection count ``t`` (:meth:`~bandits.base.DuelingBandit.sync_step`), so confidence
bounds such as MergeDTS's ``log(t + C)`` (seed 000, Algorithm 1 lines 10–11) use the
number of selections made so far by every API process, exactly as in the simulator.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit

log = logging.getLogger(__name__)

CreditFn = Callable[[Any, list[int]], list[tuple[int, int, float]]]


@dataclass(frozen=True)
class Impression:
    """What the credit step needs of one stored impression."""

    id: str
    arms: list[int]
    duel: bool
    record: Any = None
    clicks: list[int] = field(default_factory=list)
    forfeits: list[tuple[int, int]] = field(default_factory=list)  # (winner arm, loser arm)
    created: float = 0.0
    credited: bool = False


@dataclass
class Credit:
    """What a credit transaction writes: per impression its result, the counters to add,
    audit events (eliminations, stage changes) and whether the policy changed."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n


#: result status -> the counter it adds to, besides ``credited``
_COUNTER_OF = {"credited": "decisive", "no_duel": "credited_no_duel"}


def _clicks_credit(record: Any, clicked: list[int]) -> list[tuple[int, int, float]]:
    import interleaving

    return interleaving.credit(record, clicked)


def apply(
    bandit: DuelingBandit,
    impressions: Sequence[Impression | None],
    *,
    ids: Sequence[str],
    t: int,
    names: dict[int, str],
    credit_fn: CreditFn = _clicks_credit,
) -> Credit:
    """Apply a batch of impressions (``None`` where missing) to ``bandit`` in order.

    ``ids`` names the impressions (``ids[n]`` for ``impressions[n]``); ``t`` is the
    experiment's global step; ``names`` maps arms to ranker names for the audit.
    """
    out = Credit()
    synced = False
    for imp_id, imp in zip(ids, impressions, strict=True):
        if imp is None:
            out.results[imp_id] = {"status": "missing"}
            continue
        if imp.credited:
            out.results[imp_id] = {"status": "already"}
            continue
        try:
            outcomes = _outcomes(imp, credit_fn)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            # a record this code cannot credit must not block the batch for ever:
            # close it as an error (counted, logged) and credit the rest
            log.error("impression %s cannot be credited: %s", imp_id, exc)
            out.results[imp_id] = {"status": "error", "error": str(exc)[:200]}
            out.count("credited")
            out.count("credit_errors")
            continue
        result: dict[str, Any] = {"status": "no_duel", "created": imp.created, "t": t}
        if outcomes is not None:
            result["status"] = "credited" if outcomes else "no_clicks"
        if outcomes:
            live = [(i, j, s) for i, j, s in outcomes
                    if bandit.status[i] != RETIRED and bandit.status[j] != RETIRED]
            if not live:
                result["status"] = "stale"
            else:
                if not synced:
                    bandit.sync_step(t)
                    synced = True
                out.audit += _update(bandit, live, names)
                result["outcomes"] = [[i, j, s] for i, j, s in live]
                out.changed = True
                if any(s == 0.5 for _, _, s in live):
                    out.count("ties")
                if imp.forfeits:
                    out.count("forfeits")
        out.count("credited")
        out.count(_COUNTER_OF.get(result["status"], result["status"]))
        out.results[imp_id] = result
    return out


def _outcomes(imp: Impression, credit_fn: CreditFn) -> list[tuple[int, int, float]] | None:
    """The impression's outcomes in arm indices; None when it was no comparison at all."""
    forfeits = [(int(w), int(loser), 1.0) for w, loser in imp.forfeits]
    if not imp.duel:
        return forfeits or None
    arms = imp.arms
    clicked = [(arms[a], arms[b], float(s)) for a, b, s in credit_fn(imp.record, imp.clicks)]
    return forfeits + clicked


def _update(bandit: DuelingBandit, live: list[tuple[int, int, float]],
            names: dict[int, str]) -> list[dict[str, Any]]:
    """Apply one impression's outcomes; audit events for what the policy changed."""
    before_status = bandit.status.copy()
    before = _shape(bandit)
    if bandit.multi:
        bandit.update_many(live)
    else:
        i, j, s = live[0]  # a pairwise impression yields one outcome
        bandit.update(i, j, s)
    events: list[dict[str, Any]] = []
    for arm in np.flatnonzero((before_status == ACTIVE) & (bandit.status == ELIMINATED)):
        info = bandit.eliminated.get(int(arm), {})
        events.append({"action": "eliminated", "actor": "bandit",
                       "ranker": names.get(int(arm)), "by": names.get(info.get("by")),
                       "step": info.get("step")})
    after = _shape(bandit)
    if after != before:
        events.append({"action": "stage_changed", "actor": "bandit",
                       "from": before, "to": after})
    return events


def _shape(bandit: DuelingBandit) -> dict[str, Any] | None:
    """Stage and number of batches (the Merge policies), for stage-change events."""
    s = bandit.structure()
    if not s:
        return None
    return {"stage": s.get("stage"), "batches": len(s["batches"]) if "batches" in s else None}
