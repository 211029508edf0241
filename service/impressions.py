"""The front end's three operations: serve a search, record clicks, end an impression.

``search`` asks the controller for a comparison, fetches the chosen rankers concurrently,
interleaves their lists with the experiment's method, stores the impression (with the
interleaving record the credit step needs) and returns the page with a click token.

* A pair ``(a, a)``, a paused or stopped experiment: one list is served as is and no
  duel is recorded (the impression is still stored so its clicks are accepted).
* A chosen ranker that fails (error, timeout, invalid body) while an opponent answers
  **forfeits**: the opponent's list is served and the impression records the failed
  ranker's loss to it, credited by the worker like any outcome (counted by reason in
  ``rankduel_ranker_forfeits_total``). A quarantined ranker (:class:`RankerHealth`) is not
  called: its opponent is served alone, no outcome. A ranker whose quarantine ended is
  probed by the next search, whether selection chose it or not (an unchosen one's answer
  is not shown).
* Every chosen ranker failed or is quarantined: the champion, or another healthy ranker,
  is served alone without a duel; 502 only when no ranker of the experiment answers.
  The 502 names no internal error (it must not tell a client which addresses answer).

Clicks and ends only touch the impression; crediting happens in a worker
(:mod:`workers.tasks`) once the impression closes.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis

from bandits.base import ELIMINATED, RETIRED
from service import metrics
from service.controller import Choice
from service.errors import BadGateway, Forbidden, Unprocessable
from service.experiments import retire_if_failing
from service.keys import new_impression_id
from service.rankers import RankerFailure
from service.records import Impression, Ranker
from service.runtime import Runtime
from service.store import (
    ImpressionClosed,
    ImpressionMissing,
    TooManyClicks,
    audit_entry,
)
from service.tokens import issue_token, verify_token


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
    check it is for page 1's query (the query itself is not stored)."""
    return hashlib.blake2b(q.encode(), digest_size=8).hexdigest()


def page_state(rng: np.random.Generator, q: str) -> dict[str, Any]:
    """What a duel's record keeps for its next pages (:mod:`service.paging`): the
    generator's state after the interleaving drew, and the query's digest."""
    return {"rng": _interleaving().rng_state(rng), "q": query_digest(q)}


@dataclass
class SearchTiming:
    """Where a search's wall time went: ``rankers_s``, the seconds spent waiting for
    rankers (per fetch, its slowest call; a search that falls back to a substitute makes
    two fetches). The rest of the request is rankduel's own time (``Server-Timing``)."""

    rankers_s: float = 0.0


def search(rt: Runtime, exp_id: str, q: str, k: int, user: str | None,
           timing: SearchTiming | None = None) -> dict[str, Any]:
    """Serve one search of experiment ``exp_id``; see the module docstring. ``timing``
    receives the time spent waiting for rankers."""
    imp_id = new_impression_id(exp_id)  # names its experiment (service.keys)
    choice = rt.controller.choose(exp_id)
    seed = [choice.snapshot.meta["seed"], choice.t, 1]
    method = choice.snapshot.meta["interleaving"]
    health = RankerHealth(rt, exp_id, choice, timing)
    called = [(arm, r) for arm, r in zip(choice.arms, choice.rankers, strict=True)
              if health.may_call(arm)]
    ok, failed = health.fetch(called, q, k, user=user,
                              probes=health.unchosen_probes(set(choice.arms)))
    if not ok:  # serve the champion, or another healthy ranker, without a duel
        ok, _ = health.fetch(health.substitutes(exclude={a for a, _ in called}), q, k,
                             first_only=True, user=user)
        failed = []
        if not ok:
            raise BadGateway(f"no ranker of experiment {exp_id!r} could answer")
    fallback = len(ok) < len(choice.arms) or ok[0][0] not in choice.arms
    if fallback:
        metrics.FALLBACKS.labels(exp_id).inc()
    # a ranker that failed while an opponent answered loses to each opponent that did
    forfeits = [(w, loser) for w, _, _ in ok for loser, _ in failed]
    for loser, failure in failed:
        metrics.FORFEITS.labels(exp_id, choice.by_arm[loser].name, failure.reason).inc()
    by_id: dict[str, dict[str, Any]] = {}
    for _, _, res in ok:
        for item in res:
            by_id.setdefault(str(item["id"]), item)
    if len(ok) >= 2:
        # participants in arm order, so the pair (j, i) interleaves exactly like (i, j)
        # and a repeated (user, query) view of the same comparison shows the same list
        ok.sort(key=lambda x: x[0])
        arms = tuple(arm for arm, _, _ in ok)
        rng = _interleave_rng(exp_id, q, user, arms, seed)
        rankings = [[str(item["id"]) for item in res] for _, _, res in ok]
        shown, record = _interleaving().interleave(method, rankings, k, rng)
        record["page"] = page_state(rng, q)  # for the next pages (service.paging)
        duel, kind = True, "duel"
    else:
        arms = (ok[0][0],)
        shown = [str(item["id"]) for item in ok[0][2][:k]]
        record, duel = None, False
        kind = "fallback" if fallback else "single"
    now = time.time()
    expires = int(now + rt.config.token_ttl_s)
    counters = {"impressions": 1, kind: 1}
    if fallback:  # also a multileaved comparison that lost some of its rankers
        counters["fallback"] = 1
    rt.store.save_impression(
        imp_id, exp_id=exp_id, t=choice.t, arms=list(arms), shown=shown, record=record, duel=duel,
        forfeits=forfeits, token_expires=expires, ttl_s=rt.config.impression_ttl_s,
        inactivity_s=rt.config.inactivity_s, counters=counters,
        urls=[_url(by_id[doc]) for doc in shown],
    )
    metrics.IMPRESSIONS.labels(exp_id, kind).inc()
    results = []
    for rank, doc in enumerate(shown, start=1):
        item = dict(by_id[doc])
        item["rank"] = rank
        results.append(item)
    return {
        "impression_id": imp_id,
        "token": issue_token(rt.secret, imp_id, exp_id, expires),
        "experiment": exp_id,
        "rankers": [choice.by_arm[a].name for a in arms],
        "results": results,
    }


