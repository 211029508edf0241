"""MergeGuard: MergeDTS with a Condorcet guard; the guard is a component MergeMED declares too.

MergeGuard is MergeDTS (Li et al. 2020; :mod:`bandits.merge_dts`: the same batching,
pair rule :class:`~bandits.merge_dts.DTSPairs` and elimination test
:class:`~bandits.merge_dts.HoeffdingElimination`, tuned preset α = 0.8⁶, M = 16,
C = 4·10⁶) with the component :class:`NonCondorcetGuard`, which adds what Li et al.
2020, §6.5 shows is missing: a check that the data still admit a Condorcet winner, and
the champion's verification after convergence. Its parameters (``GUARD_PARAMS``) are
declared once here; :mod:`bandits.merge_med` and :mod:`bandits.sparring_certifier`
take them from here.

What it adds
------------
*The guard* (:mod:`bandits.condorcet_check`): every ``check_every`` recorded comparisons
the counts ``W`` of all non-retired arms are tested with an anytime-valid edge test
(a normal-mixture boundary per pair; a false flag has probability at most ``delta``).
The policy is *flagged* when either every arm is beaten with confidence by some arm
(no Condorcet winner exists), or every *surviving* (active) arm is beaten with
confidence by some arm (the Condorcet winner, if there is one, is not among the
survivors; once converged: an eliminated arm beats the champion). A Condorcet winner is
beaten with confidence with probability at most ``delta`` over the whole run, so on an
instance with a Condorcet winner that the merge kept the flag is raised with
probability at most ``delta``; if the merge eliminated it, the second rule is an alarm
worth raising either way. (An earlier version applied the second rule to the
``best_arm()`` of several survivors, which is not the Condorcet winner in general and
could flag falsely; it now asks that *every* survivor be beaten.)

*Verification* (not in the papers): once the merge is down to one survivor, the
champion ``c`` must itself refute every eliminated arm ``e`` by MergeDTS's own
elimination rule (Algorithm 1 lines 10–11, same α and ``C``, the threshold scaled by
``verify_scale`` = s): ``e`` is *due* at step ``t`` while
``u_ec = w_ec/n + sqrt(s α log(t + C)/n) ≥ ½`` (always when ``n = 0``), and
each step with a due arm compares ``(c, e)``, the due arms taken in turn (step ``t``
takes number ``t mod`` their count, so selections made live before their outcomes
arrive are spread over them). Arms the champion eliminated itself are not due (they
already satisfy the rule); arms beaten by ``c`` with the guard's confidence are never due
again, nor arms that beat ``c`` with it (they are evidence for the flag already). Why:
the previous rule (32 comparisons per eliminated arm, then stop if they went the
champion's way) missed an
eliminated Copeland winner with probability ≈ 0.1 per run and could not recover; under
the UCB rule an arm that beats ``c`` (``p_ec > ½``) keeps its bound above ½ for ever, so
it is compared until the guard sees the upset, while on a Condorcet instance an arm with
gap ``Δ`` costs about ``α log(t + C)/Δ²`` comparisons, a count that grows like
``log(t + C)`` — with ``C = 4·10⁶`` it barely moves between 10⁵ and 10⁸ steps, so the
regret after convergence stays flat. The rule is the anytime schedule of RUCB (Zoghi 2017,
Algorithm 2) applied to the champion's row, not a fixed budget.

*Readmission* (not in the papers): if a due comparison leaves the champion ``c`` beaten
by an eliminated arm ``e`` *by the elimination test itself* (``u_ce < ½``), ``e`` is
readmitted and ``c`` eliminated by it (``readmitted`` lists ``[e, c, n_updates]``). On a
Condorcet instance this undoes the rare elimination of the Condorcet winner (it is
always due against any other champion, since it beats it). On a non-Condorcet instance
it walks round a cycle; the first readmission that would bring back an earlier champion
stops it for good (``cycled``) and restores the champion the merge converged to, as does
a flag in ``"flag"`` mode, so a weak arm that upsets one Copeland winner is never left in
charge; verification then keeps comparing the upsetter until the guard flags. (Walking
round the cycle until the flag, as a first version did, kept weak champions for 10⁵+
steps at K = 136: the cycle adds about one comparison per lap to the pair the guard
needs.)

Between due steps the champion plays itself. :meth:`quiet_steps` tells the simulator how
many of the next steps are certainly ``(c, c)`` (the next due step is
``exp(n (½ − p̂)²/(s α)) − C`` for each arm), so it can skip them exactly.

*What a flag does* (``on_non_condorcet``): ``"flag"`` (default) only records it
(``flagged``, ``flagged_at`` (the update count), ``evidence``) in :meth:`structure` and
the state; ``"switch"`` also brings every non-retired arm back and selects as a
Copeland-winner policy from then on: a simplified CCB (Zoghi 2017, Algorithm 5 lines 6–8,
11–13 without the shortlist ``B_t``): the candidate is uniform over the arms with the
highest optimistic Copeland score, the opponent the arm with the highest upper bound
against it among those not beaten with confidence by it. That rule is a function of
``W`` and ``t`` alone, so ``select()`` changes no stored state and the live path runs it
unchanged.

Interface: as MergeDTS (``select``, ``select_at``, ``sync_step``, ``structure``,
``update``, add/retire, ``state_dict``/``from_state``); the flag, the mode, the
readmissions and whether the last check saw the current counts are state; the
verification schedule is a function of ``W``, the status and ``t``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import numpy as np

from bandits import condorcet_check, verification
from bandits.base import ACTIVE, ELIMINATED, Comparison, Volatility
from bandits.merge_base import MergeBandit
from bandits.merge_dts import HOEFFDING, DTSPairs, MergeDTS
from bandits.params import Param

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


class ChampionVerification:
    """The verification after convergence and the readmission of the module docstring:
    a component of :class:`NonCondorcetGuard`, built with the policy.

    Once the merge is down to one survivor ``c``, :meth:`due_pair` gives the comparison of
    ``c`` with an eliminated arm that ``c`` has not refuted at ``verify_scale`` times the
    elimination threshold (None when no arm is due); :meth:`after_merge_update` moves an
    arm's due step after its comparison, or readmits it when it beat ``c`` by the
    elimination test itself. The due steps are a cache (a function of ``W``, the status
    and the champion); the readmissions and whether they stopped (``cycled``) are state.
    """

    def __init__(self, policy: MergeBandit, verify_scale: float, delta: float) -> None:
        self.policy = policy
        self.verify_scale = verify_scale
        self.delta = delta
        #: re-admissions: ``[arm, champion it replaced, n_updates]`` each
        self.readmitted: list[list[int]] = []
        #: a readmission would have brought back an earlier champion (a cycle of
        #: elimination-test edges): readmission has stopped
        self.cycled = False
        # the cache: the step from which each arm is due, its minimum, and the champion
        # it was built for
        self._due: np.ndarray | None = None
        self._due_min = math.inf
        self._due_champ = -1

    def converged(self) -> bool:
        """One survivor: the merge is down to its champion."""
        bs = self.policy._batches
        return len(bs) == 1 and bs[0].n == 1

    def forget(self) -> None:
        """Drop the due steps (the arms or the mode changed); rebuilt when needed."""
        self._due = None

    def due_pair(self) -> Comparison | None:
        """The champion against a due arm at step ``policy.t``, or None."""
        t = self.policy.t
        if self.converged() and t >= self.next_due():
            # the due arms in turn (by index, step t takes number t mod their count):
            # live, many selections are made from one stored state before their outcomes
            # arrive, and always taking the same arm (the least compared, as a first
            # version did) gives it all of them at once (BENCHMARKS.md, live runs)
            due = np.flatnonzero(self._due <= t)
            return (self._due_champ, int(due[t % due.size]))
        return None

    def next_due(self) -> float:
        """The first step at which an eliminated arm is due (``math.inf``: never);
        builds the cache for the current champion if needed. Call only when
        converged."""
        p = self.policy
        c = p._batches[0].arms[0]
        if self._due is None or self._due_champ != c or self._due.size != p.K:
            self._due_champ = c
            self._due = self._due_of(np.arange(p.K), c)
            self._due_min = float(self._due.min())
        return self._due_min

    def watched(self, flagged: bool) -> tuple[int, frozenset[int]]:
        """``(champion, eliminated arms)`` whose outcome may readmit one of them (a
        structure change), or ``(-1, ∅)`` when readmission cannot happen."""
        p = self.policy
        if flagged or self.cycled or not self.converged():
            return -1, frozenset()
        champion = p._batches[0].arms[0]
        return champion, frozenset(int(e) for e in np.flatnonzero(p.status == ELIMINATED))

    def after_merge_update(self, i: int, j: int, may_readmit: bool) -> None:
        """After the merge recorded ``(i, j)``: a due comparison either readmits the
        eliminated arm (it beat the champion by the elimination test; only while
        ``may_readmit``) or moves its due step."""
        if i == j or self._due is None or self._due_champ not in (i, j):
            return
        p = self.policy
        c = self._due_champ
        e = j if i == c else i
        if self.converged() and p._batches[0].arms[0] == c:
            if (may_readmit and not self.cycled and p.status[e] == ELIMINATED
                    and p._beaten(p.W.item(c, e), p.W.item(c, e) + p.W.item(e, c))):
                self._readmit(e, c)
            else:
                self._due[e] = self._due_of(np.array([e]), c)[0]
                self._due_min = float(self._due.min())
        else:
            self._due = None

    def restore(self) -> None:
        """After a flag in ``"flag"`` mode or a cycle of readmissions: undo the
        readmissions, so the champion is the one the merge converged to. (Readmission
        exists for Condorcet instances; on a non-Condorcet one it walks round a cycle and
        may stand on a weak arm that beats one Copeland winner.)"""
        if not self.readmitted or not self.converged():
            return
        first = self.readmitted[0][1]
        c = self.policy._batches[0].arms[0]
        if first != c and self.policy.status[first] == ELIMINATED:
            self._swap(first, c)

    def _due_of(self, arms: np.ndarray, c: int) -> np.ndarray:
        """For each of ``arms``, the first step ``t`` at which it is due for a comparison
        with the champion ``c`` (0: now; ``inf``: never; see the module docstring): ``e``
        is refuted while ``n D(p̂_ec) > 2 s α log(t + C)`` (the elimination test at ``s``
        times its threshold, with Hoeffding's ``D``: for MergeDTS this is ``u_ec < ½``)."""
        p = self.policy
        return verification.due_steps(
            p.W, p.status, arms, c, alpha=p.alpha, verify_scale=self.verify_scale,
            c=p.c, t_offset=0.0, delta=self.delta, divergence=_hoeffding_divergence)

    def _readmit(self, e: int, c: int) -> None:
        """The eliminated arm ``e`` has beaten the champion ``c`` by the elimination
        test itself: ``e`` comes back and ``c`` is eliminated by it (the field stays one
        arm). On a Condorcet instance this undoes an elimination of the Condorcet winner;
        on a non-Condorcet one it cycles until the guard flags (then it stops)."""
        if any(e == old for _, old, _ in self.readmitted):
            # e was champion before: the elimination tests form a cycle. Stop walking
            # round it, put the merge's champion back and let verification gather the
            # evidence the guard needs (the arm that beats it stays due).
            self.cycled = True
            self.restore()
            self._due = None
            return
        self.readmitted.append([int(e), int(c), int(self.policy.n_updates)])
        self._swap(e, c)

    def _swap(self, e: int, c: int) -> None:
        """Make the eliminated arm ``e`` the champion in place of ``c``, which is
        eliminated by it."""
        p = self.policy
        p.status[e] = ACTIVE
        p.eliminated.pop(int(e), None)
        p._replace(0, sorted([c, e]))
        p.stage_field += 1
        p._eliminate_arms([(c, e)])
        self._due = None


class NonCondorcetGuard:
    """The non-Condorcet guard of the module docstring, with the champion's
    verification (:class:`ChampionVerification`): a component of a Merge policy (its
    ``GUARD``), built with the policy and the policy's resolved parameters (its own are
    ``PARAMS``, read back by the policy's ``params()``).

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


def _hoeffding_divergence(p: np.ndarray) -> np.ndarray:
    """How far an empirical preference ``p`` < ½ is from ½, on the scale of the
    elimination test ``n · D(p) > 2α log(t + C)``: ``2(½ − p)²`` (Hoeffding, MergeDTS's
    Algorithm 1 line 10). Verification keeps this form for MergeMED too (see
    :mod:`bandits.merge_med`)."""
    return 2.0 * (0.5 - p) ** 2


class MergeGuard(MergeBandit):
    """MergeDTS plus an anytime-valid non-Condorcet guard (see the module docstring):
    the components :class:`~bandits.merge_dts.DTSPairs`,
    :class:`~bandits.merge_dts.HoeffdingElimination` and :class:`NonCondorcetGuard`.

    Parameters (besides MergeDTS's ``preset``, ``alpha``, ``batch_size``, ``c``,
    ``horizon``): ``delta`` the false-flag rate over a run (default 0.01);
    ``on_non_condorcet`` ``"flag"`` or ``"switch"``; ``check_every`` comparisons between
    two checks (1000); ``verify_scale`` the fraction of the elimination threshold at
    which the champion must refute each eliminated arm (default 1.0: MergeDTS's own
    bound). Declared in ``PARAMS`` (the guard's in ``GUARD_PARAMS``).

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.matrices import non_condorcet
    >>> P = non_condorcet(8, gap=0.05, upset=0.3, seed=1)
    >>> env = np.random.default_rng(0)
    >>> b = MergeGuard(8, seed=1, check_every=200)
    >>> for _ in range(60000):
    ...     i, j = b.select()
    ...     b.update(i, j, float(env.random() < P[i, j]))
    >>> b.structure()["non_condorcet"]["flagged"]
    True
    """

    name = "mergeguard"
    PRESETS = MergeDTS.PRESETS  # Li et al. 2020, §5.5 (tuned) and Algorithm 1 line 2
    PARAMS: ClassVar[dict[str, Param]] = {**MergeBandit.PARAMS, **GUARD_PARAMS}
    PAIRS = DTSPairs
    ELIMINATION = HOEFFDING
    GUARD = NonCondorcetGuard
    condorcet_guard = True
    _round_up = True
