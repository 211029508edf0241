"""An experiment's stored snapshot and the codec between a policy and its Redis hash.

The hash ``rd:exp:{e}`` (:mod:`service.keys`) holds the experiment's definition, its
rankers and the policy's ``state_dict`` split in two fields: ``W`` as raw float64 bytes
(compact, exact, and a ``frombuffer`` away from an array) and the rest as JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import bandits
from bandits.base import DuelingBandit

#: the hash fields one snapshot read takes, in this order
SNAPSHOT_FIELDS = ("meta", "lifecycle", "rankers", "version", "W", "state")


class ExperimentMissing(LookupError):
    """No experiment with this id."""


class RankerMissing(LookupError):
    """The experiment has no ranker of this name."""


def encode_bandit(bandit: DuelingBandit) -> dict[str, bytes | str]:
    """The policy's ``state_dict`` as the two hash fields ``W`` and ``state``."""
    state = bandit.state_dict()
    state.pop("W")
    return {"W": np.ascontiguousarray(bandit.W, dtype="<f8").tobytes(), "state": json.dumps(state)}


def decode_bandit(w_bytes: bytes, state_json: bytes | str) -> DuelingBandit:
    """Inverse of :func:`encode_bandit`."""
    state = json.loads(state_json)
    K = int(state["K"])
    state["W"] = np.frombuffer(w_bytes, dtype="<f8").reshape(K, K).copy()
    return bandits.bandit_from_state(state)


def text(value: bytes | str | None) -> str | None:
    """A Redis reply as ``str`` (replies are bytes: ``W`` is binary)."""
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Snapshot:
    """One consistent read of an experiment's hash."""

    exp_id: str
    meta: dict[str, Any]
    lifecycle: str
    rankers: list[dict[str, Any]]
    version: int
    w_bytes: bytes
    state_json: str
    #: counters and selection count, when read with the snapshot (``full=True``)
    counters: dict[str, int] | None = None
    selections: int | None = None
    #: ranker health ``{arm: {"failures": n, "quarantined_until": ts | None}}`` (full reads)
    health: dict[int, dict[str, Any]] | None = None
    _bandit: DuelingBandit | None = field(default=None, repr=False)

    @property
    def bandit(self) -> DuelingBandit:
        """The decoded policy (decoded once, on first use)."""
        if self._bandit is None:
            self._bandit = decode_bandit(self.w_bytes, self.state_json)
        return self._bandit

    @property
    def names(self) -> dict[int, str]:
        """Arm index -> ranker name."""
        return {r["arm"]: r["name"] for r in self.rankers}

    def ranker(self, name: str) -> dict[str, Any]:
        for r in self.rankers:
            if r["name"] == name:
                return r
        raise RankerMissing(f"experiment {self.exp_id!r} has no ranker {name!r}")


def parse_snapshot(exp_id: str, values: list[Any]) -> Snapshot:
    """A :class:`Snapshot` from the replies of ``HMGET`` of :data:`SNAPSHOT_FIELDS`."""
    meta, lifecycle, rankers, version, w_bytes, state_json = values
    if meta is None:
        raise ExperimentMissing(f"no experiment {exp_id!r}")
    return Snapshot(
        exp_id=exp_id,
        meta=json.loads(meta),
        lifecycle=text(lifecycle),
        rankers=json.loads(rankers),
        version=int(version),
        w_bytes=w_bytes,
        state_json=text(state_json),
    )
