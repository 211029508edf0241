"""The credit step: an impression's clicks become duel outcomes and one policy update.

Pure: no Redis, no Celery. The credit protocol (:mod:`service.credit.protocol`) reads a batch
of impressions, calls :func:`apply` and hands what it returns to the store, which commits it
together with each impression's ``credited`` mark (:mod:`service.store`); so each
impression changes ``W`` at most once.

What an impression yields, in order of precedence:

* ``missing``: unknown, expired, or of another experiment; ``already``: credited before.
* ``credited``: the outcomes changed the policy. Outcomes are the interleaving method's
  verdict on the clicks (``interleaving.credit``) plus one **forfeit** per ranker that
  failed to answer while an opponent answered (a loss to each opponent that answered:
  the live service departs from the papers here, which assume every ranker answers; a
  persistently failing ranker is then eliminated like any loser). A pairwise impression
  yields one outcome (``update``), a multileaved one all of its pairs as one step
  (``update_many``).
* ``no_clicks``: a duel without clicks (no outcome); ``no_duel``: one list was shown.
  With the experiment's ``dwell_unsatisfied_s`` set, the clicks first lose the
  *unsatisfied* ones (:func:`satisfied_clicks`), listed in the result's ``unsatisfied``.
* ``stale``: every outcome involves a ranker retired since.
* ``error``: a record this code cannot read; closed and counted, never retried for ever.

Two ways to apply a batch
-------------------------
A policy's ``update()`` adds the outcome to ``W`` (and counts ``n_updates``); DTS,
Self-Sparring, MDB and Uniform change nothing else (their other fields are caches of
``W``); RUCB, RCS, CCB and RMED1 also advance selection state at every step (the
``_commit`` hook of :mod:`bandits.base`), so none of their outcomes commutes; the Merge
policies may also change their **structure**:
eliminate an arm (MergeDTS Algorithm 1 lines 10–11, MergeRUCB Algorithm 4), and then
merge batches and start a stage (lines 12–22). Additions to ``W`` commute, structural
changes do not: an elimination depends on ``W`` and ``t`` at the comparison that causes it.

* ``apply(..., update=False)`` (the worker's fast path) leaves the policy alone and
  returns each impression's outcomes; the store adds them to ``W`` in one Lua script
  per batch, on the experiment's shard, commutatively, so several workers credit one
  experiment without conflicting.
* A :class:`Guard` says which outcomes could change the structure: an outcome on a pair
  that plays in one batch whose new counts would put one side's upper confidence bound
  below ½ with the bound's value at an earlier step (``u_ij`` only grows with ``t``, so
  that is a superset of the outcomes that do); for the policies whose ``update()``
  advances selection state, every outcome. The script stops at such an outcome and
  holds it; it is then applied by ``apply(..., update=True)``, which calls the policy's
  own ``update()`` on the full current state, in one optimistic transaction that writes
  the new structure (or none) with it, and the rest of its batch goes back to the
  script (for a policy with ``serial_updates``, whose outcomes never commute, the rest
  is applied in the same transaction, in order). Meanwhile no other credit enters ``W``,
  so the outcome is decided at exactly its place in the order in which the shard applied
  every outcome, with the global ``t``: the same ``update()`` as the simulator's,
  eliminations at the comparison count the pseudo-code gives.

Before the first update the policy's step counter is moved to the experiment's global
selection count ``t`` (:meth:`~bandits.base.DuelingBandit.sync_step`), so confidence
bounds such as MergeDTS's ``log(t + C)`` (Li et al. 2020, Algorithm 1 lines 10–11) use the
number of selections made so far by every API process, exactly as in the simulator.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bandits.base import ACTIVE, ELIMINATED, RETIRED, DuelingBandit
from service.store.records import Impression

log = logging.getLogger(__name__)

CreditFn = Callable[[Any, list[int]], list[tuple[int, int, float]]]


@dataclass
class Credit:
    """What a credit transaction writes: per impression its result and the counters it
    adds (``counted``; ``counters`` sums them), audit events (eliminations, stage
    changes) and whether the policy changed."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    counted: dict[str, list[str]] = field(default_factory=dict)
    audit: list[dict[str, Any]] = field(default_factory=list)
    changed: bool = False

    def count(self, imp_id: str, name: str) -> None:
        self.counters[name] = self.counters.get(name, 0) + 1
        self.counted.setdefault(imp_id, []).append(name)


