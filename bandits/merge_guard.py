"""MergeGuard: MergeDTS with a Condorcet guard, rankduel's recommended policy.

Builds on MergeDTS (seed 000, Li et al. 2020; :mod:`bandits.merge_dts`, whose batching,
sampling and elimination it inherits unchanged, tuned preset α = 0.8⁶, M = 16,
C = 4·10⁶) and adds what seed 000 §6.5 shows is missing: a check that the data still
admit a Condorcet winner.

What it adds
------------
*The guard* (:mod:`bandits.condorcet_check`): every ``check_every`` recorded comparisons
the counts ``W`` of all non-retired arms are tested with an anytime-valid Hoeffding
confidence sequence (union bound over pairs and comparison counts, level ``delta``).
The policy is *flagged* when either every arm is beaten with confidence by some arm
(a cycle of confident edges: no Condorcet winner exists), or (once at most ``batch_size``
arms are active) an eliminated arm beats
the champion with confidence (the champion is not the Condorcet winner). On an instance
with a Condorcet winner that the merge kept, the flag is raised with probability at
most ``delta`` over the whole run; if the merge eliminated the Condorcet winner, the
second rule flags that too (an alarm worth raising either way).

*Verification*: once the merge is down to one survivor (the champion), a decaying share
of the steps (one in ``verify_every · (1 + t // 2¹⁷)``) compares the champion with an
eliminated arm that has not been checked against it (fewer than ``verify_min``
comparisons) or that empirically beats it. Those comparisons are what lets the guard
see an eliminated Copeland winner; on a Condorcet instance they stop once every
eliminated arm has ``verify_min`` comparisons with the champion and loses them, so the
regret after convergence stays flat.

*What a flag does* (``on_non_condorcet``): ``"flag"`` (default) only records it
(``flagged``, ``flagged_at`` (the update count), ``evidence``) in :meth:`structure` and
the state; ``"switch"`` also brings every non-retired arm back and selects as a
Copeland-winner policy from then on: a simplified CCB (seed 003 Algorithm 5 lines 6–8,
11–13 without the shortlist ``B_t``): the candidate is uniform over the arms with the
highest optimistic Copeland score, the opponent the arm with the highest upper bound
against it among those not beaten with confidence by it. That rule is a function of
``W`` and ``t`` alone, so ``select()`` changes no stored state and the live path runs it
unchanged.

Interface: as MergeDTS (``select``, ``select_at``, ``sync_step``, ``structure``,
``update``, add/retire, ``state_dict``/``from_state``); the flag, the mode and the
check counters are state.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bandits import condorcet_check
from bandits.base import ACTIVE, ELIMINATED, RETIRED, Comparison
from bandits.merge_dts import MergeDTS

MODES = ("flag", "switch")


class MergeGuard(MergeDTS):
    """MergeDTS plus an anytime-valid non-Condorcet guard (see the module docstring).

    Parameters (besides MergeDTS's ``preset``, ``alpha``, ``batch_size``, ``c``,
    ``horizon``): ``delta`` the false-flag rate over a run (default 0.01);
    ``on_non_condorcet`` ``"flag"`` or ``"switch"``; ``check_every`` comparisons between
    two checks (1000); ``verify_every`` the base period of verification steps after
    convergence (32); ``verify_min`` comparisons of each eliminated arm with the
    champion that verification aims for (32).

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

    def __init__(
        self,
        n_arms: int,
        *,
        preset: str = "tuned",
        alpha: float | None = None,
        batch_size: int | None = None,
        c: float | None = None,
        horizon: int | None = None,
        delta: float = condorcet_check.DEFAULT_DELTA,
        on_non_condorcet: str = "flag",
        check_every: int = 1000,
        verify_every: int = 32,
        verify_min: int = 32,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if on_non_condorcet not in MODES:
            raise ValueError(f"on_non_condorcet must be one of {', '.join(MODES)}, "
                             f"got {on_non_condorcet!r}")
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        for key, v in (("check_every", check_every), ("verify_every", verify_every),
                       ("verify_min", verify_min)):
            if int(v) < 1:
                raise ValueError(f"{key} must be at least 1, got {v}")
        self.delta = float(delta)
        self.on_non_condorcet = on_non_condorcet
        self.check_every = int(check_every)
        self.verify_every = int(verify_every)
        self.verify_min = int(verify_min)
        self.flagged = False
        self.flagged_at: int | None = None
        self.evidence: dict[str, Any] = {}
        self.mode = "merge"
        self.targets: list[int] = []
        super().__init__(n_arms, preset=preset, alpha=alpha, batch_size=batch_size, c=c,
                         horizon=horizon, seed=seed)

    # ------------------------------------------------------------------ public
    def params(self) -> dict[str, Any]:
        out = super().params()
        out.update(delta=self.delta, on_non_condorcet=self.on_non_condorcet,
                   check_every=self.check_every, verify_every=self.verify_every,
                   verify_min=self.verify_min)
        return out

    def structure(self) -> dict[str, Any]:
        out = super().structure()
        out["mode"] = self.mode
        out["non_condorcet"] = {
            "flagged": bool(self.flagged),
            "flagged_at": self.flagged_at,
            "evidence": self.evidence,
            "delta": self.delta,
        }
        return out

    def best_arm(self) -> int:
        if self.mode == "copeland":
            return self._copeland_champion()
        return super().best_arm()

    def steady(self) -> bool:
        """True when nothing is left to compare: one survivor, no verification target
        (the simulator's fast-forward waits for this)."""
        if self.mode != "merge" or not self._converged():
            return False
        return not self._targets_now(self._batches[0].arms[0])

    def select_at(self, t: int, rng: np.random.Generator) -> Comparison:
        self.t = int(t)
        pair = self._special(rng)
        if pair is not None:
            return pair
        return super().select_at(t, rng)

    # ------------------------------------------------------------------ hooks
    def _commit(self, i: int, j: int) -> None:
        # Nothing to advance at selection time; overriding the hook tells the live credit
        # path (service.credit.Guard) that every outcome must go through update() in
        # order, so the periodic check and the verification targets see each comparison
        # exactly as the simulator does.
        return None

    def _select(self) -> Comparison:
        pair = self._special(self.rng)
        if pair is not None:
            return pair
        return super()._select()

    def _update(self, i: int, j: int, outcome: float) -> None:
        if self.mode == "merge":
            super()._update(i, j, outcome)
        if self.n_updates % self.check_every == 0:
            self._run_check()

    def _add_arm(self, arm: int) -> None:
        if self.mode == "copeland":
            return  # every non-retired arm is in play already
        super()._add_arm(arm)

    def _retire_arm(self, arm: int) -> None:
        self.targets = [a for a in self.targets if a != arm]
        if self.mode == "copeland":
            return
        super()._retire_arm(arm)

    def _extra_state(self) -> dict[str, Any]:
        out = super()._extra_state()
        out["guard"] = {
            "flagged": bool(self.flagged),
            "flagged_at": self.flagged_at,
            "evidence": self.evidence,
            "mode": self.mode,
            "targets": [int(a) for a in self.targets],
        }
        return out

    def _load_extra_state(self, state: dict[str, Any]) -> None:
        super()._load_extra_state(state)
        g = state.get("guard", {})
        self.flagged = bool(g.get("flagged", False))
        self.flagged_at = None if g.get("flagged_at") is None else int(g["flagged_at"])
        self.evidence = dict(g.get("evidence", {}))
        self.mode = str(g.get("mode", "merge"))
        self.targets = [int(a) for a in g.get("targets", [])]

    # ------------------------------------------------------------------ guard
    def _converged(self) -> bool:
        bs = self._batches
        return len(bs) == 1 and bs[0].n == 1

    def _special(self, rng: np.random.Generator) -> Comparison | None:
        """A verification pair or the Copeland rule's pair for step ``self.t``, else
        None (the merge chooses)."""
        if self.mode == "copeland":
            return self._copeland_pair(rng)
        if self.targets and self._converged():
            period = self.verify_every * (1 + self.t // 131072)
            if self.t % period == 0:
                champ = self._batches[0].arms[0]
                k = (self.t // period) % len(self.targets)
                e = self.targets[k]
                if e != champ and self.status[e] != RETIRED:
                    return (champ, e)
        return None

    def _run_check(self) -> None:
        arms = np.flatnonzero(self.status != RETIRED)
        if arms.size < 2:
            return
        # the champion rule once the field is small (before, no arm is a champion yet and
        # best_arm() would cost O(K²) per check)
        small = int(np.count_nonzero(self.status == ACTIVE)) <= self.batch_size
        champ = self.best_arm() if small else -1
        if self.mode == "merge" and self._converged():
            self.targets = self._targets_now(champ)
        if self.flagged:
            return
        # the cycle test is O(K²): above 136 arms it runs every (K/136)² checks, so it
        # costs about the same per step at any K
        every = max(1, (arms.size // 136) ** 2)
        if (self.n_updates // self.check_every) % every == 0:
            res = condorcet_check.check(self.W, arms, self.delta)
        else:
            res = {"flagged": False, "cycle": []}
        over = []
        if champ >= 0:
            elim = np.flatnonzero(self.status == ELIMINATED).tolist()
            over = condorcet_check.beats_champion(self.W, champ, elim, int(arms.size),
                                                  self.delta)
        if res["flagged"] or over:
            self.flagged = True
            self.flagged_at = int(self.n_updates)
            self.evidence = {"cycle": res["cycle"], "champion": int(champ),
                             "beat_champion": over}
            if self.on_non_condorcet == "switch":
                self._switch()

    def _targets_now(self, champ: int) -> list[int]:
        """Eliminated arms with fewer than ``verify_min`` comparisons with the champion,
        or that empirically beat it."""
        others = np.flatnonzero((self.status != RETIRED) & (np.arange(self.K) != champ))
        n = self.W[others, champ] + self.W[champ, others]
        p = self.W[others, champ] / np.maximum(n, 1.0)
        return [int(a) for a in others[(n < self.verify_min) | (p >= 0.5)]]

    def _switch(self) -> None:
        """Bring every non-retired arm back and select by the Copeland rule."""
        self.mode = "copeland"
        for a in np.flatnonzero(self.status == ELIMINATED):
            self.status[a] = ACTIVE
        self.targets = []
        self._drop_prepared()

    # ------------------------------------------------------------------ Copeland rule
    def _bounds(self, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sub = self.W[np.ix_(arms, arms)]
        n = sub + sub.T
        r = np.sqrt(self.alpha * math.log(self.t + 1 + self.c) / np.maximum(n, 1.0))
        p = sub / np.maximum(n, 1.0)
        u = np.where(n > 0, p + r, 1.0)
        lo = np.where(n > 0, p - r, 0.0)
        np.fill_diagonal(u, 0.5)
        np.fill_diagonal(lo, 0.5)
        return u, lo

    def _copeland_champion(self) -> int:
        arms = np.flatnonzero(self.status == ACTIVE)
        if arms.size == 0:
            return super().best_arm()
        sub = self.W[np.ix_(arms, arms)]
        score = (sub > sub.T).sum(axis=1)
        return int(arms[int(np.argmax(score))])

    def _copeland_pair(self, rng: np.random.Generator) -> Comparison:
        arms = np.flatnonzero(self.status == ACTIVE)
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
