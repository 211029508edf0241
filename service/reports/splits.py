"""Every split of an experiment checked (:mod:`rollout.srm`: the sequential
Dirichlet–multinomial test of Lindon & Malek 2022, flagged at p < 0.001 with a minimum
deviation), for the report, the metric ``rankduel_srm_flagged`` and the alert:

* **on a placement** (interleaving or A/B): the users (distinct per period) and searches
  the experiment's buckets were served against the share it held, period by period (the
  placement's versions: ramps and pauses included, :mod:`service.store.splits`), the
  rest of the placement (its control and the other experiments) as the other arm. A
  search that fell back to the control's list counts for the control: a treatment that
  fails for some users shows here. A user counts once, in the period and arm that first
  saw them (:mod:`service.store.splits`): the new users of a period are that period's
  sample;
* **team draft's coin** (interleaving): which team picked first and each position's
  team, counted when the impression is saved (:func:`team_fields`), against 50/50
  (:func:`rollout.srm.check_first_pick`, :func:`rollout.srm.check_positions`).

Only the users' checks flag: a user's searches are not independent draws (the same
person searches again in the same arm), so the searches' check is shown, not acted on.
While a split is flagged, the verdict is not to be trusted until it is explained.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from rollout import srm
from service.designs.registry import design_of
from service.store import Store
from service.store.snapshot import ExperimentMissing, Snapshot

log = logging.getLogger("rankduel.webhooks")

#: the counter fields of team draft's balance (``rd:{e}:counters``)
FIRST, POSITION = "tb_first_", "tb_pos_"


def team_fields(teams: Sequence[int]) -> dict[str, int]:
    """The counter increments of one two-ranker team-draft impression's ``teams``.

    >>> team_fields([-1, 1, 0, 0, 1])
    {'tb_first_1': 1, 'tb_pos_0_1': 1, 'tb_pos_1_0': 1, 'tb_pos_2_0': 1, 'tb_pos_3_1': 1}
    """
    first, per_pos = srm.team_balance([list(teams)], m=2)
    out = {f"{FIRST}{j}": n for j, n in enumerate(first) if n}
    out.update({f"{POSITION}{i}_{j}": n for i, row in enumerate(per_pos)
                for j, n in enumerate(row) if n})
    return out


def team_counts(counters: dict[str, int]) -> tuple[list[int], list[list[int]]]:
    """The first-pick and per-position counts back from the counters."""
    first = [counters.get(f"{FIRST}{j}", 0) for j in range(2)]
    per_pos: dict[int, list[int]] = {}
    for k, n in counters.items():
        m = re.fullmatch(rf"{POSITION}(\d+)_([01])", k)
        if m:
            per_pos.setdefault(int(m[1]), [0, 0])[int(m[2])] += int(n)
    rows = [per_pos.get(i, [0, 0]) for i in range(max(per_pos, default=-1) + 1)]
    return first, rows


def placement_split(store: Store, name: str, exp_id: str) -> dict[str, Any] | None:
    """The experiment against the rest of placement ``name`` (users and searches); None
    before any search was counted."""
    users, searches = [], []
    for p in store.splits.split_counts(name):
        share = float(p["shares"].get(exp_id, 0.0))
        shares = {"treatment": share, "control": max(1.0 - share, 0.0)}
        for out, counts in ((users, p["users"]), (searches, p["searches"])):
            mine = int(counts.get(exp_id, 0))
            out.append(srm.Period(shares, {"treatment": mine,
                                           "control": sum(counts.values()) - mine}))
    if not any(sum(p.counts.values()) for p in searches):
        return None
    return {"users": srm.check(users).to_json(),
            "searches": srm.check(searches, unit="searches").to_json()}


def section(store: Store, meta: dict[str, Any], counters: dict[str, int] | None = None
            ) -> dict[str, Any]:
    """The report's ``split``: ``placement`` (:func:`placement_split`, or None),
    ``first_pick`` and ``positions`` (team draft, or None), ``flagged`` and the
    ``message`` of what is flagged (None: nothing)."""
    name = meta.get("placement")
    placement = placement_split(store, name, meta["id"]) if name else None
    first_pick = positions = None
    if design_of(meta).interleaves:  # team draft's coin
        first, per_pos = team_counts(counters if counters is not None
                                     else store.placements.guard_counters(meta["id"]))
        if sum(first):
            first_pick = srm.check_first_pick(first).to_json()
            checks = srm.check_positions(per_pos)
            bad = [(i, c) for i, c in enumerate(checks) if c.flagged]
            positions = {"checked": len(checks), "flagged": bool(bad),
                         "message": (f"position {bad[0][0] + 1}: {bad[0][1].message}" if bad
                                     else "every position's team got its half")}
    messages = []
    if placement and placement["users"]["flagged"]:
        messages.append(placement["users"]["message"])
    if first_pick and first_pick["flagged"]:
        messages.append("team draft's first pick: " + first_pick["message"])
    if positions and positions["flagged"]:
        messages.append("team draft's " + positions["message"])
    return {"placement": placement, "first_pick": first_pick, "positions": positions,
            "flagged": bool(messages), "message": "; ".join(messages) or None}


def untrusted(verdict: str, split: dict[str, Any]) -> str:
    """The verdict, marked not to be trusted while the split is flagged."""
    if not split["flagged"]:
        return verdict
    return f"not to be trusted until the split is explained: {split['message']}; {verdict}"


__all__ = ["flag_message", "flagged", "flagged_splits", "placement_split", "section",
           "team_counts", "team_fields", "untrusted"]


def flagged(store: Store, snap: Snapshot) -> bool:
    """Whether any split of an experiment is flagged now (the metric's value): the
    design's own (an A/B test's arms' users: :meth:`service.designs.base.Design.
    split_flag`), its share of its placement, team draft's coin."""
    if design_of(snap.meta).split_flag(store, snap) is not None:
        return True
    return section(store, snap.meta)["flagged"]


def flag_message(store: Store, snap: Snapshot) -> str:
    """What is flagged, in words: the design's own split first, else the report's."""
    own = design_of(snap.meta).split_flag(store, snap)
    if own is not None:
        return own
    return section(store, snap.meta)["message"] or "its split is out of balance"


def flagged_splits(store: Store) -> list[tuple[str, str, str]]:
    """``(experiment, placement, what is flagged)`` for each running experiment of a
    placement whose split is flagged now (:func:`flagged`): what the workers' sweep
    tells the webhooks (``srm_flag``)."""
    out = []
    for name in store.placements.placement_names():
        try:
            entries = (store.placements.placement(name) or {}).get("experiments", [])
        except Exception:
            log.exception("splits of placement %s not read", name)
            continue
        for e in entries:
            if e["status"] != "running":
                continue
            try:
                snap = store.experiments.snapshot(e["experiment"])
                if flagged(store, snap):
                    out.append((e["experiment"], name, flag_message(store, snap)))
            except ExperimentMissing:
                continue
            except Exception:
                log.exception("split of experiment %s not checked", e["experiment"])
    return out