#: result status -> the counter it adds to, besides ``credited``
_COUNTER_OF = {"credited": "decisive", "no_duel": "credited_no_duel"}


def _clicks_credit(record: Any, clicked: list[int]) -> list[tuple[int, int, float]]:
    import interleaving

    return interleaving.credit(record, clicked)


def satisfied_clicks(clicks: Sequence[int], dwell_ms: Mapping[int, int],
                     unsatisfied_s: float | None) -> list[int]:
    """The clicks that count under the dwell rule ``unsatisfied_s`` (None or 0: all).

    A click whose user came back to the result page within ``unsatisfied_s`` seconds
    (every visit shorter: ``dwell_ms`` holds the longest reported) is *unsatisfied* and
    does not count; a click without a reported dwell (the user never came back, or the
    result replaced the page) counts. A short click followed by a quick return is the
    classic sign of a result that did not satisfy (Fox, Karnawat, Mydland, Dumais,
    White, *Evaluating implicit measures to improve web search*, TOIS 2005), and
    click-level satisfaction is commonly labelled by a dwell of at least 30 s (Kim,
    Hassan, White, Zitouni, *Modeling dwell time to predict click-level satisfaction*,
    WSDM 2014, who start from that threshold and show that a better one depends on the
    kind of page and query). The interleaving method's credit rule is then applied to
    the satisfied clicks alone. The threshold is the experiment's, off by default: pick
    it for your pages (30 s is the customary start).

    >>> satisfied_clicks([0, 2, 5], {0: 1200, 2: 45000}, 30)
    [2, 5]
    >>> satisfied_clicks([0, 2], {0: 1200}, None)
    [0, 2]
    """
    if not unsatisfied_s:
        return list(clicks)
    limit = unsatisfied_s * 1000.0
    return [p for p in clicks if p not in dwell_ms or dwell_ms[p] >= limit]


def apply(
    bandit: DuelingBandit,
    impressions: Sequence[Impression | None],
    *,
    ids: Sequence[str],
    t: int,
    names: dict[int, str],
    credit_fn: CreditFn = _clicks_credit,
    update: bool = True,
    dwell_unsatisfied_s: float | None = None,
) -> Credit:
    """Apply a batch of impressions (``None`` where missing) to ``bandit`` in order.

    ``ids`` names the impressions (``ids[n]`` for ``impressions[n]``); ``t`` is the
    experiment's global step; ``names`` maps arms to ranker names for the audit. With
    ``update=False`` the policy is only read (which rankers are retired): each result
    lists the ``outcomes`` to add to ``W`` and nothing else changes.
    ``dwell_unsatisfied_s`` is the experiment's dwell rule (:func:`satisfied_clicks`).
    """
    out = Credit()
    synced = False
    for imp_id, imp in zip(ids, impressions, strict=True):
        if imp is None:
            out.results[imp_id] = {"status": "missing"}
            continue
        if imp.credited:
            out.results[imp_id] = {"status": "already"}
            continue
        clicks = satisfied_clicks(imp.clicks, imp.dwell_ms, dwell_unsatisfied_s)
        try:
            outcomes = _outcomes(imp, clicks, credit_fn)
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            # a record this code cannot credit must not block the batch for ever:
            # close it as an error (counted, logged) and credit the rest
            log.error("impression %s cannot be credited: %s", imp_id, exc)
            out.results[imp_id] = {"status": "error", "error": str(exc)[:200]}
            out.count(imp_id, "credited")
            out.count(imp_id, "credit_errors")
            continue
        result: dict[str, Any] = {"status": "no_duel", "created": imp.created, "t": t}
        if len(clicks) < len(imp.clicks):
            result["unsatisfied"] = sorted(set(imp.clicks) - set(clicks))
            for _ in result["unsatisfied"]:
                out.count(imp_id, "unsatisfied_clicks")
        if outcomes is not None:
            result["status"] = "credited" if outcomes else "no_clicks"
        if outcomes:
            live = [(i, j, s) for i, j, s in outcomes
                    if bandit.status[i] != RETIRED and bandit.status[j] != RETIRED]
            if not live:
                result["status"] = "stale"
            else:
                if update:
                    if not synced:
                        bandit.sync_step(t)
                        synced = True
                    out.audit += _update(bandit, live, names)
                    out.changed = True
                result["outcomes"] = [[i, j, s] for i, j, s in live]
                if any(s == 0.5 for _, _, s in live):
                    out.count(imp_id, "ties")
                if imp.forfeits:
                    out.count(imp_id, "forfeits")
        out.count(imp_id, "credited")
        out.count(imp_id, _COUNTER_OF.get(result["status"], result["status"]))
        out.results[imp_id] = result
    return out


