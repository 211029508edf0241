"""Impressions and their clicks in Redis: the write of a search's impression (counted and
scheduled for credit in one script), the click and end scripts, and the reads."""

from __future__ import annotations

import json
import secrets
from typing import Any, ClassVar

from service.store.base import (
    ImpressionClosed,
    ImpressionMissing,
    StoreBase,
    StorePart,
    TooManyClicks,
)
from service.store.drains import DrainStore
from service.store.keys import (
    attribution_key,
    clicks_key,
    counters_key,
    drains_key,
    events_key,
    exp_key,
    experiment_of,
    imp_key,
    legacy_imp_key,
    pending_key,
    shown_key,
    touches_key,
)
from service.store.records import Impression
from service.store.scripts import SCRIPTS
from service.store.snapshot import (
    ExperimentMissing,
    text,
)

#: ``json.dumps(..., ensure_ascii=False)`` built once (dumps builds an encoder per call
#: when given any option): the same text
_ARGS = json.JSONEncoder(ensure_ascii=False)


class ImpressionStore(StorePart):
    """Impressions: saved by ``/search``, clicked, ended, read. An impression's save and
    end mark the sweep's index, through the drains' part (``drains``)."""

    SCRIPTS: ClassVar[dict[str, str]] = {
        "_save_script": "save", "_click_script": "click", "_end_script": "end",
        "_extend_script": "extend"}

    def __init__(self, base: StoreBase, drains: DrainStore) -> None:
        super().__init__(base)
        self.drains = drains

    def save_impression(
        self,
        imp_id: str,
        *,
        exp_id: str,
        t: int,
        arms: list[int],
        shown: list[str],
        record: Any,
        duel: bool,
        forfeits: list[tuple[int, int]],
        token_expires: int,
        ttl_s: int,
        inactivity_s: float,
        counters: dict[str, int],
        urls: list[str | None] | None = None,
        segments: list[str] | None = None,
        user_hash: str | None = None,
        rankers: list[str] | None = None,
        events_maxlen: int = 0,
        attribution_ttl_s: int = 0,
        query: str | None = None,
    ) -> None:
        """Store an impression (with TTL), count it and its rankers' exposure, and
        schedule its credit for when it goes idle: one script, so a client that retries
        it after a lost reply (a shard restarting) stores and counts it once.

        ``segments``: the search's segment labels (:mod:`service.segments.dimensions`), kept as
        the impression's ``seg`` field, which the credit script reads. The same script
        appends the impression's event to the experiment's event log (with ``rankers``,
        their names, and ``user_hash``, never the user id), trimmed to about
        ``events_maxlen`` events when that is positive. ``query``, the search's text, is
        kept in the event only (``q``, for the UBI export: :mod:`service.events.ubi`);
        events saved before it have no ``q``.

        With ``attribution_ttl_s`` (an experiment with metrics of an action: the longest
        window), the same script writes the impression's attribution entry and, with
        ``user_hash``, the user's last touch of each shown document, both expiring then
        (:mod:`service.store.keys`, :mod:`service.outcomes`).

        Raises :class:`ExperimentMissing` (and writes nothing) when the experiment is gone:
        a search that was waiting for its rankers while the experiment was deleted must
        not leave a pending set, counters or an impression behind."""
        now = self.clock()
        fields = {
            "exp": exp_id,
            "t": t,
            "arms": json.dumps(arms),
            "shown": json.dumps(shown),
            "record": json.dumps(record),
            "duel": int(duel),
            "forfeits": json.dumps(forfeits),
            "created": repr(now),
            "expires": token_expires,
            "closed": 0,
        }
        if urls and any(urls):  # the result URLs, for the click redirect /r
            fields["urls"] = json.dumps(urls)
        if segments:
            fields["seg"] = ",".join(segments)
        # the event from the field values already encoded (no second encoding of the record)
        event = (f'{{"t":{int(t)},"arms":{fields["arms"]},"rankers":{json.dumps(rankers or [])},'
                 f'"shown":{fields["shown"]},"record":{fields["record"]},"duel":{int(duel)},'
                 f'"forfeits":{fields["forfeits"]},"seg":{json.dumps(fields.get("seg", ""))},'
                 f'"user":{json.dumps(user_hash)},"created":{fields["created"]}'
                 + (f',"q":{_ARGS.encode(query)}}}' if query is not None else '}'))
        keys = [imp_key(exp_id, imp_id), pending_key(exp_id), counters_key(exp_id),
                shown_key(exp_id), exp_key(exp_id), events_key(exp_id)]
        args = [imp_id, int(ttl_s), repr(now + inactivity_s),
                ",".join(f"{name}:{int(n)}" for name, n in counters.items()),
                ",".join(str(int(a)) for a in arms), repr(1.0 / len(arms)),
                # the field/value pairs as one JSON array of strings: one argument to
                # encode instead of two dozen (the values stored are the same strings)
                _ARGS.encode([str(x) for kv in fields.items() for x in kv]), event,
                int(events_maxlen)]
        if attribution_ttl_s > 0:
            keys, args = self._attribution(keys, args, imp_id, exp_id, now, arms, record,
                                           fields.get("seg", ""), shown, user_hash,
                                           attribution_ttl_s)
        out = self.call(self._save_script, keys=keys, args=args)
        if out == -1:
            raise ExperimentMissing(f"no experiment {exp_id!r} (deleted during the search)")
        self.drains.mark_due(exp_id, now + inactivity_s)

    @staticmethod
    def _attribution(keys: list[str], args: list[Any], imp_id: str, exp_id: str,
                     now: float, arms: list[int], record: Any, seg: str, shown: list[str],
                     user_hash: str | None, ttl_s: int) -> tuple[list[str], list[Any]]:
        """The save script's keys and arguments with the attribution entry and, with a
        user, the last touches (the random part of the impression id, the position,
        the time)."""
        created = f"{now:.3f}"
        kept = {k: v for k, v in record.items() if k != "page"} if record else record
        entry = _ARGS.encode([float(created), arms, kept, seg, shown])
        touches = ""
        keys = [*keys, attribution_key(exp_id, imp_id)]
        if user_hash:
            keys.append(touches_key(exp_id, user_hash))
            tail = imp_id.rpartition(".")[2]
            touches = _ARGS.encode([x for pos, doc in enumerate(shown)
                                    for x in (doc, f"{tail}|{pos}|{created}")])
        return keys, [*args, int(ttl_s), entry, touches]

    def experiment_of(self, imp_id: str) -> str | None:
        """The experiment of an impression id (its prefix; for an id issued before the
        current key layout, the index written by ``rankduel migrate-keys``)."""
        exp_id = experiment_of(imp_id)
        if exp_id is None:
            exp_id = text(self.r.get(legacy_imp_key(imp_id)))
        return exp_id

    def selection_of(self, exp_id: str, imp_id: str) -> int | None:
        """The selection count ``t`` of impression ``imp_id`` (its search was the
        ``t``-th of its experiment); None when it is gone."""
        t = self.r.hget(imp_key(exp_id, imp_id), "t")
        return int(t) if t else None

    def impression(self, imp_id: str) -> Impression | None:
        """The impression's fields (not its clicks: the credit step reads those, with
        :meth:`~service.store.credits.CreditStore.read_impressions`), or None when unknown
        or expired."""
        exp_id = self.experiment_of(imp_id)
        if exp_id is None:
            return None
        raw = self.r.hgetall(imp_key(exp_id, imp_id))
        if not raw:
            return None
        d = {text(k): text(v) for k, v in raw.items()}
        return Impression(
            id=imp_id,
            exp=exp_id,
            t=int(d.get("t") or 0),
            arms=json.loads(d["arms"]),
            shown=json.loads(d["shown"]),
            record=json.loads(d["record"]),
            duel=d.get("duel") == "1",
            forfeits=[tuple(f) for f in json.loads(d.get("forfeits") or "[]")],
            created=float(d.get("created") or 0.0),
            expires=int(d["expires"]),
            closed=d.get("closed") == "1",
            credited="credited" in d,
            reports=int(d.get("reports") or 0),
            urls=json.loads(d["urls"]) if d.get("urls") else [],
            segments=tuple(x for x in (d.get("seg") or "").split(",") if x),
            design=d.get("design") or "interleaving",
            ab_user=d.get("ab_user") or "",
        )

    def add_clicks(self, imp_id: str, exp_id: str, positions: list[int], *,
                   inactivity_s: float, ttl_s: int, max_reports: int = 100,
                   dwell_ms: dict[int, int] | None = None) -> int:
        """Record clicked positions (a set: repeats count once) unless the impression is
        closed; push back its inactivity deadline. Returns how many positions were new.
        Atomic (Lua), so a click can never slip in after the impression was credited.

        ``dwell_ms`` (position -> ms, what a browser reports when its user comes back)
        is kept per position as ``dwell:<position>`` in the impression, the longest of
        the reports, in the same script: a dwell is never recorded after the credit.

        An impression takes at most ``max_reports`` reports (:class:`TooManyClicks`
        beyond): each pushes its deadline back, so a storm of reports could otherwise
        keep it from being credited until it expires."""
        now = self.clock()
        out = self._click_script(*SCRIPTS["click"].build(
            {"imp": imp_key(exp_id, imp_id), "clicks": clicks_key(exp_id, imp_id),
             "pending": pending_key(exp_id), "events": events_key(exp_id)},
            {"due": now + inactivity_s, "imp_id": imp_id, "ttl": ttl_s,
             "max_reports": max_reports, "dwell": dwell_ms or {}},
            [({}, {"position": p}) for p in positions]))
        if out == -3:
            raise TooManyClicks(f"impression {imp_id!r} has reached its limit of "
                                f"{max_reports} click reports")
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise ImpressionClosed(f"impression {imp_id!r} is closed; clicks are no longer "
                                   "accepted")
        return int(out)

    def extend_impression(self, imp_id: str, exp_id: str, *, expect: list[str],
                          shown: list[str], record: Any, urls: list[str | None],
                          inactivity_s: float, attribution_ttl_s: int = 0,
                          created: float = 0.0, arms: list[int] | None = None,
                          seg: str = "", user_hash: str | None = None,
                          ab_user: str | None = None) -> bool:
        """Replace an open impression's shown list, record and URLs by longer ones (its
        next result page, :mod:`service.search.paging`) unless it changed since it was read as
        ``expect`` (False then: another page came first). One script: it counts as a
        report (a credit read before it is read again, so it credits the longer record)
        and pushes back the inactivity deadline, like a click. Raises
        :class:`ImpressionMissing` or :class:`ImpressionClosed`. ``ab_user``: an A/B
        search's (its user's keyed hash), whose attribution entry and touches take the
        A/B form (:mod:`service.ab.store`)."""
        keys = [imp_key(exp_id, imp_id), pending_key(exp_id)]
        args: list[Any] = [self.clock() + inactivity_s, imp_id, json.dumps(expect),
                           json.dumps(shown), json.dumps(record),
                           json.dumps(urls) if any(urls) else ""]
        if attribution_ttl_s > 0:  # the longer page in the attribution index too
            now = f"{self.clock():.3f}"
            kept = {k: v for k, v in record.items() if k != "page"} if record else record
            keys.append(attribution_key(exp_id, imp_id))
            touches = ""
            if user_hash:
                keys.append(touches_key(exp_id, user_hash))
                tail = imp_id.rpartition(".")[2]
                touches = _ARGS.encode([x for pos in range(len(expect), len(shown))
                                        for x in (shown[pos], f"{tail}|{pos}|{now}")])
            entry: Any = [float(f"{created:.3f}"), arms or [], kept, seg, shown]
            if ab_user:  # an A/B search: its arm goes with each touch (service.ab.store)
                arm = (arms or [0])[0]
                keys = [*keys[:3], touches_key(exp_id, ab_user)]
                tail = imp_id.rpartition(".")[2]
                entry = {"t": float(f"{created:.3f}"), "arm": arm, "u": ab_user,
                         "shown": shown}
                touches = _ARGS.encode([x for pos in range(len(expect), len(shown))
                                        for x in (shown[pos], f"{tail}|{pos}|{now}|{arm}")])
            args += [_ARGS.encode(entry), touches, int(attribution_ttl_s)]
        out = self._extend_script(keys=keys, args=args)
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out == -2:
            raise ImpressionClosed(f"impression {imp_id!r} is closed: its clicks are being "
                                   "credited, so it cannot grow; start a new search (page 1)")
        return out == 1

    def end_impression(self, imp_id: str, exp_id: str, *,
                       drain_ttl_s: float) -> tuple[bool, str | None]:
        """Close the impression to new clicks and make it due now.

        Returns ``(closed now, drain token)``: the token is set when no drain is queued or
        running for the experiment and this call took a drain lease for one, i.e. the
        caller must queue a drain task with it.
        """
        token = secrets.token_hex(8)
        now = self.clock()
        out = self._end_script(*SCRIPTS["end"].build(
            {"imp": imp_key(exp_id, imp_id), "pending": pending_key(exp_id),
             "drains": drains_key(exp_id)},
            {"now": now, "imp_id": imp_id, "token": token,
             "lease_expires": now + max(1.0, drain_ttl_s)}))
        if out == -1:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
        if out >= 1:
            self.drains.mark_due(exp_id, now)  # due now: found by the sweep if its drain is lost
        return out >= 1, (token if out == 2 else None)
