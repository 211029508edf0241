"""The next result page of an impression: ``GET /search?...&page=N&impression_id=I&token=T``.

Page ``N`` of ``k`` results is ranks ``(N-1)·k+1 .. N·k`` of the *same* interleaved list,
under the same impression: pages 1..N together are the first ``N·k`` documents of one
interleaving of depth ``N·k``, and the impression's clicks are credited once, as if that
long list had been shown at once. How:

1. **Check.** ``N·k`` must not exceed ``RANKDUEL_MAX_DEPTH`` (400); the token must be the
   one page 1 issued for this impression (403), the impression must belong to the
   experiment named (403), be open (409: closed or credited) and be for the same query
   (422).
2. **Fetch.** The impression's participants (the rankers that page 1 interleaved, in
   the same order) are asked for ``N·k`` results, ``{k}`` = ``N·k`` and ``{offset}`` =
   ``(N-1)·k`` in a templated request. A ranker that fails now contributes no new
   document (like a list that runs out; its page-1 failure would have been a forfeit).
   The participants go through the same circuit breaker as a search
   (:class:`service.search.ranker_health.RankerHealth`): one in quarantine *now* is not called
   and contributes no new document, as if it had failed, so page 2 does not wait out
   the timeout of a ranker known to be down (what a user paging on expects: the page at
   once, from the rankers that answer); a failure counts towards its quarantine and a
   success ends one, as on page 1. When no participant may be called or answers, 502
   says to start a new search, which selection serves with healthy rankers.
3. **Continue.** :func:`interleaving.extend` continues the method from the stored record
   with the generator state saved with it (``record["page"]``, written by
   :func:`service.search.serve.page_state`), so team draft
   continues its draft and probabilistic interleave its sampling; a single-ranker
   impression (no duel) continues that ranker's list.
4. **Store.** The impression's shown list, record and result URLs are replaced by the
   longer ones in one script that refuses when the impression closed or another page
   extended it meanwhile (compare-and-set on the shown list); it counts as a report on
   the impression (so a credit read before it is read again) and pushes back its
   inactivity deadline, like a click.

A page already reached is served again from the stored list (ranks shown once stay
where they were); a page that would skip ranks never shown (page 3 right after page 1)
is refused (422), since credit would count ranks nobody saw.
"""

from __future__ import annotations

from typing import Any

from service.clicks.reports import _load_verified
from service.errors import BadGateway, BadRequest, Conflict, Forbidden, Unprocessable
from service.experiments.controller import Choice
from service.outcomes.declared import attribution_ttl, declared
from service.runtime import Runtime
from service.search.ranker_health import RankerHealth, SearchTiming
from service.search.serve import _interleaving, _url, query_digest, shown_copies
from service.store import ImpressionClosed
from service.store.records import Impression
from service.tokens import user_hash


class PageConflict(Conflict):
    """Another request extended the impression between our read and our write."""


def check_depth(rt: Runtime, k: int, page: int) -> int:
    """``page·k``, or 400 when it is beyond ``RANKDUEL_MAX_DEPTH``."""
    depth = page * k
    if depth > rt.config.max_depth:
        raise BadRequest(
            f"page {page} of k={k} reaches rank {depth}, beyond the deepest result served "
            f"(RANKDUEL_MAX_DEPTH={rt.config.max_depth}): ask for a page at most "
            f"{max(1, rt.config.max_depth // k)}")
    return depth


def next_page(rt: Runtime, exp_id: str, q: str, k: int, page: int, imp_id: str,
              token: object, user: str | None,
              timing: SearchTiming | None = None) -> dict[str, Any]:
    """Serve page ``page`` of impression ``imp_id``; see the module docstring. ``timing``
    receives the time spent waiting for rankers (``Server-Timing``)."""
    timing = timing if timing is not None else SearchTiming()
    depth = check_depth(rt, k, page)
    imp = _load_verified(rt, imp_id, token)
    if imp.exp != exp_id:
        raise Forbidden(f"impression {imp_id!r} belongs to another experiment, not "
                        f"{exp_id!r}")
    for attempt in range(2):
        if imp.closed or imp.credited:
            raise ImpressionClosed(f"impression {imp_id!r} is closed: its clicks are being "
                                   "credited, so it cannot grow; start a new search (page 1)")
        try:
            return _serve(rt, imp, q, k, page, depth, user, token, timing)
        except PageConflict:
            if attempt:
                raise
            imp = _load_verified(rt, imp_id, token)  # another page came first: read it again
    raise AssertionError("unreachable")


