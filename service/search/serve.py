"""Serving a search: ``search`` asks the controller for a comparison, fetches the chosen
rankers concurrently (through their circuit breaker, :mod:`service.search.ranker_health`),
interleaves their lists with the experiment's method, stores the impression (with the
interleaving record the credit step needs) and returns the page with a click token.

* A pair ``(a, a)``, a paused or stopped experiment: one list is served as is and no
  duel is recorded (the impression is still stored so its clicks are accepted).
* A chosen ranker that fails (error, timeout, invalid body) while an opponent answers
  **forfeits**: the opponent's list is served and the impression records the failed
  ranker's loss to it, credited by the worker like any outcome (counted by reason in
  ``rankduel_ranker_forfeits_total``). A ranker that answers no results, or results it
  cannot read, while another answers results is left out, no outcome
  (:mod:`service.search.degraded`, which marks a ranker that keeps doing so
  ``degraded``). A quarantined ranker
  (:class:`~service.search.ranker_health.RankerHealth`) is not called: its opponent is served
  alone, no outcome. A ranker whose quarantine ended is probed by the next search,
  whether selection chose it or not (an unchosen one's answer is not shown).
* Every chosen ranker failed or is quarantined: the champion, or another healthy ranker,
  is served alone without a duel; 502 only when no ranker of the experiment answers.
  The 502 names no internal error (it must not tell a client which addresses answer);
  when this process's allow-list refused the rankers, it says so (its configuration).

Clicks and ends (:mod:`service.clicks.reports`) only touch the impression; crediting happens in a
worker once the impression closes (:mod:`service.credit`).
"""


from __future__ import annotations

import hashlib
import time
from typing import Any

import numpy as np

from rollout import call_counts
from service import metrics
from service.designs.registry import design_of
from service.errors import BadGateway
from service.outcomes.declared import attribution_ttl, declared
from service.reports import splits
from service.runtime import Runtime
from service.search import degraded
from service.search.ranker_health import RankerHealth, SearchTiming
from service.segments.dimensions import labels as segment_labels
from service.store.keys import new_impression_id
from service.store.placements import GUARD_PREFIX
from service.tokens import issue_token, user_hash


def _interleaving():
    import interleaving  # deferred: the package is large and only the front end needs it

    return interleaving


def _interleave_rng(exp_id: str, q: str, user: str | None, arms: tuple[int, ...],
                    seed: list[int]) -> np.random.Generator:
    """Seed from (user, query) when the user is known, so a repeated view of the same
    comparison shows the same list; from (experiment seed, t) otherwise."""
    if user:
        salt = f"{exp_id}:{','.join(map(str, arms))}"
        return np.random.default_rng(_interleaving().seed_for(user, q, salt=salt))
    return np.random.default_rng(seed)


def query_digest(q: str) -> str:
    """A short digest of the query, kept in a duel's record so that a next page can
    check it is for page 1's query (the query itself is kept only in the event log,
    for the UBI export)."""
    return hashlib.blake2b(q.encode(), digest_size=8).hexdigest()


def page_state(rng: np.random.Generator, q: str, methods: Any = None) -> dict[str, Any]:
    """What a duel's record keeps for its next pages (:mod:`service.search.paging`): the
    generator's state after the interleaving drew, and the query's digest. ``methods``:
    the :mod:`interleaving` package when the caller holds it already (a call fewer on the
    request path, ``bench/search_calls.py``)."""
    return {"rng": (methods or _interleaving()).rng_state(rng), "q": query_digest(q)}


def search(rt: Runtime, exp_id: str, q: str, k: int, user: str | None,
           timing: SearchTiming | None = None,
           calls: list[call_counts.Call] | None = None,
           segments: dict[str, str] | None = None) -> dict[str, Any]:
    """Serve one search of experiment ``exp_id``: the controller chooses, the experiment's
    design serves (:meth:`service.designs.base.Design.serve`: an interleaving experiment's
    is :func:`serve`, an A/B test's :mod:`service.ab.search`). ``timing`` receives the time
    spent waiting for rankers; ``calls`` (a search of a placement) receives each ranker
    call, and their guardrail counts are saved with the impression
    (:mod:`service.placements.guardrails`); ``segments`` (dimension -> value) are the
    search's segment values, stored with the impression as labels
    (:mod:`service.segments.dimensions`)."""
    choice = rt.controller.choose(exp_id)
    return design_of(choice.snapshot.meta).serve(rt, exp_id, choice, q, k, user, timing,
                                                 calls, segments)


