"""``POST /outcomes``: an outcome event (an add-to-cart, a purchase) attributed to the
impression that earned it and recorded once, for the workers to credit
(:mod:`service.credit.outcome_events`).

**Attribution is last touch.** By user (a back end such as the order service, which
knows the user and the product: ``{"user", "action", "id", "value", "event_id"}``, with
the front-end key or the admin token), the event goes to the most recent impression of
the experiment that showed document ``id`` to this user, if it was shown within the
metric's ``window_s`` (the attribution index the search wrote: :mod:`service.store.keys`,
``rd:{e}:au:<u>``; a later impression showing the document replaced the earlier one). By
impression (the browser: ``{"impression_id", "token", ...}``, what ``rankduel.js``'s
``track()`` sends), it goes to that impression if it showed the document, and an
impression older than the window is refused (422).

**Exactly once per event_id.** The event is recorded under a digest of its ``event_id``
in the experiment's slot by the same script that attributes it, unless that key exists:
a retried order counts once (the answer says ``duplicate``). It is then a pending item of
the experiment, due at once, credited by a worker like an impression.

**A/B experiments** (``"design": "ab"``) attribute the same way, to the last touch their
searches wrote, and the same script counts the event at once: the user's value of each
metric within its window moves, and the arm's moments with it (``ab_outcome.lua``,
:mod:`service.ab.store`); nothing is left for a worker. Each candidate experiment's
design builds its call and says what follows it
(:meth:`~service.designs.base.Design.outcome_call`, ``credit_outcome``).

The request costs one Redis round trip: one script call per candidate experiment
(pipelined), the candidates coming from the process's cached view of the running
experiments' actions (:mod:`service.outcomes.actions`). A recorded event also marks the
sweep's index, at most once a second per experiment and process, as a search does.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from service import metrics
from service.errors import Forbidden, Unauthorized, Unprocessable
from service.outcomes.actions import Actions, Candidate
from service.outcomes.declared import value_problem
from service.store import Store
from service.store.keys import OUTCOME_MEMBER, experiment_of
from service.store.outcomes import OutcomeCall
from service.tokens import user_hash, verify_token

#: an event's record outlives the longest window by this much, so a retry that comes
#: late is still recognized (and a worker that was away still finds the event)
EVENT_GRACE_S = 86400


def digest(event_id: str) -> str:
    """The event's key part: a digest of its ``event_id`` (any text, bounded length).

    >>> digest("order-1") == digest("order-1") != digest("order-2")
    True
    """
    return hashlib.blake2b(event_id.encode(), digest_size=16).hexdigest()


def record(store: Store, secret: bytes, actions: Actions, *, action: str, doc: str,
           value: float | None, event_id: str, impression_id: str | None = None,
           token: object = None, user: str | None = None, keyed: bool = False,
           vouched: bool = False) -> dict[str, Any]:
    """Attribute and record one outcome event; the answer (202). 422 naming the field
    for an action no running experiment declares (for an impression: its experiment), a
    value the action's metrics cannot count, an impression older than the window; 403
    for a bad token; 401 for a ``user`` without a key. ``vouched``: the sender's key
    stands for the impression's token (a UBI event sent server-side)."""
    if user is not None and not keyed:
        raise Unauthorized("an outcome by 'user' comes from a back end: send the front-end "
                           "key or the admin token (Authorization: Bearer)")
    if impression_id is not None:
        exp_id = experiment_of(impression_id)
        if exp_id is None:
            raise Unprocessable("field 'impression_id': not an impression id of this "
                                "service")
        # the impression's token, unless ``vouched``: a UBI sender's front-end key vouches
        # for the event of an impression it reports (``POST /ubi/events``); ``POST
        # /outcomes`` asks a back end for ``user`` instead
        if token is not None or not vouched:
            try:
                verify_token(secret, token, impression_id, exp_id, now=time.time())
            except Forbidden as exc:
                raise Forbidden(f"field 'token': {exc.message}") from None
        candidates = actions.candidates(action, exp_id)
        if not candidates:
            raise Unprocessable(f"field 'action': experiment {exp_id!r} is not running or "
                                f"declares no metric of action {action!r}")
    elif not (candidates := actions.candidates(action)):
        raise Unprocessable(f"field 'action': no running experiment declares a metric of "
                            f"action {action!r}")
    problem = value_problem([m for c in candidates for m in c.metrics], value)
    if problem:
        raise Unprocessable(problem)
    key = digest(event_id)
    member = OUTCOME_MEMBER + key
    calls = [c.design.outcome_call(store, _call(c, key, doc, value, action, secret, user,
                                                impression_id), member)
             for c in candidates]
    replies = store.outcomes.record_outcomes(calls)
    return _answer(store, event_id, candidates, replies, by_impression=impression_id is not None)


def _call(c: Candidate, key: str, doc: str, value: float | None, action: str, secret: bytes,
          user: str | None, impression_id: str | None) -> OutcomeCall:
    return OutcomeCall(
        exp_id=c.exp_id, digest=key, doc=doc, action=action,
        windows=tuple((m.name, m.window_s, m.value) for m in c.metrics),
        value="" if value is None else repr(float(value)), ttl_s=c.longest_s + EVENT_GRACE_S,
        user_hash=None if user is None else user_hash(secret, c.exp_id, user),
        imp_id=impression_id)


def _answer(store: Store, event_id: str, candidates: list[Candidate],
            replies: list[list[str]], *, by_impression: bool) -> dict[str, Any]:
    attributed, reasons, duplicate = [], [], False
    for c, reply in zip(candidates, replies, strict=True):
        code = reply[0]
        result = {"ok": "attributed", "duplicate": "duplicate", "window": "outside_window",
                  "gone": "no_experiment"}.get(code) or reply[1]
        metrics.labelled(metrics.OUTCOMES, c.exp_id, result).inc()
        if code in ("ok", "duplicate"):
            duplicate |= code == "duplicate"
            attributed.append({"experiment": c.exp_id, "impression_id": reply[1],
                               "metrics": [m for m in reply[2].split(",") if m]})
            if code == "ok":  # its credit starts (an A/B test's script counted it)
                c.design.credit_outcome(store, c.exp_id)
        elif code == "window":
            if by_impression:
                raise Unprocessable(
                    f"field 'impression_id': the impression was shown "
                    f"{float(reply[1]):.0f} s ago, beyond the window of every metric of "
                    f"this action ({', '.join(f'{m.name}: {m.window_s} s' for m in c.metrics)})")
            reasons.append("outside_window")
        elif code == "gone":
            reasons.append("no_experiment")
        else:
            reasons.append(reply[1])
    if not attributed:
        return {"attributed": False, "event_id": event_id,
                "reason": reasons[0] if reasons else "no_impression"}
    return {"attributed": True, "event_id": event_id, "duplicate": duplicate,
            "experiments": attributed}