Answer = tuple[int, Ranker, list[dict[str, Any]]]

#: the longest result URL kept for the click redirect
MAX_URL_CHARS = 2048


def _url(item: dict[str, Any]) -> str | None:
    """A result's ``url`` when it is an http(s) URL a redirect may lead to."""
    url = item.get("url")
    if isinstance(url, str) and len(url) <= MAX_URL_CHARS and url.startswith(
            ("http://", "https://")):
        return url
    return None


class RankerHealth:
    """The circuit breaker of one search: which chosen rankers may be called, and what
    their answers do to their health.

    A ranker is *closed* (called) until ``ranker_failure_threshold`` consecutive
    failures put it in quarantine for ``ranker_quarantine_s`` (*open*: not called; its
    duels are served by the opponent alone, no outcome recorded). When the quarantine
    ends it is *half-open*: one request at a time may probe it; a success closes it, a
    failure opens a new quarantine; after ``ranker_retire_after`` quarantines in a row the
    ranker is retired (:func:`service.experiments.retire_if_failing`). While its
    quarantine is open the controller keeps it out of selection. Health lives in Redis
    (:meth:`Store.ranker_failed`), shared by every API process; changes are audited and
    counted.
    """

    def __init__(self, rt: Runtime, exp_id: str, choice: Choice,
                 timing: SearchTiming | None = None) -> None:
        self.rt, self.exp_id, self.choice = rt, exp_id, choice
        self.timing = timing if timing is not None else SearchTiming()
        self.now = time.time()

    def _state(self, arm: int) -> str:
        until = self.choice.health.get(arm, {}).get("quarantined_until")
        if until is None:
            return "closed"
        return "open" if until > self.now else "half_open"

    def may_call(self, arm: int) -> bool:
        state = self._state(arm)
        if state == "closed":
            return True
        if state == "open":
            return False
        timeout_s = self.choice.by_arm[arm].timeout_s
        return self.rt.store.take_probe(self.exp_id, arm, ttl_s=2 * timeout_s + 1.0)

    def substitutes(self, exclude: set[int]) -> list[tuple[int, Ranker]]:
        """Rankers to serve alone when every chosen one failed: the champion first, then
        the other active rankers, then the eliminated ones (never a retired one), all not
        in quarantine (at most two are tried). The eliminated ones matter once the
        experiment has converged: with its one active ranker in quarantine, every search
        would otherwise be a 502."""
        bandit = self.choice.snapshot.bandit
        eliminated = [a for a in sorted(self.choice.by_arm) if bandit.status[a] == ELIMINATED]
        order = [self.choice.champion, *bandit.active_arms(), *eliminated]  # never retired
        out = []
        for arm in dict.fromkeys(order):
            if arm in exclude or arm not in self.choice.by_arm or self._state(arm) != "closed":
                continue
            out.append((arm, self.choice.by_arm[arm]))
            if len(out) == 2:
                break
        return out

    def unchosen_probes(self, chosen: set[int]) -> list[tuple[int, Ranker]]:
        """Rankers whose quarantine ended that selection did not choose, each with its
        probe right taken: probed beside the chosen ones (their answers never shown), so
        a ranker the policy stops choosing is still brought back or retired within
        ``ranker_retire_after`` probes, one per ``ranker_quarantine_s`` (a retired ranker
        is never probed)."""
        status = self.choice.snapshot.bandit.status
        return [(arm, self.choice.by_arm[arm]) for arm in sorted(self.choice.health)
                if arm not in chosen and arm in self.choice.by_arm
                and status[arm] != RETIRED and self._state(arm) == "half_open"
                and self.may_call(arm)]

    def fetch(self, called: list[tuple[int, Ranker]], q: str, k: int, *,
              first_only: bool = False, user: str | None = None,
              probes: Sequence[tuple[int, Ranker]] = (), offset: int = 0,
              ) -> tuple[list[Answer], list[tuple[int, RankerFailure]]]:
        """Fetch ``called`` and ``probes`` concurrently; ``(answers, failures)`` of
        ``called``, health updated for all (a probe's answer only tells its health).
        ``offset``: the results already shown (a next page's ``{offset}``)."""
        every = [*called, *probes]
        if not every:
            return [], []
        lists, waited = self.rt.rankers.fetch_timed([r for _, r in every], q, k,
                                                    experiment=self.exp_id, user=user,
                                                    offset=offset)
        self.timing.rankers_s += waited
        ok: list[Answer] = []
        failed: list[tuple[int, RankerFailure]] = []
        for n, ((arm, r), res) in enumerate(zip(every, lists, strict=True)):
            shown = n < len(called)
            if isinstance(res, RankerFailure):
                if res.blame:  # our concurrency cap is no fault of the ranker's
                    if shown:
                        failed.append((arm, res))
                    self._failed(arm, r)
            else:
                if shown:
                    ok.append((arm, r, res))
                if arm in self.choice.health:
                    self._recovered(arm, r)
        return (ok[:1] if first_only else ok), failed

    def _failed(self, arm: int, ranker: Ranker) -> None:
        cfg = self.rt.config
        n, opened = self.rt.store.ranker_failed(
            self.exp_id, arm, threshold=cfg.ranker_failure_threshold,
            quarantine_s=cfg.ranker_quarantine_s)
        if opened:
            metrics.QUARANTINES.labels(self.exp_id, ranker.name).inc()
            self.rt.store.add_audit(self.exp_id, audit_entry(
                time.time(), "ranker_quarantined", actor="service", ranker=ranker.name,
                failures=n, seconds=cfg.ranker_quarantine_s))
            retire_if_failing(self.rt.store, self.exp_id, arm, ranker.name,
                              after=cfg.ranker_retire_after)

    def _recovered(self, arm: int, ranker: Ranker) -> None:
        if self.rt.store.ranker_recovered(self.exp_id, arm):
            self.rt.store.add_audit(self.exp_id, audit_entry(
                time.time(), "ranker_recovered", actor="service", ranker=ranker.name))


