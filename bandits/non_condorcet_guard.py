"""The non-Condorcet guard: the component MergeGuard and MergeMED declare (their ``GUARD``)
to check that the data still admit a Condorcet winner, with its parameters declared once.

Why: the Merge policies (Li et al. 2020, Algorithm 1; Zoghi 2017, Algorithm 4) assume a
Condorcet winner; Li et al. 2020, §6.5 shows what happens without one (the merge settles
on an arbitrary ranker) and proposes no check. The guard adds one, and the champion's
verification after convergence (:class:`bandits.champion_verification.ChampionVerification`,
which it composes). Its parameters (``GUARD_PARAMS``) are declared here once;
:mod:`bandits.merge_guard`, :mod:`bandits.merge_med` and
:mod:`bandits.sparring_certifier` take them from here.

*The check* (:mod:`bandits.condorcet_check`, :func:`bandits.verification.guard_check`):
every ``check_every`` recorded comparisons the counts ``W`` of all non-retired arms are
tested with an anytime-valid edge test (a normal-mixture boundary per pair; a false flag
has probability at most ``delta``). The policy is *flagged* when either every arm is
beaten with confidence by some arm (no Condorcet winner exists), or every *surviving*
(active) arm is beaten with confidence by some arm (the Condorcet winner, if there is
one, is not among the survivors; once converged: an eliminated arm beats the champion).
A Condorcet winner is beaten with confidence with probability at most ``delta`` over the
whole run, so on an instance with a Condorcet winner that the merge kept the flag is
raised with probability at most ``delta``; if the merge eliminated it, the second rule
is an alarm worth raising either way. (An earlier version applied the second rule to the
``best_arm()`` of several survivors, which is not the Condorcet winner in general and
could flag falsely; it now asks that *every* survivor be beaten.)

*What a flag does* (``on_non_condorcet``): ``"flag"`` (default) only records it
(``flagged``, ``flagged_at`` (the update count), ``evidence``) in the policy's
``structure()`` and state, and restores the champion the merge converged to (undoing
readmissions); ``"switch"`` also brings every non-retired arm back and selects as a
Copeland-winner policy from then on: a simplified CCB (Zoghi 2017, Algorithm 5 lines 6–8,
11–13 without the shortlist ``B_t``): the candidate is uniform over the arms with the
highest optimistic Copeland score, the opponent the arm with the highest upper bound
against it among those not beaten with confidence by it. That rule is a function of
``W`` and ``t`` alone, so ``select()`` changes no stored state and the live path runs it
unchanged.

State: the flag, the mode, the readmissions and whether the last check saw the current
counts; the verification schedule is a function of ``W``, the status and ``t``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from bandits import condorcet_check, verification
from bandits.base import ACTIVE, ELIMINATED, Comparison
from bandits.champion_verification import ChampionVerification
from bandits.merge_base import MergeBandit
from bandits.params import Param
from bandits.volatility import Volatility

MODES = ("flag", "switch")

#: the guard's parameters, declared once (MergeGuard, MergeMED and the Sparring
#: Certifier take them from here)
DELTA = Param(float, condorcet_check.DEFAULT_DELTA, "false-flag rate of the "
              "non-Condorcet guard over the whole run", ge=1e-12, le=0.5)
ON_NON_CONDORCET = Param(str, "flag", "what a non-Condorcet flag does: flag only, or switch "
                         "to a Copeland-winner rule on every non-retired ranker", choices=MODES)
CHECK_EVERY = Param(int, 1000, "comparisons between two guard checks", ge=1, le=10**9)
VERIFY_SCALE = Param(float, 1.0, "verification after convergence: the champion compares an "
                     "eliminated ranker while it has not refuted it at this fraction of the "
                     "elimination threshold", gt=0, le=1000)
GUARD_PARAMS: dict[str, Param] = {"delta": DELTA, "on_non_condorcet": ON_NON_CONDORCET,
                                  "check_every": CHECK_EVERY, "verify_scale": VERIFY_SCALE}


class NonCondorcetGuard:
    """The non-Condorcet guard of the module docstring, with the champion's
    verification (:class:`~bandits.champion_verification.ChampionVerification`): a
    component of a Merge policy (its ``GUARD``), built with the policy and the policy's
    resolved parameters (its own are ``PARAMS``, read back by the policy's ``params()``).

    The policy (:class:`bandits.merge_base.MergeBandit`) asks it for a pair before the
    merge chooses (:meth:`special`), tells it about each outcome (:meth:`before_update`,
    :meth:`after_merge_update`, :meth:`after_update`) and about added or retired arms
    (:meth:`arms_changed`), and adds its :meth:`volatility`, :meth:`structure`,
    :meth:`report`, :meth:`quiet_steps` and state to its own. It reads the policy's
    counts, status, batches and elimination test, and changes the merge's structure only
    through the policy's own operations (a readmission swaps the champion; a switch
    brings every arm back).
    """

    PARAMS: ClassVar[dict[str, Param]] = GUARD_PARAMS

    def __init__(self, policy: MergeBandit, params: dict[str, Any]) -> None:
        self.policy = policy
        self.delta = float(params["delta"])
        self.on_non_condorcet = params["on_non_condorcet"]
        self.check_every = int(params["check_every"])
        self.verify_scale = float(params["verify_scale"])
        self.verification = ChampionVerification(policy, self.verify_scale, self.delta)
        self.flagged = False
        self.flagged_at: int | None = None
        self.evidence: dict[str, Any] = {}
        #: ``"merge"``, or ``"copeland"`` after a switch
        self.mode = "merge"
        # W's version against the version the last full check saw (a cache, not state)
        self._version = 0
        self._checked = 0

    # ------------------------------------------------------------------ reports
    def report(self) -> dict[str, Any]:
        """The policy's ``non_condorcet()``: flagged, when, the evidence, ``delta``."""
        return {
            "flagged": bool(self.flagged),
            "flagged_at": self.flagged_at,
            "evidence": self.evidence,
            "delta": self.delta,
        }

    def structure(self) -> dict[str, Any]:
        """What the guard adds to the policy's ``structure()``."""
        return {"mode": self.mode,
                "readmitted": [list(x) for x in self.verification.readmitted],
                "non_condorcet": self.report()}

    def volatility(self, merge: Volatility) -> Volatility:
        """The merge's volatility plus what may change the structure besides its
        eliminations: once converged, an outcome of the champion against an eliminated
        arm (a readmission, by the same elimination test), and the outcome whose count
        runs the periodic check (it may flag); no check after a flag. (The policy says
        None itself after a switch to the Copeland rule.)"""
        champion, challengers = self.verification.watched(self.flagged)
        return dataclasses.replace(merge, period=0 if self.flagged else self.check_every,
                                   champion=champion, challengers=challengers)

    def quiet_steps(self) -> float:
        """How many of the next steps are certainly ``(c, c)`` with nothing to learn
        (0 if the next one may not be): one survivor, no arm due before then, and the
        last check saw the current counts (so the checks those steps would run change
        nothing). ``math.inf`` when that holds for ever. The simulator skips these steps
        exactly (same regret, counters advanced)."""
        v = self.verification
        if self.mode != "merge" or not v.converged() or self._checked != self._version:
            return 0
        due = v.next_due()
        if due == math.inf:
            return math.inf
        return max(0, math.ceil(due) - self.policy.t - 1)

    # ------------------------------------------------------------------ the policy's hooks
    def special(self, rng: np.random.Generator) -> Comparison | None:
        """The Copeland rule's pair after a switch, else a verification pair for step
        ``policy.t``, else None (the merge chooses)."""
        if self.mode == "copeland":
            return self._copeland_pair(rng)
        return self.verification.due_pair()

    def before_update(self, i: int, j: int) -> bool:
        """An outcome on ``(i, j)`` is about to be recorded: whether the merge records
        it too (not after a switch to the Copeland rule)."""
        if i != j:
            self._version += 1
        return self.mode == "merge"

    def after_merge_update(self, i: int, j: int) -> None:
        """Verification after the merge recorded ``(i, j)`` (no readmission once
        flagged)."""
        self.verification.after_merge_update(i, j, may_readmit=not self.flagged)

    def after_update(self) -> None:
        """Every ``check_every`` recorded comparisons: the guard's check."""
        if self.policy.n_updates % self.check_every == 0:
            self._run_check()

    def arms_changed(self) -> bool:
        """An arm was added or retired: whether the merge takes it into its batches
        (not after a switch: every non-retired arm is in play already)."""
        self.verification.forget()
        return self.mode != "copeland"

    def copeland_champion(self) -> int | None:
        """The Copeland rule's champion after a switch (None without active arms)."""
        p = self.policy
        arms = np.flatnonzero(p.status == ACTIVE)
        if arms.size == 0:
            return None
        sub = p.W[np.ix_(arms, arms)]
        score = (sub > sub.T).sum(axis=1)
        return int(arms[int(np.argmax(score))])

    # ------------------------------------------------------------------ state
    def extra_state(self) -> dict[str, Any]:
        """What the guard adds to the policy's state."""
        v = self.verification
        return {
            "guard": {
                "flagged": bool(self.flagged),
                "flagged_at": self.flagged_at,
                "evidence": self.evidence,
                "mode": self.mode,
                "readmitted": [list(x) for x in v.readmitted],
                "cycled": bool(v.cycled),
            },
            # whether the last full check saw the current counts (quiet_steps needs
            # it): a cache, not structure (the live store does not keep it:
            # service.store.snapshot)
            "checked_clean": self._checked == self._version,
        }

    def load_extra_state(self, state: dict[str, Any]) -> None:
        """Load what :meth:`extra_state` wrote (states of earlier versions too)."""
        g = state.get("guard", {})
        self.flagged = bool(g.get("flagged", False))
        self.flagged_at = None if g.get("flagged_at") is None else int(g["flagged_at"])
        self.evidence = dict(g.get("evidence", {}))
        self.mode = str(g.get("mode", "merge"))
        v = self.verification
        v.readmitted = [[int(x) for x in r] for r in g.get("readmitted", [])]
        v.cycled = bool(g.get("cycled", False))
        # (states of the earlier version carry "targets": the rule no longer needs them)
        v.forget()
        self._version = 0
        clean = g.get("clean", state.get("checked_clean", False))
        self._checked = 0 if clean else -1

    @staticmethod
    def upgrade_state(state: dict[str, Any]) -> dict[str, Any]:
        """A state stored by the earlier version (parameters ``verify_every`` and
        ``verify_min``, a ``targets`` list) as one the current verification rule loads."""
        params = dict(state.get("params", {}))
        if "verify_every" in params or "verify_min" in params:
            params.pop("verify_every", None)
            params.pop("verify_min", None)
            state = {**state, "params": params}
        return state

    # ------------------------------------------------------------------ the check
    def _run_check(self) -> None:
        if self.flagged:
            self._checked = self._version
            return
        p = self.policy
        active = np.flatnonzero(p.status == ACTIVE)
        full, evidence = verification.guard_check(
            p.W, p.status, active, n_updates=p.n_updates,
            check_every=self.check_every, delta=self.delta, max_active=p.batch_size,
            champion=lambda: int(active[0]) if active.size == 1 else p.best_arm())
        if full:
            self._checked = self._version
        if evidence is not None:
            self.flagged = True
            self.flagged_at = int(p.n_updates)
            self.evidence = evidence
            if self.on_non_condorcet == "switch":
                self._switch()
            else:
                self.verification.restore()

    # ------------------------------------------------------------------ Copeland rule
    def _switch(self) -> None:
        """Bring every non-retired arm back and select by the Copeland rule."""
        p = self.policy
        self.mode = "copeland"
        for a in np.flatnonzero(p.status == ELIMINATED):
            p.status[a] = ACTIVE
        self.verification.forget()
        p._drop_prepared()

    def _bounds(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p = self.policy
        sub = p.W[np.ix_(arms, arms)]
        n = sub + sub.T
        r = np.sqrt(p.alpha * math.log(p.t + 1 + p.c) / np.maximum(n, 1.0))
        prob = sub / np.maximum(n, 1.0)
        u = np.where(n > 0, prob + r, 1.0)
        lo = np.where(n > 0, prob - r, 0.0)
        np.fill_diagonal(u, 0.5)
        np.fill_diagonal(lo, 0.5)
        return u, lo

    def _copeland_pair(self, rng: np.random.Generator) -> Comparison:
        arms = np.flatnonzero(self.policy.status == ACTIVE)
        if arms.size == 0:
            raise RuntimeError("no active arms left to select")
        if arms.size == 1:
            return (int(arms[0]), int(arms[0]))
        u, lo = self._bounds(arms)
        opt = (u >= 0.5).sum(axis=1) - 1
        top = np.flatnonzero(opt == opt.max())
        c = int(top[rng.integers(top.size)])
        cand = u[:, c].copy()  # u_jc: how likely j beats c
        cand[c] = -np.inf
        cand[lo[:, c] > 0.5] = -np.inf  # j beats c with confidence: nothing to learn
        if not np.isfinite(cand).any():
            return (int(arms[c]), int(arms[c]))
        best = np.flatnonzero(cand == cand.max())
        d = int(best[rng.integers(best.size)])
        return (int(arms[c]), int(arms[d]))
