"""An experiment's stored snapshot and the codec between a policy and its Redis keys.

A policy's ``state_dict`` is stored in three parts (:mod:`service.store.keys`):

* ``W`` in its own key ``rd:{e}:W``, raw float64 bytes (compact, exact, a ``frombuffer``
  away from an array, and incremented in place by the credit script);
* the comparison count ``n_updates`` in the field ``n`` (incremented by the same script);
* the rest, the policy's **structure** (status, eliminations, batches, stage, its
  generator, ...), as JSON in the field ``state``, rewritten only when the structure
  changes (:data:`STRUCTURE_FIELDS`); ``sv`` counts those rewrites.

The step counter ``t`` is not stored with the policy: it is the experiment's selection
counter ``rd:{e}:t`` (the controller selects at that ``t``, the credit step syncs to it).
Entries of a ``state_dict`` that are functions of ``W`` (:data:`W_DERIVED`) are not
stored either, since ``W`` moves without them: the policy rebuilds them from ``W`` when
it is loaded. Selection caches that a live selection never persists are dropped with them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import bandits
from bandits.base import DuelingBandit
from service.store.records import Ranker

#: the hash fields one snapshot read takes, in this order (``W`` is read beside them)
SNAPSHOT_FIELDS = ("meta", "lifecycle", "rankers", "version", "state", "n", "sv", "hold")

#: per algorithm, the ``state_dict`` entries rebuilt from ``W`` on load (self_sparring's
#: win and loss totals are W's row and column sums) or that only selection writes
#: (MergeDTS's draws prepared ahead; a live selection never persists them), so never
#: stored: tests/unit/test_credit_path.py checks that a policy loaded from the stored parts
#: selects exactly like the one that ran update()
W_DERIVED: dict[str, tuple[str, ...]] = {
    "self_sparring": ("wins", "losses"),
    "mergedts": ("ahead", "prepared"),
    "mergerucb": ("prepared",),
    # whether the last check saw the current counts: the simulator's cache (quiet_steps)
    "mergeguard": ("checked_clean",),
    "mergemed": ("checked_clean",),
}


class ExperimentMissing(LookupError):
    """No experiment with this id."""


class RankerMissing(LookupError):
    """The experiment has no ranker of this name."""


def structure_state(bandit: DuelingBandit) -> dict[str, Any]:
    """The policy's ``state_dict`` without ``W``, ``t``, ``n_updates`` and what is rebuilt
    from ``W`` (:data:`W_DERIVED`): what changes only when the structure changes."""
    state = bandit.state_dict()
    for name in ("W", "t", "n_updates", *W_DERIVED.get(bandit.name, ())):
        state.pop(name, None)
    return state


def encode_structure(bandit: DuelingBandit) -> dict[str, Any]:
    """The hash fields of the policy's structure: ``state`` (JSON) and ``K``."""
    return {"state": json.dumps(structure_state(bandit)), "K": bandit.K}


def encode_w(bandit: DuelingBandit) -> bytes:
    """``W`` as stored in ``rd:{e}:W``."""
    return np.ascontiguousarray(bandit.W, dtype="<f8").tobytes()


def decode_bandit(w_bytes: bytes, state: str | bytes | dict[str, Any], n_updates: int,
                  t: int = 0) -> DuelingBandit:
    """The policy from its stored parts (inverse of :func:`encode_structure`,
    :func:`encode_w` and ``n``), at step ``t``."""
    state = dict(json.loads(state) if isinstance(state, str | bytes) else state)
    K = int(state["K"])
    state["W"] = np.frombuffer(w_bytes, dtype="<f8").reshape(K, K).copy()
    state["n_updates"] = int(n_updates)
    state["t"] = int(t)
    return bandits.bandit_from_state(state)


def encode_rankers(rankers: Iterable[Ranker]) -> str:
    """The ``rankers`` field: the experiment's rankers as a JSON list, in arm order."""
    return json.dumps([r.to_json() for r in rankers])


def decode_rankers(value: str | bytes) -> list[Ranker]:
    """The experiment's rankers from the ``rankers`` field (inverse of
    :func:`encode_rankers`)."""
    return [Ranker.from_json(r) for r in json.loads(value)]


def text(value: bytes | str | None) -> str | None:
    """A Redis reply as ``str`` (replies are bytes: ``W`` is binary)."""
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Snapshot:
    """One consistent read of an experiment's hash and ``W``."""

    exp_id: str
    meta: dict[str, Any]
    lifecycle: str
    rankers: list[Ranker]
    version: int
    w_bytes: bytes
    state_json: str
    n_updates: int = 0
    #: structure version (+1 on every change of ``state_json``)
    sv: int = 0
    #: the impression whose credit is being decided, if any (:mod:`service.store`)
    hold: str | None = None
    #: counters and selection count, when read with the snapshot (``full=True``)
    counters: dict[str, int] | None = None
    selections: int | None = None
    #: ranker health ``{arm: {"failures": n, "quarantined_until": ts | None}}`` (full reads)
    health: dict[int, dict[str, Any]] | None = None
    _bandit: DuelingBandit | None = field(default=None, repr=False)

    @property
    def bandit(self) -> DuelingBandit:
        """The decoded policy (decoded once, on first use), at the selection count when
        it was read with the snapshot."""
        if self._bandit is None:
            self._bandit = decode_bandit(self.w_bytes, self.state_json, self.n_updates,
                                         self.selections or 0)
        return self._bandit

    @property
    def names(self) -> dict[int, str]:
        """Arm index -> ranker name."""
        return {r.arm: r.name for r in self.rankers}

    def ranker(self, name: str) -> Ranker:
        for r in self.rankers:
            if r.name == name:
                return r
        raise RankerMissing(f"experiment {self.exp_id!r} has no ranker {name!r}")


def parse_snapshot(exp_id: str, values: list[Any], w_bytes: bytes | None) -> Snapshot:
    """A :class:`Snapshot` from the replies of ``HMGET`` of :data:`SNAPSHOT_FIELDS` and
    ``GET`` of ``W``."""
    meta, lifecycle, rankers, version, state_json, n, sv, hold = values
    if meta is None or w_bytes is None:
        raise ExperimentMissing(f"no experiment {exp_id!r}")
    return Snapshot(
        exp_id=exp_id,
        meta=json.loads(meta),
        lifecycle=text(lifecycle),
        rankers=decode_rankers(rankers),
        version=int(version),
        w_bytes=w_bytes,
        state_json=text(state_json),
        n_updates=int(n or 0),
        sv=int(sv or 0),
        hold=text(hold),
    )
