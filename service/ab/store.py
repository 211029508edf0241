"""A/B experiments in Redis: each search of a user in an arm and each clicked search,
kept as per-user counts and, per arm, the moments of every per-user metric
(:mod:`rollout.ab.moments`), one script per event; the light impression a click comes
back with; the confirmed pairs of ``GET /agreements``.

Users are the unit. ``rd:{e}:ab:users`` keeps each user's searches and clicked searches in
their arm (the user a keyed hash, never the id); ``rd:{e}:ab:m`` keeps, per arm and
metric, ``n`` (users), ``total`` and ``squares`` of the users' values. A search moves its
user from ``(s, c)`` to ``(s + 1, c)``, a search's first click from ``(s, c)`` to
``(s, c + 1)``; the script of the event changes the moments by the increments that
replace the user's old values by the new ones (``ab_moments.lua``, the Lua of
:func:`rollout.ab.moments.increments`, held to it by tests/service/test_ab_store.py), so
the moments are always those of the users' current values and the report reads them in
one ``HGETALL``.

Exactly once
------------
A search is counted by the script that stores its impression (``ab_search.lua``): it
stores and counts together or not at all, and a retried call finds the impression and
counts nothing (the id is fresh per search). A clicked search is counted by the first
click report of the impression (``ab_click.lua``): ``HSETNX ab_clicked`` on the
impression's own hash, in the same script as the counts, so however many reports arrive
for one impression, repeated, retried or concurrent, and whichever API process takes
them, one moves the counts and the others find the mark. Every key is the experiment's
(one hash tag), so each script is atomic on a Redis Cluster too. A click after the
impression expired is refused (404), as for any impression.

Conversions
-----------
An experiment that declares metrics of an action (``"metrics"``, docs/conversions.md)
also keeps each user's value of each (``<arm>:<user>:v:<metric>`` in the users' hash)
and its moments per arm beside the others. A user's first search in an arm enters them
in every conversion metric's moments with the value 0 (``ab_search.lua``): a user who
never converts counts, as a 0 (:mod:`rollout.ab.conversions`). The search also writes the
impression's attribution entry and the user's last touch of each document shown, with
the arm that served it, living as long as the longest window. An outcome event is
attributed to the last touch and counted by ``ab_outcome.lua`` (:meth:`ABStore.outcome_call`,
the A/B design's outcome call, sent by
:meth:`service.store.outcomes.OutcomeStore.record_outcomes`): it records the event under
the digest of its ``event_id`` and moves the user's value and the arm's moments in the
same script, unless that record exists, so a retried event counts once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from service.store.base import StorePart
from service.store.keys import (
    AGREEMENTS,
    ab_decisions_key,
    ab_moments_key,
    ab_users_key,
    attribution_key,
    counters_key,
    exp_key,
    imp_key,
    touches_key,
)
from service.store.outcomes import OutcomeCall, ScriptRun
from service.store.scripts import SCRIPTS
from service.store.snapshot import ExperimentMissing, text

#: the per-user metrics the counters give (rollout.ab.moments.METRICS without conversions)
AB_METRICS = ("ctr", "searches", "abandonment")


class ABStore(StorePart):
    """A/B experiments' counts and the confirmed pairs (``store.ab``)."""

    PART = "ab"

    SCRIPTS: ClassVar[dict[str, str]] = {"_ab_search_script": "ab_search",
                                         "_ab_click_script": "ab_click",
                                         "_ab_outcome_script": "ab_outcome"}

    def save_ab_search(self, imp_id: str, *, exp_id: str, t: int, arm: int, user: str,
                       shown: list[str], urls: list[str | None], token_expires: int,
                       ttl_s: int, counters: dict[str, int],
                       conversions: Sequence[str] = (), attribution_ttl_s: int = 0) -> bool:
        """Store an A/B search's light impression (what a click is checked against) and
        count the search for ``user`` (a keyed hash) in ``arm``, in one script; False
        for a retried call that found it stored. :class:`ExperimentMissing` when the
        experiment is gone.

        ``conversions``: the experiment's conversion metrics, which a user's first
        search in the arm enters with the value 0; ``attribution_ttl_s`` (> 0 with
        metrics of an action: the longest window) also writes the impression's
        attribution entry and the user's last touches, as an interleaving search does
        (module docstring: conversions)."""
        fields: dict[str, Any] = {
            "exp": exp_id, "t": t, "arms": json.dumps([arm]), "shown": json.dumps(shown),
            "record": "null", "duel": 0, "forfeits": "[]", "created": repr(self.clock()),
            "expires": token_expires, "closed": 0, "design": "ab", "ab_arm": arm,
            "ab_user": user}
        if urls and any(urls):
            fields["urls"] = json.dumps(urls)
        keys = [imp_key(exp_id, imp_id), ab_users_key(exp_id), ab_moments_key(exp_id),
                counters_key(exp_id), exp_key(exp_id)]
        args: list[Any] = [json.dumps([str(x) for kv in fields.items() for x in kv]),
                           int(ttl_s), int(arm), user, json.dumps(counters or {"impressions": 1}),
                           ",".join(conversions), int(attribution_ttl_s)]
        if attribution_ttl_s > 0:
            created = f"{self.clock():.3f}"
            tail = imp_id.rpartition(".")[2]
            keys += [attribution_key(exp_id, imp_id), touches_key(exp_id, user)]
            args += [json.dumps({"t": float(created), "arm": arm, "u": user, "shown": shown}),
                     json.dumps([x for pos, doc in enumerate(shown)
                                 for x in (doc, f"{tail}|{pos}|{created}|{arm}")])]
        out = self.call(self._ab_search_script, keys=keys, args=args)
        if out == -1:
            raise ExperimentMissing(f"no experiment {exp_id!r} (deleted during the search)")
        return out == 1

    def ab_click(self, exp_id: str, imp_id: str) -> int:
        """Count the A/B search ``imp_id`` clicked: 1 now, 0 it already was, -1 unknown or
        expired (module docstring: exactly once)."""
        return int(self._ab_click_script(*SCRIPTS["ab_click"].build(
            {"imp": imp_key(exp_id, imp_id), "users": ab_users_key(exp_id),
             "moments": ab_moments_key(exp_id), "counters": counters_key(exp_id)})))

    def outcome_call(self, call: OutcomeCall) -> ScriptRun:
        """``ab_outcome.lua``'s call for ``call``, which counts the event at once (module
        docstring: conversions), for :meth:`~service.store.outcomes.OutcomeStore.
        record_outcomes` to send with the other candidate experiments' calls."""
        keys, args = call.named(self.clock())
        return ScriptRun(self._ab_outcome_script, *SCRIPTS["ab_outcome"].build(
            {**keys, "users": ab_users_key(call.exp_id),
             "moments": ab_moments_key(call.exp_id), "counters": counters_key(call.exp_id)},
            {**args, "user": call.user_hash or "",  # name:window_s:kind: counted by kind
             "windows": ",".join(f"{n}:{w}:{kind}" for n, w, kind in call.windows)}))

    def ab_end(self, exp_id: str, imp_id: str) -> bool:
        """Close an A/B search's impression (no credit follows: its counts are already
        kept); True the first time."""
        return bool(self.r.hsetnx(imp_key(exp_id, imp_id), "ab_ended", 1))

    def ab_moments(self, exp_id: str) -> dict[int, dict[str, dict[str, float]]]:
        """arm -> metric -> ``{"n", "total", "squares"}`` (for
        :meth:`rollout.ab.Moments.from_json`)."""
        out: dict[int, dict[str, dict[str, float]]] = {}
        for k, v in self.r.hgetall(ab_moments_key(exp_id)).items():
            arm, metric, part = text(k).split(":")
            out.setdefault(int(arm), {}).setdefault(metric, {})[part] = float(text(v))
        return out

    def ab_clicked_counter(self, exp_id: str) -> int:
        return int(self.r.hget(counters_key(exp_id), "ab_clicked") or 0)

    def keep_decision(self, exp_id: str, treatment: str, decision: dict[str, Any]) -> bool:
        """Keep a treatment's first decision (False: one is kept already)."""
        return bool(self.r.hsetnx(ab_decisions_key(exp_id), treatment, json.dumps(decision)))

    def ab_decisions(self, exp_id: str) -> dict[str, dict[str, Any]]:
        """The decisions kept, by treatment."""
        return {text(k): json.loads(v)
                for k, v in self.r.hgetall(ab_decisions_key(exp_id)).items()}

    def put_agreement(self, ab_id: str, pair: dict[str, Any]) -> None:
        """Record (or update) the confirmed pair of A/B experiment ``ab_id``."""
        self.r.hset(AGREEMENTS, ab_id, json.dumps(pair))

    def agreements(self) -> dict[str, dict[str, Any]]:
        """Every confirmed pair, by its A/B experiment's id."""
        return {text(k): json.loads(v) for k, v in self.r.hgetall(AGREEMENTS).items()}


__all__ = ["AB_METRICS", "ABStore", "ExperimentMissing"]