def _outcomes(imp: Impression, clicks: list[int],
              credit_fn: CreditFn) -> list[tuple[int, int, float]] | None:
    """The impression's outcomes in arm indices (``clicks``: the clicked positions that
    count); None when it was no comparison at all."""
    forfeits = [(int(w), int(loser), 1.0) for w, loser in imp.forfeits]
    if not imp.duel:
        return forfeits or None
    arms = imp.arms
    clicked = [(arms[a], arms[b], float(s)) for a, b, s in credit_fn(imp.record, clicks)]
    return forfeits + clicked


def _update(bandit: DuelingBandit, live: list[tuple[int, int, float]],
            names: dict[int, str]) -> list[dict[str, Any]]:
    """Apply one impression's outcomes; audit events for what the policy changed."""
    before_status = bandit.status.copy()
    before = _shape(bandit)
    before_flag = bool((bandit.non_condorcet() or {}).get("flagged"))
    if bandit.multi:
        bandit.update_many(live)
    else:
        i, j, s = live[0]  # a pairwise impression yields one outcome
        bandit.update(i, j, s)
    events: list[dict[str, Any]] = []
    for arm in np.flatnonzero((before_status == ACTIVE) & (bandit.status == ELIMINATED)):
        info = bandit.eliminated.get(int(arm), {})
        events.append({"action": "eliminated", "actor": "bandit",
                       "ranker": names.get(int(arm)), "by": names.get(info.get("by")),
                       "step": info.get("step")})
    guard = bandit.non_condorcet()
    if guard is not None and guard["flagged"] and not before_flag:
        ev = guard.get("evidence") or {}
        events.append({"action": "non_condorcet_flagged", "actor": "bandit",
                       "step": guard.get("flagged_at"),
                       "cycle": [names.get(a) for a in ev.get("cycle", [])],
                       "beat_champion": [names.get(a) for a in ev.get("beat_champion", [])],
                       "switched": bandit.structure().get("mode") == "copeland"})
    after = _shape(bandit)
    if after != before:
        events.append({"action": "stage_changed", "actor": "bandit",
                       "from": before, "to": after})
    return events


def _shape(bandit: DuelingBandit) -> dict[str, Any] | None:
    """Stage and number of batches (the Merge policies), for stage-change events."""
    s = bandit.structure()
    if not s:
        return None
    return {"stage": s.get("stage"), "batches": len(s["batches"]) if "batches" in s else None}