def serve(rt: Runtime, exp_id: str, choice: Any, q: str, k: int, user: str | None,
          timing: SearchTiming | None = None, calls: list[call_counts.Call] | None = None,
          segments: dict[str, str] | None = None) -> dict[str, Any]:
    """One search of interleaving experiment ``exp_id``, the controller's ``choice`` made
    (the module docstring; the arguments: :func:`search`)."""
    imp_id = new_impression_id(exp_id)  # names its experiment (service.store.keys)
    seed = [choice.snapshot.meta["seed"], choice.t, 1]
    method = choice.snapshot.meta["interleaving"]
    health = RankerHealth(rt, exp_id, choice, timing)
    called = [(arm, r) for arm, r in zip(choice.arms, choice.rankers, strict=True)
              if health.may_call(arm)]
    waited = health.timing.rankers_s
    ok, failed = health.fetch(called, q, k, user=user,
                              probes=health.unchosen_probes(set(choice.arms)))
    if calls is not None:  # a chosen ranker skipped (quarantined) failed, for the user
        skipped = [choice.by_arm[a].name for a in choice.arms
                   if a not in {arm for arm, _ in called}]
        call_counts.tally(calls, ok, [*(choice.by_arm[a].name for a, _ in failed), *skipped],
                         health.timing.rankers_s - waited)
    ok, failed = degraded.screen(health, ok, failed)  # no results is never a loss
    if not ok:  # serve the champion, or another healthy ranker, without a duel
        ok, _ = health.fetch(health.substitutes(exclude={a for a, _ in called}), q, k,
                             first_only=True, user=user)
        failed = []
        if not ok:
            health.refuse_misconfigured()  # this process's allow-list, not the rankers
            raise BadGateway(f"no ranker of experiment {exp_id!r} could answer")
    fallback = len(ok) < len(choice.arms) or ok[0][0] not in choice.arms
    if fallback:
        metrics.FALLBACKS.labels(exp_id).inc()
    # a ranker that failed while an opponent answered loses to each opponent that did
    forfeits = [(w, loser) for w, _, _ in ok for loser, _ in failed]
    for loser, failure in failed:
        metrics.FORFEITS.labels(exp_id, choice.by_arm[loser].name, failure.reason).inc()
    if len(ok) >= 2:
        # participants in arm order, so the pair (j, i) interleaves exactly like (i, j)
        # and a repeated (user, query) view of the same comparison shows the same list
        ok.sort(key=lambda x: x[0])
        arms = tuple(arm for arm, _, _ in ok)
        rng = _interleave_rng(exp_id, q, user, arms, seed)
        rankings = [[str(item["id"]) for item in res] for _, _, res in ok]
        methods = _interleaving()
        shown, record = methods.interleave(method, rankings, k, rng)
        # for the next pages (service.search.paging)
        record["page"] = page_state(rng, q, methods)
        duel, kind = True, "duel"
    else:
        arms = (ok[0][0],)
        shown = [str(item["id"]) for item in ok[0][2][:k]]
        record, duel = None, False
        kind = "fallback" if fallback else "single"
    items = shown_copies(record, shown, [res for _, _, res in ok])
    now = time.time()
    expires = int(now + rt.config.token_ttl_s)
    counters = {"impressions": 1, kind: 1}
    if duel and len(arms) == 2 and "teams" in record:  # team draft's coin, checked (SRM)
        counters.update(splits.team_fields(record["teams"]))
    if fallback:  # also a multileaved comparison that lost some of its rankers
        counters["fallback"] = 1
    if calls:
        counters.update(call_counts.fields(calls, GUARD_PREFIX))
    rt.store.impressions.save_impression(
        imp_id, exp_id=exp_id, t=choice.t, arms=list(arms), shown=shown, record=record, duel=duel,
        forfeits=forfeits, token_expires=expires, ttl_s=rt.config.impression_ttl_s,
        inactivity_s=rt.config.inactivity_s, counters=counters,
        urls=[_url(item) for item in items],
        segments=segment_labels(choice.snapshot.meta.get("segments"), segments),
        user_hash=user_hash(rt.secret, exp_id, user),
        rankers=[choice.by_arm[a].name for a in arms], events_maxlen=rt.config.events_maxlen,
        attribution_ttl_s=attribution_ttl(declared(choice.snapshot.meta)),
        query=q,
    )
    metrics.labelled(metrics.IMPRESSIONS, exp_id, kind).inc()
    results = []
    for rank, copy in enumerate(items, start=1):
        item = dict(copy)
        item["rank"] = rank
        results.append(item)
    return {
        "impression_id": imp_id,
        "token": issue_token(rt.secret, imp_id, exp_id, expires),
        "experiment": exp_id,
        "rankers": [choice.by_arm[a].name for a in arms],
        "results": results,
    }


def shown_copies(record: dict[str, Any] | None, shown: list[str],
                 lists: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each shown document as the ranker it is credited to returned it (its fields, e.g.
    a price: :mod:`interleaving.owners` gives the rule), ``lists`` being the participants'
    results in the order the interleaving took them; ``{"id"}`` alone for a document no
    list holds."""
    from interleaving.owners import owners

    copies: list[dict[str, dict[str, Any]]] = []
    for res in lists:
        mine: dict[str, dict[str, Any]] = {}
        for item in res:
            mine.setdefault(str(item["id"]), item)
        copies.append(mine)
    rankings = [list(c) for c in copies]
    return [copies[o][doc] if o >= 0 else {"id": doc}
            for doc, o in zip(shown, owners(record, shown, rankings), strict=True)]


#: the longest result URL kept for the click redirect
MAX_URL_CHARS = 2048


def _url(item: dict[str, Any]) -> str | None:
    """A result's ``url`` when it is an http(s) URL a redirect may lead to."""
    url = item.get("url")
    if isinstance(url, str) and len(url) <= MAX_URL_CHARS and url.startswith(
            ("http://", "https://")):
        return url
    return None

