"""The Sparring Certifier's verdicts at a stated error rate: which rankers are *shown
worse*, which champion is *certified*, and the recovery of arms only no longer shown; a
mixin of :class:`bandits.sparring_certifier.SparringCertifier`.

Why a component of its own: the certifier's elimination test only stops *showing* an arm
(soft, recoverable): its per-test confidence ``1 − (t + 1 + C)^(−2α)`` is not the chance
that a verdict is wrong. The verdicts are a second, family-wise layer over the same
counts, with their own state and error rate, and they are :mod:`bandits.confidence`'s
at ``error_rate`` δ: an arm is *shown worse* when another arm not shown worse beats it by
the anytime betting edge test at δ/(2(K − 1)) (such an arm leaves play for good), and the
champion is *certified* when every other arm is shown worse and the guard, run on the
spot, is silent, so that P(a certified champion is not the Condorcet winner) ≤ δ over the
whole run.

Checked as the evidence arrives. After every comparison of two arms not shown worse the
edge between them is checked (:meth:`CertifiedVerdicts._check_edge`): only that pair's
counts changed, so only its two edges can have been drawn, and the check costs O(1) (a
few flops, unless the pair holds the test's evidence floor,
:func:`bandits.confidence.evidence_floor`). Every comparison is a stopping time and the
edge test is anytime-valid (Ville's inequality holds over the whole run), so checking at
every one keeps the level; a two-ranker experiment is certified at the comparison where
its boundary is crossed. The periodic check (every ``check_every`` comparisons) keeps
the guard and the recovery below, and a sweep of all the edges among the arms not shown
worse (O(K²)) that finds nothing new unless the counts moved without ``update()`` (a
state from before this rule); no verdict waits for it.

Witnesses are arms not shown worse (as the papers' eliminations, an arm that left play
no longer testifies): the live credit path then only has to watch the pairs among those
arms (:meth:`bandits.sparring_certifier.SparringCertifier.volatility`). An arm leaves
play once shown worse, so the rule costs nothing but outcomes that were in flight.

Before convergence an arm no longer shown that beats an active arm by the elimination
test comes back in its place (:meth:`CertifiedVerdicts._revive`), so a run whose
survivors are all beaten recovers the winner.

The host provides ``W``, ``status``, ``n_updates``, ``flagged`` (the guard's) and
``_guard(0)`` that runs the guard on the current counts, the active list ``_arms``
and the arms no longer shown ``_soft`` with ``_rebuild()`` that recomputes them (and
``_rebuild_pools()``, all but the active arms' moments), the test
``_beaten()`` and its ``threshold()``, ``_swap()`` (an arm back in place of another) and
:meth:`~bandits.base.DuelingBandit.eliminate`; this mixin owns ``error_rate``, ``worse``,
``certificate`` and ``revived`` and their part of the state.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bandits import confidence
from bandits.base import ACTIVE, ELIMINATED, RETIRED


class CertifiedVerdicts:
    """The verdicts of the module docstring, mixed into the Sparring Certifier."""

    def _start_verdicts(self, error_rate: float) -> None:
        """No verdict yet, at ``error_rate`` δ."""
        self.error_rate = error_rate
        #: rankers shown worse at 1 − δ: ``arm -> [witness, n_updates]`` (never shown again)
        self.worse: dict[int, list[int]] = {}
        #: the certified champion: ``{"champion", "at"}`` (None: not certified)
        self.certificate: dict[str, int] | None = None
        #: readmissions before convergence: ``[arm, arm it beat, n_updates]`` each
        self.revived: list[list[int]] = []
        self._edge: confidence.EdgeTest | None = None  # the edge test at the current K
        self._edge_key = (0, 0.0)  # the (K, error_rate) it was built for

    def _edge_test(self) -> confidence.EdgeTest:
        """The edge test at ``δ/(2(K − 1))`` for the current ``K`` (rebuilt when an arm is
        added)."""
        key = (self.K, self.error_rate)
        if self._edge is None or self._edge_key != key:
            level = confidence.per_edge_level(self.K, self.error_rate)
            if self._edge is None or self._edge.level != level:
                self._edge = confidence.EdgeTest(level)
            self._edge_key = key
        return self._edge

    def _edge_floor(self) -> float:
        """The evidence ``n · kl(p̂, ½)`` below which no outcome can draw an edge
        (``inf`` once certified: nothing left to check)."""
        return math.inf if self.certificate is not None else self._edge_test().floor

    def _rest(self) -> list[int]:
        """The arms in the field (not retired) not shown worse: O(K)."""
        worse = self.worse
        return [a for a, s in enumerate(self.status.tolist()) if s != RETIRED and a not in worse]

    def verdicts(self) -> dict[str, Any]:
        """The verdicts at ``1 − error_rate`` (:mod:`bandits.confidence`): the certified
        champion (or None), the rankers shown worse (``arm -> witness``) and those only
        no longer shown (soft-eliminated, recoverable, no claim)."""
        cert = self.certificate
        return {"error_rate": self.error_rate,
                "certified": None if cert is None else int(cert["champion"]),
                "certified_at": None if cert is None else int(cert["at"]),
                "shown_worse": {int(a): int(v[0]) for a, v in self.worse.items()},
                "no_longer_shown": [int(a) for a in self._soft],
                "family_wise": True}

    def _revive(self) -> None:
        """Before convergence, at each check: an arm no longer shown that beats an
        active arm by the elimination test comes back in its place, so a run whose
        survivors are all beaten recovers the winner (at the checks, so that the live
        credit path can hold just those outcomes: :meth:`volatility`'s period)."""
        if self._arms.size < 2 or self._soft.size == 0 or self.flagged:
            return
        act, soft = self._arms, self._soft
        wae = self.W[np.ix_(act, soft)]
        n = wae + self.W[np.ix_(soft, act)].T
        with np.errstate(invalid="ignore", divide="ignore"):
            g = np.where(n > 0, 0.5 - wae / np.maximum(n, 1e-300), 0.0)
        thr = self.threshold()
        for x, y in zip(*np.nonzero((g > 0) & (4.0 * n * g * g > thr)), strict=True):
            a, e = int(act[x]), int(soft[y])
            if (self.status[a] == ACTIVE and self.status[e] == ELIMINATED
                    and self._beaten(self.W.item(a, e), self.W.item(a, e) + self.W.item(e, a))):
                self.revived.append([e, a, int(self.n_updates)])
                self._swap(e, a)

    def _check_edge(self, i: int, j: int) -> None:
        """After a comparison of ``i`` and ``j``: is either shown worse by the other now?
        Only this pair's counts changed, so only its two edges can have been drawn: O(1).
        Both must be in the field and not shown worse (witnesses are arms not shown
        worse)."""
        worse = self.worse
        if (self.certificate is not None or i in worse or j in worse
                or self.status.item(i) == RETIRED or self.status.item(j) == RETIRED):
            return
        wij, wji = self.W.item(i, j), self.W.item(j, i)
        n = wij + wji
        test = self._edge_test()
        if test.crossed(wji, n):
            self._show_worse({i: j})
        elif test.crossed(wij, n):
            self._show_worse({j: i})

    def _show_worse(self, new: dict[int, int]) -> None:
        """Record the arms ``new`` (arm -> witness) as shown worse: they leave play for
        good; then certify if one arm is left."""
        active = False
        for e, by in new.items():
            self.worse[int(e)] = [int(by), int(self.n_updates)]
            active |= bool(self.status[e] == ACTIVE)
            self.eliminate(e, by)
        if active and not (self.status == ACTIVE).any():  # only on data without a
            left = self._rest()                  # Condorcet winner: keep one in play
            keep = left[0] if left else int(next(iter(new)))
            self.status[keep] = ACTIVE
            self.eliminated.pop(keep, None)
        if active:
            self._rebuild()
        else:  # it was no longer shown: the active arms' moments are as they were
            self._rebuild_pools()
        self._try_certify()

    def _try_certify(self) -> None:
        """Certify the last arm not shown worse, once it is the only active one and the
        guard, run now on the current counts (a stopping time), is silent."""
        if self.certificate is not None or self.flagged or self._arms.size != 1:
            return
        left = self._rest()
        if len(left) != 1 or int(self._arms[0]) != left[0]:
            return
        self._guard(0)  # the guard on the current counts, in full
        if self.flagged:
            return
        self.certificate = {"champion": left[0], "at": int(self.n_updates)}
        self._rebuild()

    def _certify(self) -> None:
        """The periodic sweep: draw the edges among the arms not shown worse
        (:func:`bandits.confidence.shown_worse`, O(K²)). After every comparison
        :meth:`_check_edge` has already drawn all of them unless the counts moved
        without ``update()``; this catches those, and certifies."""
        if self.certificate is not None:
            return
        rest = self._rest()
        # a few arms: most sweeps find no pair at the evidence floor, in plain floats
        new = (confidence.shown_worse(self.W, rest, self.error_rate, rest)
               if len(rest) > 1 and (len(rest) > 24
                                     or confidence.any_may_cross(self.W, rest, self.error_rate))
               else {})
        if new:
            self._show_worse(new)
        else:
            self._try_certify()

    def _verdicts_state(self) -> dict[str, Any]:
        """The verdicts' part of the state (``state["verdicts"]``)."""
        return {"worse": [[int(a), int(v[0]), int(v[1])]
                          for a, v in sorted(self.worse.items())],
                "certificate": self.certificate,
                "revived": [list(x) for x in self.revived]}

    def _load_verdicts_state(self, v: dict[str, Any]) -> None:
        """Load what :meth:`_verdicts_state` wrote (nothing: no verdict yet)."""
        self.worse = {int(a): [int(by), int(at)] for a, by, at in v.get("worse", [])}
        cert = v.get("certificate")
        self.certificate = None if cert is None else {k: int(x) for k, x in cert.items()}
        self.revived = [[int(x) for x in r] for r in v.get("revived", [])]
        self._edge = None