@dataclass(frozen=True)
class Guard:
    """Which outcomes could change a policy's structure, in a form the credit script
    checks (see the module docstring).

    For the Merge policies an outcome on arms ``i`` and ``j`` of one batch can eliminate
    one of them: ``u_ij = w_ij/n + sqrt(a/n) < ½`` with ``n = w_ij + w_ji`` and
    ``a = α log(t + 1 + C)`` (the pair's next step, as ``update()`` checks it), that is
    ``d = w_ji − w_ij > 0`` and ``d² > 4an``; the same with ``i`` and ``j`` swapped.
    The guard is that condition with ``q = 4a`` taken at an earlier ``t`` (the bound only
    grows with ``t``) and shaved by 1e-9 for rounding, so it fires on every outcome that
    eliminates, and on a few that do not (``update()`` then decides nothing changed).
    Outcomes on arms in different batches (or out of play) change no structure.
    MergeMED's divergence test has ``q = 2a``; MergeGuard and MergeMED also watch the
    champion's pairs with eliminated arms once converged (a readmission) and hold the
    outcome that makes ``n`` a multiple of ``check_every`` (``period``: the check may
    flag). Each policy declares this (:meth:`~bandits.base.DuelingBandit.volatility`).

    Policies whose ``update()`` advances selection state at every step (RUCB, RCS, CCB,
    RMED1: ``serial_updates`` in :mod:`bandits.base`) get a guard that trips on every
    outcome: their credits are applied one by one by ``update()``, in order (correct, and
    serial). The other policies without a structure (DTS, Self-Sparring, MDB, Uniform)
    have no guard (:meth:`of` returns None): their ``update()`` changes nothing but ``W``
    and ``n_updates``. tests/test_credit_path.py checks these claims on every policy.

    Examples
    --------
    >>> from bandits import make_bandit
    >>> g = Guard.of(make_bandit("mergedts", 4, seed=1, alpha=0.5, c=1.0), t=60)
    >>> g.watches(0, 1), g.trips(0.0, 9.0), g.trips(0.0, 8.0)
    (1, True, False)
    >>> Guard.of(make_bandit("dts", 4, seed=1), t=60) is None
    True
    >>> Guard.of(make_bandit("rucb", 4, seed=1), t=60).trips(0.0, 1.0)
    True
    """

    q: float
    batch_of: dict[int, int]
    #: the outcome that makes ``n`` a multiple of this may change the structure (0: none)
    period: int = 0
    #: an outcome of ``champion`` against one of ``challengers`` trips only when the
    #: champion loses (a readmission)
    champion: int = -1
    challengers: frozenset[int] = frozenset()
    #: the pair condition is ``n · kl(p, ½) > q`` (MergeMED's test), not ``d² > q n``
    divergence: bool = False

    @classmethod
    def of(cls, bandit: DuelingBandit, t: int) -> Guard | None:
        """The guard of ``bandit``'s current structure, with the bound at step ``t``
        (any step up to the global one): the policy's own declaration
        (:meth:`~bandits.base.DuelingBandit.volatility`) in the script's terms."""
        v = bandit.volatility(int(t))
        if v is None:
            return None
        if v.every:
            # its update() advances selection state at every step (RUCB's B, RCS's N_c,
            # CCB's sets, RMED1's rounds): no outcome commutes, every one is held and
            # applied by update() in order
            return cls(-1.0, {a: 0 for a in range(bandit.K)})
        return cls(float(v.q), dict(v.groups), int(v.period), int(v.champion),
                   frozenset(v.challengers), bool(v.divergence))

    def arg(self) -> str:
        """The guard as the credit script's argument: ``q``, ``q:period`` or
        ``q:period:kl``."""
        return (repr(self.q) + (f":{self.period}" if self.period or self.divergence else "")
                + (":kl" if self.divergence else ""))

    def periodic(self, n: int) -> bool:
        """Whether the outcome that makes the policy's ``n_updates`` equal to ``n`` is
        held whatever it is (a periodic check runs then)."""
        return self.period > 0 and n % self.period == 0

    def watches(self, i: int, j: int) -> int:
        """Whether an outcome on ``(i, j)`` can change the structure at all, as the
        script's code: 0 no, 1 either side losing, 2 only ``i`` losing (``w_ji >
        w_ij``), 3 only ``j`` losing."""
        i, j = int(i), int(j)
        b = self.batch_of.get(i)
        if b is not None and b == self.batch_of.get(j):
            return 1
        if i == self.champion and j in self.challengers:
            return 2
        if j == self.champion and i in self.challengers:
            return 3
        return 0

    def trips(self, w_ij: float, w_ji: float, side: int = 1) -> bool:
        """The condition the script checks on a watched pair's new counts (``side``:
        the code :meth:`watches` gave; here for tests and documentation, the script has
        its own copy in Lua)."""
        d = w_ji - w_ij
        if (side == 2 and d <= 0) or (side == 3 and d >= 0):
            return False
        n = w_ij + w_ji
        if not self.divergence:
            return d * d > self.q * n
        w = min(w_ij, w_ji)
        if 2.0 * w >= n:
            return False
        p = w / n
        kl = (1.0 - p) * math.log(2.0 * (1.0 - p)) + (p * math.log(2.0 * p) if p > 0 else 0.0)
        return n * kl > self.q
