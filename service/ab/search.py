"""Serving a search of an A/B experiment (``"design": "ab"``): one arm's list, whole.

:func:`service.search.serve.search` hands an A/B experiment's searches here (through its
design, :class:`service.ab.design.ABDesign`), after the controller counted the step
(:class:`service.experiments.controller.Choice`: the experiment's snapshot and its rankers
by arm; arm 0 is the placement's control).

1. **The arm**: :func:`rollout.ab.arms.arm_of` of the user and the experiment's salt,
   sticky, in equal shares. A search without a user id, or of an experiment that is not
   running, gets the control's list and is not measured (the user is the unit: a search
   of nobody cannot be counted for anyone); so does a user's search beyond the arms.
2. **The list**: the arm's ranker, called once; its first ``k`` results, unchanged, no
   interleaving. A ranker that fails falls back to the control's list, and the search
   counts in the **control** arm: rankduel counts a search where it served it. That is
   the broken split the SRM check exists to find (:mod:`rollout.srm`): the report flags
   it ("the treatment got 45 % of users where 50 % were assigned") and its verdict is not
   to be trusted until the treatment is fixed. The control failing too is a 502 (on a
   placement: its fallback, the control's page).
3. **The count**: the search, its user (a keyed hash, never the id) and its arm go to
   :meth:`service.ab.store.ABStore.save_ab_search` with the rankers' guardrail counts,
   one script; the answer carries an impression id and a click token like any
   experiment's, and ``POST /clicks`` with them counts the search clicked, once
   (:mod:`service.ab.store`). With metrics of an action declared, the same script
   enters a new user in each with the value 0 and writes the last touches an outcome
   event is attributed by (``POST /outcomes``).
"""

from __future__ import annotations

import time
from typing import Any

from rollout import call_counts
from rollout.ab.arms import arm_of, salt_of
from service.errors import BadGateway
from service.outcomes.declared import attribution_ttl, declared
from service.rankers.client import RankerFailure
from service.runtime import Runtime
from service.search.ranker_health import SearchTiming
from service.store.keys import new_impression_id
from service.store.placements import GUARD_PREFIX
from service.tokens import issue_token


def serve(rt: Runtime, exp_id: str, choice: Any, q: str, k: int, user: str | None,
          timing: SearchTiming | None = None, calls: list[call_counts.Call] | None = None,
          user_hash: str | None = None) -> dict[str, Any]:
    """One search of A/B experiment ``exp_id`` (module docstring); ``choice`` is the
    controller's, ``user_hash`` the user's keyed hash."""
    snap, by_arm = choice.snapshot, choice.by_arm
    arms = sorted(by_arm)
    measured = bool(user) and snap.lifecycle == "running"
    want = arm_of(user, salt_of(exp_id), len(arms)) if measured else 0
    arm = arms[want] if measured else arms[0]
    tried = [arm] if arm == arms[0] else [arm, arms[0]]
    served, results, waited_total = None, None, 0.0
    tally: list[call_counts.Call] = []
    for a in tried:
        [res], waited = rt.rankers.fetch_timed([by_arm[a]], q, k, experiment=exp_id,
                                               user=user)
        waited_total += waited
        if isinstance(res, RankerFailure):
            call_counts.tally(tally, [], [by_arm[a].name], waited)
            continue
        call_counts.tally(tally, [(a, by_arm[a], res)], [], waited)
        served, results = a, res[:k]
        break
    if timing is not None:
        timing.rankers_s += waited_total
    if calls is not None:
        calls.extend(tally)
    if served is None:
        raise BadGateway(f"no ranker of experiment {exp_id!r} could answer")
    items = [{**item, "rank": rank} for rank, item in enumerate(results, start=1)]
    out: dict[str, Any] = {"impression_id": None, "token": None, "experiment": exp_id,
                           "rankers": [by_arm[served].name], "results": items}
    if not measured:
        return out
    imp_id = new_impression_id(exp_id)
    expires = int(time.time() + rt.config.token_ttl_s)
    counters = {"impressions": 1, "ab_searches": 1}
    if served != arm:
        counters["fallback"] = 1
    if tally:
        counters.update(call_counts.fields(tally, GUARD_PREFIX))
    metrics = declared(snap.meta)
    rt.store.ab.save_ab_search(
        imp_id, exp_id=exp_id, t=choice.t, arm=served, user=user_hash or str(user),
        shown=[str(i["id"]) for i in results], token_expires=expires,
        ttl_s=rt.config.impression_ttl_s, counters=counters,
        urls=[_url(i) for i in results],
        conversions=[m.name for m in metrics if not m.is_click],
        attribution_ttl_s=attribution_ttl(metrics))
    out["impression_id"] = imp_id
    out["token"] = issue_token(rt.secret, imp_id, exp_id, expires)
    return out


def _url(item: dict[str, Any]) -> str | None:
    url = item.get("url")
    if isinstance(url, str) and len(url) <= 2048 and url.startswith(("http://", "https://")):
        return url
    return None


__all__ = ["serve"]