def _load_verified(rt: Runtime, imp_id: str, token: object) -> Impression:
    imp = rt.store.impression(imp_id)
    if imp is None:
        raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
    try:
        verify_token(rt.secret, token, imp_id, imp.exp, now=time.time())
    except Forbidden:
        metrics.TOKENS_REFUSED.inc()
        raise
    return imp


def record_clicks(rt: Runtime, imp_id: str, token: object, clicks: list[tuple[str, int]],
                  dwell_ms: dict[int, int] | None = None) -> dict[str, Any]:
    """Validate clicks against what the impression showed and record them (once each),
    with the dwell time per position a browser reported on return (``rankduel.js``;
    the experiment's dwell rule applies it when crediting: :func:`service.credit.
    satisfied_clicks`)."""
    imp = _load_verified(rt, imp_id, token)
    shown = imp.shown
    positions = []
    for doc, rank in clicks:
        if doc not in shown:
            raise Unprocessable(f"document {doc!r} was not shown in impression {imp_id!r}")
        if not 1 <= rank <= len(shown) or shown[rank - 1] != doc:
            raise Unprocessable(
                f"document {doc!r} was shown at rank {shown.index(doc) + 1}, not {rank}")
        positions.append(rank - 1)
    added = rt.store.add_clicks(imp_id, imp.exp, positions,
                                inactivity_s=rt.config.inactivity_s,
                                ttl_s=rt.config.impression_ttl_s,
                                max_reports=rt.config.clicks_per_impression,
                                dwell_ms=dwell_ms)
    return {"impression_id": imp_id, "accepted": added, "duplicates": len(positions) - added}


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
        imp = rt.store.impression(imp_id)
        if imp is None:
            raise ImpressionMissing(f"no impression {imp_id!r} (unknown or expired)")
    first, drain = rt.store.end_impression(imp_id, imp.exp,
                                           drain_ttl_s=rt.config.drain_lease_s)
    if drain is not None and not rt.queue.drain(imp.exp, drain):
        # the broker is away: the impression is closed and due; give the lease back so
        # that the next sweep queues its drain (the sweep's index marks it due now); if
        # Redis is away too the lease lapses by itself within drain_lease_s
        with contextlib.suppress(redis.RedisError):
            rt.store.release_drain(imp.exp, drain)
    return {"impression_id": imp_id, "status": "closed", "already_closed": not first}
