"""The rankers' circuit breaker, per search: which chosen rankers may be called, and what
their answers do to their health (kept in Redis: :mod:`service.store.ranker_health`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bandits.base import ELIMINATED, RETIRED
from service import metrics
from service.errors import BadGateway
from service.experiments.controller import Choice
from service.experiments.operations import retire_if_failing
from service.rankers.client import RankerFailure
from service.rankers.failure_log import FAILURES
from service.runtime import Runtime
from service.store import audit_entry
from service.store.records import Ranker


@dataclass
class SearchTiming:
    """Where a search's wall time went: ``rankers_s``, the seconds spent waiting for
    rankers (per fetch, its slowest call; a search that falls back to a substitute makes
    two fetches). The rest of the request is rankduel's own time (``Server-Timing``)."""

    rankers_s: float = 0.0


#: the reasons of an answer that came but could not be read as results: a failure for the
#: circuit breaker, but never a forfeit (a broken integration is not a worse ranker); it
#: counts toward degraded (:mod:`service.search.degraded`)
UNPARSEABLE = frozenset({"bad_response"})

#: a ranker's answer: its arm, the ranker and its results
Answer = tuple[int, Ranker, list[dict[str, Any]]]


class RankerHealth:
    """The circuit breaker of one search: which chosen rankers may be called, and what
    their answers do to their health.

    A ranker is *closed* (called) until ``ranker_failure_threshold`` consecutive
    failures put it in quarantine for ``ranker_quarantine_s`` (*open*: not called; its
    duels are served by the opponent alone, no outcome recorded). When the quarantine
    ends it is *half-open*: one request at a time may probe it; a success closes it, a
    failure opens a new quarantine; after ``ranker_retire_after`` quarantines in a row the
    ranker is retired (:func:`service.experiments.operations.retire_if_failing`). While its
    quarantine is open the controller keeps it out of selection. Health lives in Redis
    (``store.ranker_health.ranker_failed``), shared by every API process; changes are
    audited and counted.
    """

    def __init__(self, rt: Runtime, exp_id: str, choice: Choice,
                 timing: SearchTiming | None = None) -> None:
        self.rt, self.exp_id, self.choice = rt, exp_id, choice
        self.timing = timing if timing is not None else SearchTiming()
        self.now = time.time()
        #: the answers of the unchosen rankers probed (never shown)
        self.probed: dict[int, list[dict[str, Any]] | RankerFailure] = {}
        #: the calls this process's allow-list refused (:mod:`service.rankers.allow_list`)
        self.refused: list[tuple[Ranker, RankerFailure]] = []

    def _state(self, arm: int) -> str:
        h = self.choice.health.get(arm, {})
        ends = [u for u in (h.get("quarantined_until"), h.get("degraded_until")) if u]
        if not ends:
            return "closed"  # a degraded ranker is open until its probe is due
        return "open" if max(ends) > self.now else "half_open"

    def may_call(self, arm: int) -> bool:
        state = self._state(arm)
        if state == "closed":
            return True
        if state == "open":
            return False
        timeout_s = self.choice.by_arm[arm].timeout_s
        return self.rt.store.ranker_health.take_probe(self.exp_id, arm, ttl_s=2 * timeout_s + 1.0)

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
                if not shown:
                    self.probed[arm] = res
                FAILURES.failure(self.exp_id, r, res)
                if res.reason == "refused":
                    self.refused.append((r, res))
                if res.blame:  # our concurrency cap, our allow-list: no fault of the ranker's
                    if shown:
                        failed.append((arm, res))
                    self._failed(arm, r)
            else:
                if shown:
                    ok.append((arm, r, res))
                if not shown:
                    self.probed[arm] = res
                h = self.choice.health.get(arm, {})
                if h.get("failures") or h.get("quarantined_until"):
                    self._recovered(arm, r)
        return (ok[:1] if first_only else ok), failed

    def _failed(self, arm: int, ranker: Ranker) -> None:
        cfg = self.rt.config
        n, opened = self.rt.store.ranker_health.ranker_failed(
            self.exp_id, arm, threshold=cfg.ranker_failure_threshold,
            quarantine_s=cfg.ranker_quarantine_s)
        if opened:
            metrics.QUARANTINES.labels(self.exp_id, ranker.name).inc()
            self.rt.store.experiments.add_audit(self.exp_id, audit_entry(
                time.time(), "ranker_quarantined", actor="service", ranker=ranker.name,
                failures=n, seconds=cfg.ranker_quarantine_s))
            FAILURES.event(self.exp_id, ranker, f"quarantined for {cfg.ranker_quarantine_s:g} s "
                           f"after {n} consecutive failures")
            if retire_if_failing(self.rt.store, self.exp_id, arm, ranker.name,
                                 after=cfg.ranker_retire_after):
                FAILURES.event(self.exp_id, ranker, f"retired: quarantined "
                               f"{cfg.ranker_retire_after} times in a row")

    def _recovered(self, arm: int, ranker: Ranker) -> None:
        if self.rt.store.ranker_health.ranker_recovered(self.exp_id, arm):
            FAILURES.event(self.exp_id, ranker, "recovered: it answered again")
            self.rt.store.experiments.add_audit(self.exp_id, audit_entry(
                time.time(), "ranker_recovered", actor="service", ranker=ranker.name))



    def refuse_misconfigured(self) -> None:
        """A 502 naming the configuration when this process's allow-list refused a ranker
        of a search that found no ranker to serve: the fault is this process's, not the
        rankers' (the log names the address, :mod:`service.rankers.failure_log`). Not a
        503, which the alerts read as Redis unreachable."""
        if self.refused:
            raise BadGateway(
                f"no ranker of experiment {self.exp_id!r} could answer: this API process's "
                "ranker allow-list refused the calls (its configuration, not the rankers'): "
                "set RANKDUEL_RANKER_ALLOW for this process as for the process that added "
                "the rankers (the API's log names them)")
