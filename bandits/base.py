"""The interface every dueling-bandit policy in rankduel implements.

A policy holds the comparison matrix ``W`` (``W[i, j]`` = how often arm ``i`` beat arm
``j``; a tie adds ½ to each side) and whatever structure its paper prescribes (batches,
stages, candidate sets). The live service, the Celery workers and the offline simulator
all drive a policy through the same few calls:

``select()``
    the next comparison: a tuple of arm indices. Pairwise policies return ``(i, j)``
    (``i == j`` means "show one ranker's list"); multi-dueling policies (MDB) return a
    tuple of one or more distinct arms.
``update(i, j, outcome)``
    one pairwise result, ``outcome`` in [0, 1]: 1 = ``i`` won, 0 = ``j`` won, ½ = tie.
``update_many(outcomes)``
    all pairwise results of one multileaved comparison, counted as one step.
``add_arm()`` / ``retire_arm(arm)``
    change the field mid-run.
``best_arm()``
    the arm the policy would name as the winner now (the champion).
``state_dict()`` / ``from_state(state)``
    the whole state as plain JSON-able lists and numbers, so it can live in Redis.

Arms are integer indices ``0..K-1``; an added arm gets the next index, a retired arm keeps
its index (and its row of ``W``) but is never chosen again.

Step counting. ``t`` counts calls to ``select()`` (the papers' time step; it drives the
round-robin over batches and the ``log t`` of confidence bounds), ``n_updates`` counts
recorded comparisons. In the simulator they move together; in the live service many
selections are in flight before their feedback returns, so ``t`` runs ahead.

One semantics, live and offline. Live, many processes select concurrently from copies of
the stored state (``select_at``) and nothing a selection changes is written back; the
feedback transaction loads the state, calls ``sync_step(t)`` and ``update()``, and stores
it. So ``select()`` changes nothing in ``state_dict()`` but ``t`` and the generator: what
it depends on is either stored and advanced by ``update()``/``update_many()`` (a policy
whose paper changes state at selection time, RUCB's ``B`` for instance, does that in the
``_commit`` hook, which sees ``W`` as the step's selection saw it), or derived from the
stored state and ``t``. With immediate feedback (the simulator's default) this is the
papers' sequence of states; with delayed feedback it is what the live service runs
(``bandits.simulator.simulate_run(..., delay=D)``).

Every random choice goes through ``self.rng``, a seeded ``numpy.random.Generator`` whose
state is part of ``state_dict()``: same seed, same run.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from typing import Any, ClassVar

import numpy as np

from bandits.common import preferences
from bandits.params import Param, resolve, values_of
from bandits.volatility import EVERY_OUTCOME, Volatility

ACTIVE, ELIMINATED, RETIRED = 0, 1, 2
STATUS_NAMES = {ACTIVE: "active", ELIMINATED: "eliminated", RETIRED: "retired"}

Comparison = tuple[int, ...]


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A ``Generator`` from a seed (or the generator itself)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


class DuelingBandit(abc.ABC):
    """Shared bookkeeping of a dueling-bandit policy.

    Subclasses set ``name`` and implement ``_select``; they override ``_update``,
    ``_add_arm``, ``_retire_arm``, ``best_arm``, ``_extra_state`` and ``_load_extra_state``
    where their algorithm keeps more than ``W``.

    Parameters
    ----------
    n_arms
        Number of arms (rankers) K at the start.
    seed
        Seed or ``numpy.random.Generator`` for every random choice.
    """

    name: ClassVar[str] = "base"
    #: True for policies that select sets of arms (multileaving) instead of pairs.
    multi: ClassVar[bool] = False
    #: True for policies whose ``update()`` advances selection state at every step (the
    #: ``_commit`` hook: RUCB, RCS, CCB, RMED1): no outcome commutes with another.
    serial_updates: ClassVar[bool] = False
    #: True for policies with a non-Condorcet guard (:meth:`non_condorcet` reports it).
    condorcet_guard: ClassVar[bool] = False
    #: True for policies that eliminate arms by a test of their own (the Merge family's
    #: ``_beaten``): the report can then say what the test still needs.
    elimination_test: ClassVar[bool] = False
    #: True while :meth:`from_state` builds the policy: its constructor may leave out the
    #: caches that ``_load_extra_state`` rebuilds from the loaded counts
    _restoring: bool = False

    # ------------------------------------------------------------------ parameters
    #: the policy's parameters besides ``n_arms`` and ``seed``, declared once
    #: (:mod:`bandits.params`): validation, the API's schemas, the command line and
    #: the docs read this; a subclass's constructor takes them as ``**params`` and
    #: calls :meth:`resolve_params`
    PARAMS: ClassVar[dict[str, Param]] = {}
    #: named sets of defaults for some parameters (a policy with a ``preset`` parameter
    #: picks one: the Merge family's ``"tuned"`` and ``"theoretical"``), declared on the
    #: class beside ``PARAMS``; the docs read it; none by default
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}

    @classmethod
    def resolve_params(cls, given: dict[str, Any]) -> dict[str, Any]:
        """Every declared parameter's value: ``given`` checked against ``PARAMS`` (a
        ``ValueError`` names a bad one), the declared defaults for the rest."""
        return resolve(cls.name, cls.PARAMS, given)

    def __init__(self, n_arms: int, *, seed: int | np.random.Generator | None = None) -> None:
        if int(n_arms) < 1:
            raise ValueError(f"n_arms must be at least 1, got {n_arms}")
        self.K = int(n_arms)
        self.W = np.zeros((self.K, self.K))
        self.t = 0
        self.n_updates = 0
        self.status = np.full(self.K, ACTIVE, dtype=np.int8)
        #: arm -> {"step": n_updates when eliminated, "by": the arm that beat it}
        self.eliminated: dict[int, dict[str, int]] = {}
        self.rng = make_rng(seed)

    # ------------------------------------------------------------------ public API
    def select(self) -> Comparison:
        """Advance the time step and return the next comparison.

        Nothing else in ``state_dict()`` changes but the generator's state.
        """
        self.t += 1
        return self._select()

    def select_at(self, t: int, rng: np.random.Generator) -> Comparison:
        """The comparison for global step ``t``, drawn with ``rng``.

        The live service's entry point: many API processes select concurrently from
        copies of one stored state, each at the step ``t`` the shared counter handed it
        and with a generator seeded from ``(experiment seed, t)``. The policy's own
        generator is left as it was, so what a selection draws never reaches the stored
        state; ``select()`` is ``select_at(self.t + 1, self.rng)``.
        """
        saved, self.rng = self.rng, rng
        self.t = int(t) - 1
        try:
            return self.select()
        finally:
            self.rng = saved

    def select_available(self, t: int, rng: np.random.Generator,
                         unavailable: Iterable[int] = ()) -> Comparison:
        """:meth:`select_at`, then the comparison moved onto the arms that can be served.

        ``unavailable``: arms that cannot be served for now (the live service's
        quarantined rankers). With none unavailable, or none of them chosen, this is
        exactly :meth:`select_at` (the offline simulator never has any, so live and
        offline stay the same run for healthy rankers). Otherwise the chosen arms that
        are available are kept and the comparison is completed with other active,
        available arms: the best of them by Copeland score first when none was kept,
        then drawn with ``rng``; a single arm when only one is available. The policy's
        state is not touched, so a ranker back from quarantine is chosen as before.
        """
        pick = self.select_at(t, rng)
        out = {int(a) for a in unavailable}
        if not out or out.isdisjoint(pick):
            return pick
        avail = [a for a in self.active_arms() if a not in out]
        if not avail:
            return pick  # nothing servable: the caller falls back as for a failure
        size = len(set(pick))  # 1: one ranker's list was chosen, served alone
        want = 1 if size == 1 else min(len(avail), size)
        keep = [a for a in dict.fromkeys(int(x) for x in pick)
                if a not in out and self.status[a] == ACTIVE]
        if not keep:
            keep = [self._copeland_best(avail)]
        rest = [a for a in avail if a not in keep]
        while len(keep) < want and rest:
            keep.append(rest.pop(int(rng.integers(len(rest)))))
        if self.multi:
            return tuple(keep)
        return (keep[0], keep[1] if len(keep) > 1 else keep[0])

    def _copeland_best(self, arms: list[int]) -> int:
        """The arm of ``arms`` with the highest Copeland score among them, ties broken by
        total win rate (the default :meth:`best_arm` on a subset)."""
        idx = np.asarray(arms)
        sub = self.W[np.ix_(idx, idx)]
        n = sub + sub.T
        copeland = (preferences(sub) > 0.5).sum(axis=1)
        rate = sub.sum(axis=1) / np.maximum(n.sum(axis=1), 1.0)
        return int(idx[np.lexsort((-rate, -copeland))[0]])

    def sync_step(self, t: int) -> None:
        """Move the step counter forward to the global step ``t`` (never back).

        Live, ``t`` counts the selections of every API process; the feedback transaction
        calls this before ``update()`` so that confidence bounds use ``log t`` of the
        experiment, not of the copy being updated.
        """
        self.t = max(self.t, int(t))

    def skip_steps(self, n: int) -> None:
        """Count ``n`` steps that changed nothing but the counters (the simulator's
        fast-forward over steps the policy vouches for: :meth:`quiet_steps`)."""
        self.t += int(n)
        self.n_updates += int(n)

    def quiet_steps(self) -> float:
        """How many of the next steps are certainly one arm against itself with nothing
        to learn, so the simulator may skip them exactly (default 0: none vouched for)."""
        return 0

    def steady(self) -> bool:
        """Whether every later step is the last active arm against itself (a policy
        that keeps comparing after convergence says False until it stops)."""
        return True

    def volatility(self, t: int) -> Volatility | None:
        """Which outcomes may change the structure when recorded at any step up to ``t``
        (None: none; only ``W`` and ``n_updates`` change). Default: every outcome for a
        policy with :attr:`serial_updates`, else none. Policies with a structure (the
        Merge policies) override it; tests/unit/test_credit_path.py checks every
        declaration against ``update()``. See :mod:`bandits.volatility`."""
        return EVERY_OUTCOME if self.serial_updates else None

    def non_condorcet(self) -> dict[str, Any] | None:
        """The non-Condorcet guard's report (``flagged``, ``flagged_at``, ``evidence``,
        ``delta``) for a policy with :attr:`condorcet_guard`; None otherwise."""
        return None

    def verdicts(self) -> dict[str, Any] | None:
        """Verdicts with a family-wise, anytime-valid error rate (:mod:`bandits.confidence`):
        ``{"error_rate", "certified", "certified_at", "shown_worse", "no_longer_shown",
        "family_wise"}`` for a policy that certifies so (``recommended``); None for the
        others, whose eliminations (if any) carry no family-wise guarantee."""
        return None

    def structure(self) -> dict[str, Any]:
        """The policy's structure for people and dashboards, as plain JSON: for the
        Merge policies ``{"stage": s, "batches": [[arm, ...], ...]}``; ``{}`` for
        policies without one."""
        return {}

    def update(self, i: int, j: int, outcome: float) -> None:
        """Record one pairwise result: ``outcome`` 1 = ``i`` won, 0 = ``j`` won, ½ = tie.

        ``(i, j)`` is in the order ``select()`` returned it (the first arm is the one the
        policy chose first, RUCB's champion ``c`` for instance).
        """
        outcome = self._check_outcome(i, j, outcome)
        self._commit(i, j)
        self.n_updates += 1
        if i != j:
            self.W[i, j] += outcome
            self.W[j, i] += 1.0 - outcome
        self._update(i, j, outcome)

    def update_many(self, outcomes: Iterable[tuple[int, int, float]]) -> None:
        """Record all pairwise results of one multileaved comparison as one step."""
        checked = [(int(i), int(j), self._check_outcome(i, j, s)) for i, j, s in outcomes]
        if checked:
            self._commit(checked[0][0], checked[0][1])
        self.n_updates += 1
        for i, j, s in checked:
            if i != j:
                self.W[i, j] += s
                self.W[j, i] += 1.0 - s
        self._update_many(checked)

    def add_arm(self) -> int:
        """Add a new arm with zero counts; return its index."""
        k = self.K
        W = np.zeros((k + 1, k + 1))
        W[:k, :k] = self.W
        self.W = W
        self.status = np.append(self.status, np.int8(ACTIVE))
        self.K = k + 1
        self._add_arm(k)
        return k

    def retire_arm(self, arm: int) -> None:
        """Take an arm out of play for good; its counts stay in ``W``."""
        arm = self._check_arm(arm)
        if self.status[arm] == RETIRED:
            return
        self.status[arm] = RETIRED
        self._retire_arm(arm)

    def active_arms(self) -> list[int]:
        """Arms still in play (neither eliminated nor retired)."""
        return np.flatnonzero(self.status == ACTIVE).tolist()

    def best_arm(self) -> int:
        """The arm the policy would name as the winner now.

        Default: the active arm with the highest Copeland score on the empirical
        preferences, ties broken by total win rate.
        """
        active = np.flatnonzero(self.status == ACTIVE)
        if active.size == 0:
            active = np.flatnonzero(self.status != RETIRED)
        if active.size == 0:
            active = np.arange(self.K)
        sub = self.W[np.ix_(active, active)]
        n = sub + sub.T
        copeland = (preferences(sub) > 0.5).sum(axis=1)
        rate = sub.sum(axis=1) / np.maximum(n.sum(axis=1), 1.0)
        order = np.lexsort((-rate, -copeland))
        return int(active[order[0]])

    def eliminate(self, arm: int, by: int) -> None:
        """Mark ``arm`` eliminated, beaten with confidence by ``by``."""
        if self.status[arm] == ACTIVE:
            self.status[arm] = ELIMINATED
            self.eliminated[int(arm)] = {"step": int(self.n_updates), "by": int(by)}

    def params(self) -> dict[str, Any]:
        """The constructor parameters (besides K and seed) that define this run: every
        parameter declared in ``PARAMS``, read from the attribute of the same name
        (:func:`bandits.params.values_of`)."""
        return values_of(self, self.PARAMS)

    def state_dict(self) -> dict[str, Any]:
        """The whole state as plain lists, numbers and strings."""
        state: dict[str, Any] = {
            "algorithm": self.name,
            "params": self.params(),
            "K": self.K,
            "t": self.t,
            "n_updates": self.n_updates,
            "W": self.W.tolist(),
            "status": self.status.tolist(),
            "eliminated": {str(a): dict(v) for a, v in self.eliminated.items()},
            "rng": self.rng.bit_generator.state,
        }
        state.update(self._extra_state())
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> DuelingBandit:
        """Rebuild a policy from ``state_dict()`` output."""
        if state.get("algorithm") != cls.name:
            raise ValueError(f"state is for {state.get('algorithm')!r}, not {cls.name!r}")
        # built without the caches that _load_extra_state builds again from the loaded
        # counts (a policy's constructor reads _restoring): a hold decodes a policy each
        obj = cls.__new__(cls)
        obj._restoring = True
        obj.__init__(int(state["K"]), seed=0, **state.get("params", {}))
        obj.t = int(state["t"])
        obj.n_updates = int(state["n_updates"])
        obj.W = np.asarray(state["W"], dtype=float).reshape(obj.K, obj.K)
        obj.status = np.asarray(state["status"], dtype=np.int8)
        obj.eliminated = {
            int(a): {"step": int(v["step"]), "by": int(v["by"])}
            for a, v in state["eliminated"].items()
        }
        obj.rng.bit_generator.state = state["rng"]
        obj._load_extra_state(state)
        obj._restoring = False
        return obj

    def __repr__(self) -> str:
        n = self.W + self.W.T
        lines = [
            f"{type(self).__name__}(K={self.K}, t={self.t}, updates={self.n_updates}, "
            f"champion={self.best_arm()})",
            "  arm  status      played   win rate",
        ]
        for a in range(min(self.K, 40)):
            played = n[a].sum()
            rate = self.W[a].sum() / played if played else float("nan")
            lines.append(
                f"  {a:>3}  {STATUS_NAMES[int(self.status[a])]:<10}  {played:>7.0f}   {rate:.3f}"
            )
        if self.K > 40:
            lines.append(f"  ... {self.K - 40} more arms")
        return "\n".join(lines)

    # ------------------------------------------------------------------ hooks
    @abc.abstractmethod
    def _select(self) -> Comparison:
        """Choose the comparison for time step ``self.t``."""

    def _commit(self, i: int, j: int) -> None:  # noqa: B027
        """Advance, for the comparison ``(i, j)`` whose outcome is about to be recorded,
        the state the paper changes when it selects (``W`` and ``n_updates`` are still as
        the selection saw them; ``t`` is the step set by ``select()`` or ``sync_step()``).
        ``update_many`` passes its first pair."""

    def _update(self, i: int, j: int, outcome: float) -> None:  # noqa: B027
        """React to a recorded pairwise result (``W`` is already updated)."""

    def _update_many(self, outcomes: list[tuple[int, int, float]]) -> None:
        """React to the results of one multileaved comparison (``W`` already updated)."""
        for i, j, s in outcomes:
            self._update(i, j, s)

    def _add_arm(self, arm: int) -> None:  # noqa: B027
        """Place a newly added arm in the policy's structure."""

    def _retire_arm(self, arm: int) -> None:  # noqa: B027
        """Remove a retired arm from the policy's structure."""

    def _extra_state(self) -> dict[str, Any]:
        """Algorithm-specific state beyond the shared fields."""
        return {}

    def _load_extra_state(self, state: dict[str, Any]) -> None:  # noqa: B027
        """Restore what ``_extra_state`` saved."""

    # ------------------------------------------------------------------ helpers
    def _check_arm(self, arm: int) -> int:
        arm = int(arm)
        if not 0 <= arm < self.K:
            raise ValueError(f"arm {arm} out of range 0..{self.K - 1}")
        return arm

    def _check_outcome(self, i: int, j: int, outcome: float) -> float:
        K = self.K  # _check_arm's test inline (every update passes here); it raises
        if not 0 <= int(i) < K:
            self._check_arm(i)
        if not 0 <= int(j) < K:
            self._check_arm(j)
        s = float(outcome)
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"outcome must be in [0, 1], got {outcome}")
        return s
