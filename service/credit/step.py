"""The credit step: an impression's clicks become duel outcomes and one policy update.

Pure: no Redis, no Celery. Step 5 of the protocol (:mod:`service.credit`): a drain reads a
batch of impressions, calls :func:`apply` and commits what it returns.

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
  Every impression so decided also counts as a page for the abandonment guardrail
  (``g:pages``), and one without any click reported as abandoned (``g:abandoned``:
  :mod:`service.placements.guardrails`).
  With the experiment's ``dwell_unsatisfied_s`` set, the clicks first lose the
  *unsatisfied* ones (:func:`satisfied_clicks`), listed in the result's ``unsatisfied``.
* ``stale``: every outcome involves a ranker retired since.
* ``error``: a record this code cannot read; closed and counted, never retried for ever.

With ``update=False`` (the drain's fast path) the policy is only read and each result
lists the ``outcomes`` the credit script adds to ``W``; with ``update=True`` (a held
outcome) the policy's own ``update()`` applies them. Why the two agree is argued in
:mod:`service.credit`, with the protocol around this step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit
from service.store.placements import ABANDONED, PAGES
from service.store.records import Impression

log = logging.getLogger(__name__)

CreditFn = Callable[[Any, list[int]], list[tuple[int, int, float]]]


@dataclass
class Credit:
    """What a credit transaction writes: per impression its result and the counters it
    adds (``counted``; ``counters`` sums them), audit events (eliminations, stage
    changes) and whether the policy changed."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    counted: dict[str, list[str]] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False

    def count(self, imp_id: str, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1
        self.counted.setdefault(imp_id, []).append(name)


#: result status -> the counter it adds to, besides ``credited``
_COUNTER_OF = {"credited": "decisive", "no_duel": "credited_no_duel"}


def _clicks_credit(record: Any, clicked: list[int]) -> list[tuple[int, int, float]]:
    import interleaving

    return interleaving.credit(record, clicked)


def satisfied_clicks(clicks: Sequence[int], dwell_ms: Mapping[int, int],
                     unsatisfied_s: float | None) -> list[int]:
    """The clicks that count under the dwell rule ``unsatisfied_s`` (None or 0: all).

    A click whose user came back to the result page within ``unsatisfied_s`` seconds
    (every visit shorter: ``dwell_ms`` holds the longest reported) is *unsatisfied* and
    does not count; a click without a reported dwell (the user never came back, or the
    result replaced the page) counts. A short click followed by a quick return is the
    classic sign of a result that did not satisfy (Fox, Karnawat, Mydland, Dumais,
    White, *Evaluating implicit measures to improve web search*, TOIS 2005), and
    click-level satisfaction is commonly labelled by a dwell of at least 30 s (Kim,
    Hassan, White, Zitouni, *Modeling dwell time to predict click-level satisfaction*,
    WSDM 2014, who start from that threshold and show that a better one depends on the
    kind of page and query). The interleaving method's credit rule is then applied to
    the satisfied clicks alone. The threshold is the experiment's, off by default: pick
    it for your pages (30 s is the customary start).

    >>> satisfied_clicks([0, 2, 5], {0: 1200, 2: 45000}, 30)
    [2, 5]
    >>> satisfied_clicks([0, 2], {0: 1200}, None)
    [0, 2]
    """
    if not unsatisfied_s:
        return list(clicks)
    limit = unsatisfied_s * 1000.0
    return [p for p in clicks if p not in dwell_ms or dwell_ms[p] >= limit]


def apply(
    bandit: DuelingBandit,
    impressions: Sequence[Impression | None],
    *,
    ids: Sequence[str],
    t: int,
    names: dict[int, str],
    credit_fn: CreditFn = _clicks_credit,
    update: bool = True,
    dwell_unsatisfied_s: float | None = None,
) -> Credit:
    """Apply a batch of impressions (``None`` where missing) to ``bandit`` in order.

    ``ids`` names the impressions (``ids[n]`` for ``impressions[n]``); ``t`` is the
    experiment's global step; ``names`` maps arms to ranker names for the audit. With
    ``update=False`` the policy is only read (which rankers are retired): each result
    lists the ``outcomes`` to add to ``W`` and nothing else changes.
    ``dwell_unsatisfied_s`` is the experiment's dwell rule (:func:`satisfied_clicks`).
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
        clicks = satisfied_clicks(imp.clicks, imp.dwell_ms, dwell_unsatisfied_s)
        try:
            outcomes = _outcomes(imp, clicks, credit_fn)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            # a record this code cannot credit must not block the batch for ever:
            # close it as an error (counted, logged) and credit the rest
            log.error("impression %s cannot be credited: %s", imp_id, exc)
            out.results[imp_id] = {"status": "error", "error": str(exc)[:200]}
            out.count(imp_id, "credited")
            out.count(imp_id, "credit_errors")
            continue
        result: dict[str, Any] = {"status": "no_duel", "created": imp.created, "t": t}
        if len(clicks) < len(imp.clicks):
            result["unsatisfied"] = sorted(set(imp.clicks) - set(clicks))
            for _ in result["unsatisfied"]:
                out.count(imp_id, "unsatisfied_clicks")
        if outcomes is not None:
            result["status"] = "credited" if outcomes else "no_clicks"
        if outcomes:
            live = [(i, j, s) for i, j, s in outcomes
                    if bandit.status[i] != RETIRED and bandit.status[j] != RETIRED]
            if not live:
                result["status"] = "stale"
            else:
                if update:
                    if not synced:
                        bandit.sync_step(t)
                        synced = True
                    out.audit += update_policy(bandit, live, names)
                    out.changed = True
                result["outcomes"] = [[i, j, s] for i, j, s in live]
                if any(s == 0.5 for _, _, s in live):
                    out.count(imp_id, "ties")
                if imp.forfeits:
                    out.count(imp_id, "forfeits")
        out.count(imp_id, "credited")
        out.count(imp_id, _COUNTER_OF.get(result["status"], result["status"]))
        out.count(imp_id, PAGES)  # the abandonment guardrail's: any click reported
        if not imp.clicks:
            out.count(imp_id, ABANDONED)
        out.results[imp_id] = result
    return out


def _outcomes(imp: Impression, clicks: list[int],
              credit_fn: CreditFn) -> list[tuple[int, int, float]] | None:
    """The impression's outcomes in arm indices (``clicks``: the clicked positions that
    count); None when it was no comparison at all."""
    forfeits = [(int(w), int(loser), 1.0) for w, loser in imp.forfeits]
    if not imp.duel:
        return forfeits or None
    arms = imp.arms
    clicked = [(arms[a], arms[b], float(s)) for a, b, s in credit_fn(imp.record, clicks)]
    return forfeits + clicked


def update_policy(bandit: DuelingBandit, live: list[tuple[int, int, float]],
            names: dict[int, str]) -> list[dict[str, Any]]:
    """Apply one impression's outcomes; audit events for what the policy changed."""
    before_status = bandit.status.copy()
    before = _shape(bandit)
    before_flag = bool((bandit.non_condorcet() or {}).get("flagged"))
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
    guard = bandit.non_condorcet()
    if guard is not None and guard["flagged"] and not before_flag:
        ev = guard.get("evidence") or {}
        events.append({"action": "non_condorcet_flagged", "actor": "bandit",
                       "step": guard.get("flagged_at"),
                       "cycle": [names.get(a) for a in ev.get("cycle", [])],
                       "beat_champion": [names.get(a) for a in ev.get("beat_champion", [])],
                       "switched": bandit.structure().get("mode") == "copeland"})
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
