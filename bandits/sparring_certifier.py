"""The Sparring Certifier: find the leader as Self-Sparring does, certify it as an oracle
would; rankduel's ``recommended`` policy.

What it builds on
-----------------
* Independent Self-Sparring (Sui, Zhuang, Burdick & Yue 2017, Algorithm 2, ``m = 2``;
  :mod:`bandits.self_sparring`): each arm has a posterior on its chance to win a duel,
  ``S_i = Σ_j w_ij`` successes and ``F_i = Σ_j w_ji`` failures; each step draws it twice
  and duels the two arms whose draws are highest.
* The divergence elimination test of RMED (Komiyama et al. 2015, §3) as MergeMED uses it
  (:mod:`bandits.merge_med`): arm ``i`` is eliminated by ``j`` when ``p̂_ij < ½`` and
  ``n_ij · kl(p̂_ij, ½) > 2α log(t + 1 + C)``, with MergeMED's α = 0.236, C = 4·10⁶.
* The non-Condorcet guard (:mod:`bandits.non_condorcet_guard`), the champion's
  verification and readmission (:mod:`bandits.champion_verification`; the anytime
  schedule of RUCB, Zoghi et al. 2014, Algorithm 1, applied to the champion's row),
  unchanged in substance.
* What a certificate costs: the oracle certifier of ``bench/certification_floor.py``,
  told the winner, compares it in turn with every ranker still in play until the test
  removes each; the lower bound is Kaufmann, Cappé & Garivier 2016, Lemma 1.

How it selects
--------------
Among the active arms, draw ``θ_a`` twice from each arm's posterior (``x₁ = argmax θ``,
``x₂ = argmax θ'``). When the draws disagree the step duels ``(x₁, x₂)`` as Self-Sparring
does. When they agree — Self-Sparring would show ``x₁`` against itself and learn nothing —
the step is a *certification* duel of ``x₁`` (the leader) against a challenger drawn
uniformly from the other active arms, as the oracle certifier does once it knows the
winner. Every outcome between two active arms is tested; the loser of a pair that passes
the test is eliminated. Once one arm is left it plays itself, apart from verification.

Where it departs from the papers
--------------------------------
* Self-Sparring never eliminates and plays ``(x₁, x₁)`` when its draws agree; here that
  step certifies ``x₁`` instead, and arms beaten by the test leave the draw.
* The draws are Gaussian with the Beta posterior's mean and variance
  (``(S + 1)/(S + F + 2)``, ``(S + 1)(F + 1)/((S + F + 2)²(S + F + 3))``): a normal draw
  costs a fraction of a Beta draw, which matters at 136–700 arms and 10⁵ steps per
  second, and the argmax of two draws is what the rule needs, not the Beta's tails.
* The oracle compares the winner with the field in turn; here the challenger is drawn at
  random (live, many selections are made from one stored state before their outcomes
  arrive, and a turn order would give them all to one arm), and any active arm that
  loses the test to any other is eliminated, not only to the leader.

Verdicts at a stated error rate
-------------------------------
The elimination test above only stops *showing* an arm (soft, recoverable). The
verdicts, rankers *shown worse* and the *certified* champion at ``error_rate`` δ over the
whole run, are a second layer over the same counts, checked after every comparison
(:class:`bandits.certifier_verdicts.CertifiedVerdicts`, :mod:`bandits.confidence`'s
betting edge test). Arms no longer shown but not shown worse stay in the certification
pool: up to ``SOFT_SHARE`` of the certification duels before convergence go to them (one
that beats the leader by the elimination test is readmitted at the next check); after
convergence the champion meets each in turn until it is shown worse (or readmitted).

After certification (one active arm ``c``) the policy is MergeGuard's: an eliminated arm
``e`` is *due* for a duel with ``c`` while ``c`` has not refuted it at ``verify_scale``
times the threshold (Hoeffding form, ``n · 2(½ − p̂)²``), never once the pair is settled
at the guard's confidence; an eliminated arm not shown worse that beats ``c`` by the
elimination test itself is readmitted in place of ``c`` (after a certificate there is
none: the verification then only feeds the guard), and the first readmission that would
bring back an earlier champion stops readmission (``cycled``). Every ``check_every``
comparisons, and before a certificate, the guard (:mod:`bandits.condorcet_check`) flags
the data when every arm, or every active arm, is beaten with confidence by some arm.

Parameters were chosen on tuning instances and seeds never used for evaluation
(bench/results/policy/README.md, "Tuning").

Examples
--------
>>> import numpy as np
>>> from bandits.matrices import bradley_terry
>>> P = bradley_terry(20, gap=0.05, seed=2)
>>> env = np.random.default_rng(0)
>>> b = SparringCertifier(20, seed=1)
>>> for _ in range(30000):
...     i, j = b.select()
...     b.update(i, j, float(env.random() < P[i, j]))
>>> b.best_arm() == int(np.argmax((P > 0.5).sum(axis=1))), len(b.active_arms())
(True, 1)
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from bandits import confidence, verification
from bandits.base import ACTIVE, ELIMINATED, RETIRED, Comparison, DuelingBandit
from bandits.certifier_verdicts import CertifiedVerdicts
from bandits.merge_base import MergeBandit
from bandits.merge_med import MED_ALPHA
from bandits.merge_med import VERIFY_SCALE as MED_VERIFY_SCALE
from bandits.non_condorcet_guard import GUARD_PARAMS
from bandits.params import ALPHA, Param
from bandits.sparring_posteriors import Posteriors
from bandits.volatility import Volatility

#: at most this share of the certification duels before convergence go to arms no longer
#: shown (the rest to the active arms): enough to recover a wrongly dropped winner, few
#: enough that the search is not slowed; the rest of their certificate comes after
#: convergence, when the leader is the champion
SOFT_SHARE = 0.25


class SparringCertifier(CertifiedVerdicts, DuelingBandit):
    """Self-Sparring's search with an oracle-style certification and MergeGuard's guard
    (see the module docstring).

    Parameters
    ----------
    n_arms
        Number of arms K.
    alpha, c
        The elimination test ``n · kl(p̂, ½) > 2α log(t + 1 + C)``.
    delta, check_every, verify_scale
        The non-Condorcet guard and the verification after convergence, as MergeGuard's.
    error_rate
        δ of the verdicts (:mod:`bandits.confidence`): a champion is certified, and a
        ranker shown worse, only at ``1 − δ`` over the whole run and all pairs.
    seed
        Seed or ``numpy.random.Generator``.
    """

    name = "sparring_certifier"
    condorcet_guard = True
    elimination_test = True
    PARAMS: ClassVar[dict[str, Param]] = {
        "alpha": ALPHA.override(default=MED_ALPHA, desc="confidence α of the elimination "
                                "test n·kl(p̂, ½) > 2α log(t + 1 + C)"),
        # the Merge framework's C, with MergeMED's tuned value and a bound of its own
        "c": MergeBandit.PARAMS["c"].override(
            default=4e6, desc="offset C in the elimination threshold's log(t + 1 + C)",
            le=1e15, default_doc=None),
        # the guard's, declared once (bandits.non_condorcet_guard), verify_scale as MergeMED's
        "delta": GUARD_PARAMS["delta"],
        "check_every": GUARD_PARAMS["check_every"],
        "verify_scale": MED_VERIFY_SCALE,
        "error_rate": Param(float, confidence.DEFAULT_ERROR_RATE, "δ of the verdicts: "
                            "the chance, over the whole run, that the certified best "
                            "ranker is not the best, or the best is shown worse",
                            ge=1e-12, le=0.5),
    }

    def __init__(self, n_arms: int, *, seed: int | np.random.Generator | None = None,
                 **params: Any) -> None:
        super().__init__(n_arms, seed=seed)
        p = self.resolve_params(params)
        self.alpha, self.c = float(p["alpha"]), float(p["c"])
        self.delta, self.check_every = float(p["delta"]), int(p["check_every"])
        self.verify_scale = float(p["verify_scale"])
        self._start_verdicts(float(p["error_rate"]))
        self.flagged = False
        self.flagged_at: int | None = None
        self.evidence: dict[str, Any] = {}
        #: readmissions: ``[arm, champion it replaced, n_updates]`` each
        self.readmitted: list[list[int]] = []
        self.cycled = False
        self._due: np.ndarray | None = None  # verification cache (see _due_min_now)
        self._due_champ, self._due_min = -1, math.inf
        self._version = 0
        self._checked = 0
        if not self._restoring:  # from_state: _load_extra_state rebuilds from the counts
            self._rebuild()

    # ------------------------------------------------------------------ caches
    def _rebuild(self) -> None:
        """The active list and the posteriors (:class:`Posteriors`), from ``W`` and the
        status: each active arm's wins and losses against the arms still active, kept
        per slot of the active list (``_slot``: arm -> slot), so a selection reads them
        without gathering."""
        self._arms = act = np.flatnonzero(self.status == ACTIVE)
        self._arm_list: list[int] = act.tolist()
        self._slot = {a: k for k, a in enumerate(self._arm_list)}
        self._post = Posteriors(self.W, act)
        self._rebuild_pools()

    def _rebuild_pools(self) -> None:
        """What the verdicts and the soft eliminations change besides the active list:
        O(K) (an arm shown worse that was no longer shown needs no more)."""
        act = self._arms
        self._due = None
        self._floor = self._edge_floor()  # below it no comparison can draw an edge
        # arms no longer shown but not shown worse (_soft) still face the leader, so a
        # wrong soft elimination is recoverable; the pool is them and the active arms
        out = np.zeros(self.K, dtype=bool)
        out[list(self.worse)] = True
        self._soft = np.flatnonzero((self.status == ELIMINATED) & ~out)
        self._pool = np.flatnonzero(((self.status == ACTIVE) | (self.status == ELIMINATED))
                                    & ~out)
        self._pool_pos = {int(a): k for k, a in enumerate(self._pool)}
        # converged, not certified: the arms not yet shown worse face the champion in turn
        self._pending = np.zeros(0, dtype=np.intp)
        if act.size == 1 and not self.flagged and self.certificate is None:
            todo = (self.status != RETIRED) & ~out
            todo[act[0]] = False
            self._pending = np.flatnonzero(todo)

    # ------------------------------------------------------------------ public
    def threshold(self, t: int | None = None) -> float:
        """The elimination test's threshold ``2α log(t + 1 + C)`` (nats) at step ``t``."""
        return 2.0 * self.alpha * math.log((self.t if t is None else int(t)) + 1 + self.c)

    def volatility(self, t: int) -> Volatility | None:
        """Outcomes between two active arms that pass the test at step ``t`` (or later:
        the threshold only grows) may eliminate; once converged, an eliminated arm not
        shown worse beating the champion may readmit it; an outcome between two arms not
        shown worse whose counts draw the verdicts' edge (the same test as
        :meth:`_check_edge`, exact) may show one worse; the outcome that runs the guard's
        check may flag. Everything else only adds to ``W``."""
        champion, challengers = -1, frozenset[int]()
        if self._arms.size == 1 and not self.flagged and not self.cycled:
            champion = int(self._arms[0])  # update() readmits only arms not shown worse
            challengers = frozenset(int(e) for e in np.flatnonzero(self.status == ELIMINATED)
                                    if int(e) not in self.worse)
        # the checks may readmit before convergence
        groups = {} if self._arms.size < 2 else {int(a): 0 for a in self._arms}
        rest = self._rest() if self.certificate is None else []
        edge_arms = frozenset(rest) if len(rest) > 1 else frozenset[int]()
        level = self._edge_test().level if edge_arms else 0.0
        return Volatility(q=self.threshold(t) * (1.0 - 1e-9), groups=groups,
                          period=self.check_every,
                          champion=champion, challengers=challengers, divergence=True,
                          edge_arms=edge_arms, edge_level=level)

    def non_condorcet(self) -> dict[str, Any] | None:
        return {"flagged": bool(self.flagged), "flagged_at": self.flagged_at,
                "evidence": self.evidence, "delta": self.delta}

    def structure(self) -> dict[str, Any]:
        return {"active": self._arms.tolist(), "readmitted": [list(x) for x in self.readmitted],
                "non_condorcet": self.non_condorcet(), "verdicts": self.verdicts()}

    def best_arm(self) -> int:
        """The active arm with the highest posterior mean (the one searched and
        certified); the only active arm once converged."""
        if self.certificate is not None:
            return int(self.certificate["champion"])
        if self._arms.size == 0:
            return super().best_arm()
        return self._arm_list[self._post.best()]

    def steady(self) -> bool:
        return self.quiet_steps() == math.inf

    def quiet_steps(self) -> float:
        """Steps that are certainly the champion against itself with nothing to learn:
        converged, no arm due before then, and the last check saw the current counts."""
        if self._arms.size != 1 or self._checked != self._version or self._pending.size:
            return 0
        due = self._due_min_now()
        if due == math.inf:
            return math.inf
        return max(0, math.ceil(due) - self.t - 1)

    # ------------------------------------------------------------------ the test
    def _beaten(self, w: float, n: float) -> bool:
        """``w`` wins in ``n`` lose with confidence: ``n · kl(w/n, ½) > 2α log(t+1+C)``
        (MergeMED's test, with its shortcuts ``2(½−p)² ≤ kl(p, ½) ≤ 4(½−p)²``)."""
        if 2.0 * w >= n:
            return False
        thr = 2.0 * self.alpha * math.log(self.t + 1 + self.c)
        g = 0.5 - w / n
        if 2.0 * n * g * g > thr:
            return True
        if 4.0 * n * g * g <= thr:
            return False
        p = w / n
        kl = (p * math.log(2.0 * p) if p > 0.0 else 0.0) + (1.0 - p) * math.log(2.0 * (1.0 - p))
        return n * kl > thr

    # ------------------------------------------------------------------ hooks
    def _select(self) -> Comparison:
        arms = self._arms
        n = arms.size
        if n == 0:
            raise RuntimeError("no active arms")
        if n == 1:
            c = int(arms[0])
            if self._pending.size:  # certify the champion against the rest, in turn
                return (c, int(self._pending[self.t % self._pending.size]))
            if self.t >= self._due_min_now():
                due = np.flatnonzero(self._due <= self.t)
                return (c, int(due[self.t % due.size]))
            return (c, c)
        x1, x2 = self._post.draw(self.rng)  # θ = μ + σ·z, twice
        if x1 == x2:  # certification: the leader against a random challenger
            u = self.rng.random()
            soft = self._soft
            q = min(SOFT_SHARE, soft.size / (soft.size + n - 1.0))
            if u < q:  # one no longer shown (recovery, and its certificate)
                return (self._arm_list[x1], soft.item(int(u / q * soft.size)))
            x2 = min(int((u - q) / (1.0 - q) * (n - 1)), n - 2)
            x2 += x2 >= x1
        return (self._arm_list[x1], self._arm_list[x2])

    def _update(self, i: int, j: int, outcome: float) -> None:
        if i != j:
            self._version += 1
            wij, wji = self.W.item(i, j), self.W.item(j, i)
            if self.status.item(i) == ACTIVE and self.status.item(j) == ACTIVE:
                self._post.add_duel(self._slot[i], self._slot[j], outcome)
                # at most one side has 2w < n (fl(w_ij + w_ji) ≤ 2 max): test only it
                n = wij + wji
                if 2.0 * wij < n:
                    if self._beaten(wij, n):
                        self._drop(i, j)
                elif 2.0 * wji < n and self._beaten(wji, n):
                    self._drop(j, i)
            elif (self._arms.size == 1 and self._pending.size and not self.flagged
                  and not self.cycled and i in self._pool_pos and j in self._pool_pos):
                # converged, certifying: an arm no longer shown that beats the champion by
                # the elimination test is readmitted (MergeGuard's rule, with its cycles)
                c = int(self._arms[0])
                e = j if i == c else i
                if e != c and self.status.item(e) == ELIMINATED:
                    wce = self.W.item(c, e)
                    if self._beaten(wce, wce + self.W.item(e, c)):
                        self._readmit(e, c)
            elif self._arms.size == 1 and self._due is not None and self._due_champ in (i, j):
                c = self._due_champ
                e = j if i == c else i
                wce, wec = (wij, wji) if i == c else (wji, wij)
                if (not self.flagged and not self.cycled and self.status[e] == ELIMINATED
                        and e not in self.worse and self._beaten(wce, wce + wec)):
                    self._readmit(e, c)
                else:
                    self._due[e] = self._due_of(np.array([e]), c)[0]
                    self._due_min = float(self._due.min())
            # verdicts, after every comparison: (w_ij − w_ji)² ≥ n · floor is necessary for
            # either edge (kl(p, ½) ≤ 4(p − ½)²), so most comparisons stop here
            d = wij - wji
            if d * d >= (wij + wji) * self._floor:
                self._check_edge(i, j)
        if self.n_updates % self.check_every == 0:
            self._run_check()

    def _drop(self, loser: int, by: int) -> None:
        self.eliminate(loser, by)
        self._rebuild()

    def _readmit(self, e: int, c: int) -> None:
        """``e`` beat the champion ``c`` by the elimination test: ``e`` comes back and
        ``c`` goes (MergeGuard's readmission); a cycle stops it and restores the first
        champion."""
        if any(e == old for _, old, _ in self.readmitted):
            self.cycled = True
            self._restore()
            return
        self.readmitted.append([int(e), int(c), int(self.n_updates)])
        self._swap(e, c)

    def _swap(self, e: int, c: int) -> None:
        self.status[e] = ACTIVE
        self.eliminated.pop(int(e), None)
        self._drop(c, e)  # (rebuilds the moments over the new field)

    def _restore(self) -> None:
        if self.readmitted and self._arms.size == 1:
            first, c = self.readmitted[0][1], int(self._arms[0])
            if first != c and self.status[first] == ELIMINATED and first not in self.worse:
                self._swap(first, c)  # (an arm shown worse never comes back)
        self._due = None

    def _add_arm(self, arm: int) -> None:
        self.certificate = None  # the new ranker is not covered by it
        self._rebuild()

    def _retire_arm(self, arm: int) -> None:
        self._rebuild()
        self._try_certify()  # the last arm not shown worse may be left

    def _extra_state(self) -> dict[str, Any]:
        return {"guard": {"flagged": bool(self.flagged), "flagged_at": self.flagged_at,
                          "evidence": self.evidence,
                          "readmitted": [list(x) for x in self.readmitted],
                          "cycled": bool(self.cycled)},
                "verdicts": self._verdicts_state()}

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        g = state.get("guard", {})
        self.flagged = bool(g.get("flagged", False))
        self.flagged_at = None if g.get("flagged_at") is None else int(g["flagged_at"])
        self.evidence = dict(g.get("evidence", {}))
        self.readmitted = [[int(v) for v in x] for x in g.get("readmitted", [])]
        self.cycled = bool(g.get("cycled", False))
        self._load_verdicts_state(state.get("verdicts", {}))
        self._version, self._checked = 0, -1  # the next check runs before any skip
        self._rebuild()

    # ------------------------------------------------------------------ verification
    def _due_min_now(self) -> float:
        """The first step at which an eliminated arm is due against the champion
        (``math.inf``: never); builds the cache if needed. Only when converged."""
        c = int(self._arms[0])
        if self._due is None or self._due_champ != c or self._due.size != self.K:
            self._due_champ = c
            self._due = self._due_of(np.arange(self.K), c)
            self._due_min = float(self._due.min())
        return self._due_min

    def _due_of(self, arms: np.ndarray, c: int) -> np.ndarray:
        """For each of ``arms``, the first step from which it is due against ``c``:
        while ``n · 2(½ − p̂_ec)² ≤ 2 s α log(t + 1 + C)`` (MergeGuard's rule, with this
        policy's ``t + 1``)."""
        return verification.due_steps(
            self.W, self.status, arms, c, alpha=self.alpha, verify_scale=self.verify_scale,
            c=self.c, t_offset=1.0, delta=self.delta)

    # ------------------------------------------------------------------ guard
    def _run_check(self) -> None:
        """Every ``check_every`` comparisons: recovery, the verdicts' sweep (nothing new
        unless the counts moved without ``update()``) and the guard."""
        self._revive()
        self._certify()
        if self.flagged:
            self._checked = self._version
            return
        if self._guard(self.n_updates):
            self._checked = self._version

    def _guard(self, n_updates: int) -> bool:
        """One check of the guard (:func:`bandits.verification.guard_check`): flags on
        evidence; whether its cycle test ran in full (``n_updates`` picks above K = 136;
        0: in full, as before a certificate)."""
        full, evidence = verification.guard_check(
            self.W, self.status, self._arms, n_updates=n_updates,
            check_every=self.check_every, delta=self.delta, max_active=24,
            champion=self.best_arm)
        if evidence is not None:
            self.flagged = True
            self.flagged_at = int(self.n_updates)
            self.evidence = evidence
            self._restore()
        return full
