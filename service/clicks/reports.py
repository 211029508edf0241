"""The front end's reports on an impression: record clicks (``POST /clicks``, the click
redirect ``/r``) and end it (``POST /impressions/ID/end``).

Clicks and ends only touch the impression; crediting happens in a worker once the
impression closes (:mod:`service.credit`).
"""


from __future__ import annotations

import contextlib
import time
from typing import Any

from service import metrics
from service.designs.registry import design_named
from service.errors import Forbidden, Unprocessable
from service.runtime import Runtime
from service.store import (
    ImpressionClosed,
    ImpressionMissing,
    TooManyClicks,
)
from service.store.client import STORE_ERRORS
from service.store.records import Impression
from service.tokens import verify_token


def _load_verified(rt: Runtime, imp_id: str, token: object, *, keyed: bool = False
                   ) -> Impression:
    """The impression, its token checked (``keyed``: a front end with a key may send
    none; a token it sends is still checked)."""
    imp = rt.store.impressions.impression(imp_id)
    if imp is None:
        raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
    if keyed and token is None:
        return imp
    try:
        verify_token(rt.secret, token, imp_id, imp.exp, now=time.time())
    except Forbidden:
        metrics.TOKENS_REFUSED.inc()
        raise
    return imp


def shown_positions(imp: Impression, clicks: list[tuple[str, int]]) -> list[int]:
    """The 0-based positions of ``clicks`` (document, 1-based rank), each the rank the
    impression showed the document at; 422 otherwise."""
    shown = imp.shown
    positions = []
    for doc, rank in clicks:
        if doc not in shown:
            raise Unprocessable(f"document {doc!r} was not shown in impression {imp.id!r}")
        if not 1 <= rank <= len(shown) or shown[rank - 1] != doc:
            raise Unprocessable(
                f"document {doc!r} was shown at rank {shown.index(doc) + 1}, not {rank}")
        positions.append(rank - 1)
    return positions


def record_clicks(rt: Runtime, imp_id: str, token: object, clicks: list[tuple[str, int]],
                  dwell_ms: dict[int, int] | None = None, *, keyed: bool = False
                  ) -> dict[str, Any]:
    """Validate clicks against what the impression showed and record them (once each),
    with the dwell time per position a browser reported on return (``rankduel.js``;
    the experiment's dwell rule applies it when crediting: :func:`service.credit.step.
    satisfied_clicks`). ``keyed``: the request carries a front-end key, which vouches
    for a click sent without the token (``POST /ubi/events`` from a server)."""
    imp = _load_verified(rt, imp_id, token, keyed=keyed)
    positions = shown_positions(imp, clicks)
    return design_named(imp.design).record_clicks(rt, imp, positions, dwell_ms)


def add_clicks(rt: Runtime, imp: Impression, positions: list[int],
               dwell_ms: dict[int, int] | None) -> dict[str, Any]:
    """An interleaving impression's checked clicks added (once each) for the worker to
    credit (:meth:`service.interleaving.design.InterleavingDesign.record_clicks`)."""
    added = rt.store.impressions.add_clicks(imp.id, imp.exp, positions,
                                            inactivity_s=rt.config.inactivity_s,
                                            ttl_s=rt.config.impression_ttl_s,
                                            max_reports=rt.config.clicks_per_impression,
                                            dwell_ms=dwell_ms)
    return {"impression_id": imp.id, "accepted": added, "duplicates": len(positions) - added}


def click_through(rt: Runtime, imp_id: str, token: object, doc: str, rank: int,
                  url: str) -> tuple[str, dict[str, Any] | None]:
    """The click redirect: the result URL to send the user to, and the click recorded
    (None when it could not be: the impression closed or over its limit — the user
    still gets to the page). ``url`` must be the one the ranker returned for ``doc`` at
    ``rank`` in this impression: never an open redirect."""
    redirect_target(rt, imp_id, token, doc, rank, url)
    try:
        return url, record_clicks(rt, imp_id, token, [(doc, rank)])
    except (ImpressionClosed, TooManyClicks):
        return url, None


def redirect_target(rt: Runtime, imp_id: str, token: object, doc: str, rank: int,
                    url: str) -> str:
    """``url`` when the token is good and it is the URL shown for ``doc`` at ``rank`` in
    impression ``imp_id``; 403/404/422 otherwise."""
    imp = _load_verified(rt, imp_id, token)
    shown, urls = imp.shown, imp.urls
    if not 1 <= rank <= len(shown) or shown[rank - 1] != doc:
        raise Unprocessable(f"document {doc!r} was not shown at rank {rank} in impression "
                            f"{imp_id!r}")
    if rank > len(urls) or urls[rank - 1] != url:
        raise Unprocessable(f"url is not the one shown for document {doc!r} in impression "
                            f"{imp_id!r}: the redirect leads only to shown results")
    return url


def end_impression(rt: Runtime, imp_id: str, token: object | None, *,
                   clicks: list[tuple[str, int]] | None = None,
                   dwell_ms: dict[int, int] | None = None) -> dict[str, Any]:
    """Close the impression and make sure a worker will credit it.

    The token is checked when given. ``clicks`` (with their ``dwell_ms``) are the
    page's clicks sent again with the end: those not recorded yet are recorded first,
    as by :func:`record_clicks` (token required), so a click report that loses the race
    with the end is not lost; on an impression already closed, or over its reports,
    they are left out and the end goes on. Rather than one task per impression, the worker
    credits each experiment's closed impressions in batches (``rankduel.drain``): a drain
    task is queued only when none is queued or running for the experiment (a flag in
    Redis, taken atomically with the close; the drain then spreads a backlog over
    more workers).
    """
    if clicks:
        with contextlib.suppress(ImpressionClosed, TooManyClicks):
            record_clicks(rt, imp_id, token, clicks, dwell_ms=dwell_ms)
    if token is not None:
        imp = _load_verified(rt, imp_id, token)
    else:
        imp = rt.store.impressions.impression(imp_id)
        if imp is None:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
    return design_named(imp.design).end(rt, imp)


def close(rt: Runtime, imp: Impression) -> dict[str, Any]:
    """Close an interleaving impression and queue its experiment's drain when none holds
    a lease (:meth:`service.interleaving.design.InterleavingDesign.end`; the steps:
    :func:`end_impression`)."""
    imp_id = imp.id
    first, drain = rt.store.impressions.end_impression(imp_id, imp.exp,
                                                       drain_ttl_s=rt.config.drain_lease_s)
    if drain is not None and not rt.queue.drain(imp.exp, drain):
        # the broker is away: the impression is closed and due; give the lease back so
        # that the next sweep queues its drain (the sweep's index marks it due now); if
        # Redis is away too the lease lapses by itself within drain_lease_s
        with contextlib.suppress(*STORE_ERRORS):
            rt.store.drains.release_drain(imp.exp, drain)
    return {"impression_id": imp_id, "status": "closed", "already_closed": not first}
