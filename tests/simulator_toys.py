"""Toy dueling bandits and the summary fields of ``rankduel simulate``, shared by the
simulator's tests in tests/unit (tests/unit/test_simulator.py) and in tests/service
(tests/service/test_commands.py, whose ``--jobs`` workers import these by name)."""

from __future__ import annotations

from typing import ClassVar

from bandits.base import DuelingBandit
from bandits.params import Param


class FixedPair(DuelingBandit):
    """Always the same comparison (the winner against itself by default)."""

    name = "fixedpair"

    def __init__(self, n_arms, *, seed=None, i=0, j=0):
        super().__init__(n_arms, seed=seed)
        self.i, self.j = int(i), int(j)

    def _select(self):
        return (self.i, self.j)

    def params(self):
        return {"i": self.i, "j": self.j}


class Knockout(DuelingBandit):
    """The first two active arms meet ``rounds`` times; the one with fewer wins is
    eliminated. Ends with one active arm played against itself: fast-forward territory."""

    name = "knockout"
    PARAMS: ClassVar[dict[str, Param]] = {
        "rounds": Param(int, 40, "meetings before the loser is out", ge=1)}

    def __init__(self, n_arms, *, seed=None, **params):
        super().__init__(n_arms, seed=seed)
        self.rounds = self.resolve_params(params)["rounds"]
        self.count = 0

    def _select(self):
        act = self.active_arms()
        return (act[0], act[0]) if len(act) == 1 else (act[0], act[1])

    def _update(self, i, j, outcome):
        if i == j:
            return
        self.count += 1
        if self.count == self.rounds:
            self.count = 0
            loser, by = (j, i) if self.W[i, j] >= self.W[j, i] else (i, j)
            self.eliminate(loser, by)

    def params(self):
        return {"rounds": self.rounds}


class FixedSet(DuelingBandit):
    """A multi-dueling policy that always multileaves arms 0, 1 and 2."""

    name = "fixedset"
    multi = True

    def _select(self):
        return (0, 1, 2)


# ---------------------------------------------------------------------- CLI summaries
SUMMARY_FIELDS = {
    "algorithm", "params", "K", "steps", "runs", "winner", "winner_kind", "checkpoints",
    "regret_mean", "regret_stderr", "per_run", "steps_per_second",
}


def without_speed(summary):
    s = {k: v for k, v in summary.items() if k != "steps_per_second"}
    s["per_run"] = [{k: v for k, v in r.items() if k != "steps_per_second"}
                    for r in summary["per_run"]]
    return s
