"""The Sparring Certifier's verdicts at a stated error rate: which rankers are *shown
worse*, which champion is *certified*, and the recovery of arms only no longer shown; a
mixin of :class:`bandits.sparring_certifier.SparringCertifier`.

Why a component of its own: the certifier's elimination test only stops *showing* an arm
(soft, recoverable): its per-test confidence ``1 − (t + 1 + C)^(−2α)`` is not the chance
that a verdict is wrong. The verdicts are a second, family-wise layer over the same
counts, with their own state and error rate, and they are :mod:`bandits.confidence`'s
at ``error_rate`` δ: an arm is *shown worse* when some arm beats it by the anytime
normal-mixture edge at δ/(2(K − 1)) (checked at every guard check; such an arm leaves
play for good), and the champion is *certified* when every other arm is shown worse and
the guard is silent, so that P(a certified champion is not the Condorcet winner) ≤ δ over
the whole run (the normal-mixture boundary of Howard, Ramdas, McAuliffe & Sekhon 2021,
§3.2, is anytime-valid, so checking it at every check keeps the level).
Before convergence an arm no longer shown that beats an active arm by the elimination
test comes back in its place (:meth:`CertifiedVerdicts._revive`), so a run whose
survivors are all beaten recovers the winner.

The host provides ``W``, ``status``, ``n_updates``, ``flagged`` (the guard's), the
active list ``_arms`` and the arms no longer shown ``_soft`` with ``_rebuild()`` that
recomputes them, the test ``_beaten()`` and its ``threshold()``, ``_swap()`` (an arm back
in place of another) and :meth:`~bandits.base.DuelingBandit.eliminate`; this mixin owns
``error_rate``, ``worse``, ``certificate`` and ``revived`` and their part of the state.
"""

from __future__ import annotations

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

    def _certify(self) -> None:
        """Draw the edges into the arms not yet shown worse (:mod:`bandits.confidence`;
        checking at every ``check_every`` comparisons is checking at stopping times, so
        the anytime level holds). An arm shown worse leaves play for good; the last arm
        standing, with every other shown worse and the guard silent, is certified."""
        if self.certificate is not None:
            return
        field = np.flatnonzero(self.status != RETIRED)
        rest = [int(a) for a in field if int(a) not in self.worse]
        new = (confidence.shown_worse(self.W, field, self.error_rate, rest)
               if len(rest) > 1 else {})
        if new:
            for e, by in new.items():
                self.worse[e] = [by, int(self.n_updates)]
                self.eliminate(e, by)
            if not (self.status == ACTIVE).any():  # only on data without a Condorcet
                left = [a for a in rest if a not in new] or rest  # winner: keep one in play
                self.status[left[0]] = ACTIVE
                self.eliminated.pop(left[0], None)
            self._rebuild()
        left = [a for a in rest if a not in self.worse]
        if (len(left) == 1 and not self.flagged and self._arms.size == 1
                and int(self._arms[0]) == left[0]):
            self.certificate = {"champion": left[0], "at": int(self.n_updates)}
            self._rebuild()

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
