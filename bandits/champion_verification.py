"""The champion's verification after convergence, and readmission: a component of the
non-Condorcet guard (:class:`bandits.non_condorcet_guard.NonCondorcetGuard`).

Why a component of its own: the merge of Li et al. 2020 (Algorithm 1) stops comparing
once one ranker is left (line 8: "return the remaining ranker"); an elimination made on
an unlucky run, or on data without a Condorcet winner, is then never revisited. The
verification keeps the champion comparing the arms it leads until the data settle each
pair, and readmission undoes a wrong elimination. Neither is in the papers. The guard
composes this class; the pure schedule (:func:`bandits.verification.due_steps`) is
shared with the Sparring Certifier, which keeps its own copy of the bookkeeping below.

*Verification*: once the merge is down to one survivor, the champion ``c`` must itself
refute every eliminated arm ``e`` by MergeDTS's own elimination rule (Li et al. 2020,
Algorithm 1 lines 10–11, same α and ``C``, the threshold scaled by ``verify_scale`` =
s): ``e`` is *due* at step ``t`` while ``u_ec = w_ec/n + sqrt(s α log(t + C)/n) ≥ ½``
(always when ``n = 0``), and each step with a due arm compares ``(c, e)``, the due arms
taken in turn (step ``t`` takes number ``t mod`` their count, so selections made live
before their outcomes arrive are spread over them). Arms the champion eliminated itself
are not due (they already satisfy the rule); arms beaten by ``c`` with the guard's
confidence are never due again, nor arms that beat ``c`` with it (they are evidence for
the flag already). Why: the previous rule (32 comparisons per eliminated arm, then stop
if they went the champion's way) missed an eliminated Copeland winner with probability
≈ 0.1 per run and could not recover; under the UCB rule an arm that beats ``c``
(``p_ec > ½``) keeps its bound above ½ for ever, so it is compared until the guard sees
the upset, while on a Condorcet instance an arm with gap ``Δ`` costs about
``α log(t + C)/Δ²`` comparisons, a count that grows like ``log(t + C)`` — with
``C = 4·10⁶`` it barely moves between 10⁵ and 10⁸ steps, so the regret after
convergence stays flat. The rule is the anytime schedule of RUCB (Zoghi 2017,
Algorithm 2) applied to the champion's row, not a fixed budget. It keeps the Hoeffding
form of the test (:func:`bandits.verification.hoeffding_divergence`) for MergeMED too
(see :mod:`bandits.merge_med`).

*Readmission*: if a due comparison leaves the champion ``c`` beaten by an eliminated arm
``e`` *by the elimination test itself* (``u_ce < ½``), ``e`` is readmitted and ``c``
eliminated by it (``readmitted`` lists ``[e, c, n_updates]``). On a Condorcet instance
this undoes the rare elimination of the Condorcet winner (it is always due against any
other champion, since it beats it). On a non-Condorcet instance it walks round a cycle;
the first readmission that would bring back an earlier champion stops it for good
(``cycled``) and restores the champion the merge converged to, as does a flag in
``"flag"`` mode, so a weak arm that upsets one Copeland winner is never left in charge;
verification then keeps comparing the upsetter until the guard flags. (Walking round the
cycle until the flag, as a first version did, kept weak champions for 10⁵+ steps at
K = 136: the cycle adds about one comparison per lap to the pair the guard needs.)

Between due steps the champion plays itself: :meth:`ChampionVerification.next_due` gives
the next due step (``exp(n (½ − p̂)²/(s α)) − C`` for each arm), from which the guard's
``quiet_steps`` tells the simulator how many of the next steps are certainly ``(c, c)``,
so it can skip them exactly.
"""

from __future__ import annotations

import math

import numpy as np

from bandits import verification
from bandits.base import ACTIVE, ELIMINATED, Comparison
from bandits.merge_base import MergeBandit


class ChampionVerification:
    """The verification after convergence and the readmission of the module docstring:
    a component of :class:`~bandits.non_condorcet_guard.NonCondorcetGuard`, built with
    the policy.

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
            c=p.c, t_offset=0.0, delta=self.delta,
            divergence=verification.hoeffding_divergence)

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
