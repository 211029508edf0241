"""What an experiment has decided, as events: ``ranker_shown_worse`` and
``verdict_certified``.

A verdict changes only when the policy's structure does, and the structure changes only
where a held outcome is decided (:func:`service.credit.protocol.resolve_hold`: the
policy's own ``update()`` in one optimistic transaction). So the hold's decision takes
the policy's verdicts before and after (:func:`verdicts`) and queues the events of the
difference in its own transaction (:func:`queue_changes`): an event is recorded exactly
when the verdict it tells commits.

The verdicts are those of the report (:func:`bandits.decision.decide`): for a policy
with family-wise verdicts (``recommended``), its certified champion and the rankers shown
worse at error rate δ; for a policy with an elimination test (the Merge family), the
rankers eliminated by it, and a champion certified when it is the only active ranker
left and the non-Condorcet guard has not flagged the data. Other policies decide
nothing of the kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, DuelingBandit
from service.store import Store
from service.webhooks import outbox


@dataclass(frozen=True)
class Verdicts:
    """A policy's verdicts: its certified champion (None: none) and the rankers shown
    worse (arm -> the arm that showed it, or None)."""

    certified: int | None = None
    shown_worse: dict[int, int | None] = field(default_factory=dict)


def verdicts(bandit: DuelingBandit) -> Verdicts | None:
    """The verdicts of ``bandit`` now (None for a policy that states none)."""
    fw = bandit.verdicts()
    if fw is not None:
        return Verdicts(fw["certified"], {int(a): int(b) for a, b in fw["shown_worse"].items()})
    if not bandit.elimination_test:
        return None
    worse: dict[int, int | None] = {int(a): info.get("by")
                                    for a, info in bandit.eliminated.items()}
    active = np.flatnonzero(bandit.status == ACTIVE)
    flagged = bool((bandit.non_condorcet() or {}).get("flagged"))
    champion = int(active[0]) if len(active) == 1 and worse and not flagged else None
    return Verdicts(champion, worse)


def queue_changes(store: Store, pipe, exp_id: str, before: Verdicts | None,
                  after: Verdicts | None, *, names: dict[int, str], name: str | None,
                  comparisons: int) -> list[dict[str, Any]]:
    """Queue in ``pipe`` (the hold's transaction, in MULTI) an event for each ranker newly
    shown worse and for a newly certified champion; the events (the caller marks the
    experiment due once the transaction has committed: :func:`outbox.mark_due`)."""
    if after is None:
        return []
    before = before or Verdicts()
    out = []
    for arm, by in sorted(after.shown_worse.items()):
        if arm in before.shown_worse:
            continue
        out.append(outbox.queue(store, pipe, exp_id, "ranker_shown_worse", {
            "ranker": names.get(arm, str(arm)),
            "by": None if by is None else names.get(by, str(by)),
            "comparisons": comparisons}, name=name))
    if after.certified is not None and after.certified != before.certified:
        out.append(outbox.queue(store, pipe, exp_id, "verdict_certified", {
            "champion": names.get(after.certified, str(after.certified)),
            "rankers": len(names), "comparisons": comparisons}, name=name))
    return out