def _serve(rt: Runtime, imp: Impression, q: str, k: int, page: int, depth: int,
           user: str | None, token: object, timing: SearchTiming) -> dict[str, Any]:
    record = dict(imp.record) if isinstance(imp.record, dict) else None
    cont = record.pop("page", None) if record is not None else None
    if record is not None:
        if cont is None:
            raise Conflict(f"impression {imp.id!r} was served before result pages "
                           "existed: it has no next page; start a new search")
        if cont["q"] != query_digest(q):
            raise Unprocessable("q is not the query of page 1 of this impression: a next "
                                "page continues the same search")
    snap = rt.store.experiments.snapshot(imp.exp)
    by_arm = {r.arm: r for r in snap.rankers}
    arms = [int(a) for a in imp.arms]
    present = [a for a in arms if a in by_arm]
    health = RankerHealth(rt, imp.exp, Choice(
        t=imp.t, arms=tuple(present), rankers=tuple(by_arm[a] for a in present),
        duel=len(present) > 1, snapshot=snap, champion=present[0] if present else 0,
        by_arm=by_arm, health=rt.store.ranker_health.ranker_health(imp.exp)), timing)
    called = [(a, by_arm[a]) for a in present if health.may_call(a)]
    start = (page - 1) * k
    ok, _failed = health.fetch(called, q, depth, user=user, offset=start)
    lists = {a: res for a, _, res in ok}
    if not lists:
        health.refuse_misconfigured()  # this process's allow-list, not the rankers
        why = "could answer" if called else "may be called: they are in quarantine"
        raise BadGateway(f"no ranker of impression {imp.id!r} {why}; start a new search "
                         "(page 1), which healthy rankers serve")
    shown = [str(d) for d in imp.shown]
    rankings = [[str(item["id"]) for item in lists.get(a, [])] for a in arms]
    if record is not None:
        rng = _interleaving().rng_from_state(cont["rng"])
        full, new_record = _interleaving().extend(record, shown, rankings, depth, rng)
        new_record["page"] = {"rng": _interleaving().rng_state(rng), "q": cont["q"]}
    else:  # one ranker served alone: its list goes on
        seen = set(shown)
        full = shown + [d for d in rankings[0] if d not in seen][: max(0, depth - len(shown))]
        new_record = None
    # each document as the ranker it is credited to returned it (interleaving.owners)
    items = shown_copies(new_record, full, [lists.get(a, []) for a in arms])
    urls = (list(imp.urls) + [None] * len(shown))[: len(shown)]
    if len(full) > len(shown):
        if start > len(shown):
            raise Unprocessable(
                f"page {page} of k={k} would skip ranks {len(shown) + 1}..{start}, which "
                f"were never shown: ask for page {len(shown) // k + 1} first")
        urls += [_url(item) for item in items[len(shown):]]
        if not rt.store.impressions.extend_impression(
                imp.id, imp.exp, expect=shown, shown=full, record=new_record, urls=urls,
                inactivity_s=rt.config.inactivity_s,
                # the attribution index learns the new documents (service.outcomes)
                attribution_ttl_s=attribution_ttl(declared(snap.meta)), created=imp.created,
                arms=arms, seg=",".join(imp.segments),
                user_hash=user_hash(rt.secret, imp.exp, user),
                ab_user=imp.ab_user or None):  # an A/B search's (service.ab.store)
            raise PageConflict(f"impression {imp.id!r} was extended by another request "
                               "meanwhile; retry")
    results = []
    for rank in range(start + 1, min(depth, len(full)) + 1):
        item = dict(items[rank - 1])
        if len(item) == 1 and urls[rank - 1]:  # no ranker returned it now: its id alone
            item["url"] = urls[rank - 1]
        item["rank"] = rank
        results.append(item)
    return {
        "impression_id": imp.id,
        "token": str(token),
        "experiment": imp.exp,
        "rankers": [by_arm[a].name for a in present],
        "results": results,
    }
