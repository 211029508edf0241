"""Ranker health in Redis: consecutive failures, quarantine and its probes."""

from __future__ import annotations

from typing import Any, ClassVar

from service.store.base import StoreBase
from service.store.keys import (
    exp_key,
    health_key,
    probe_key,
)
from service.store.snapshot import (
    text,
)


def parse_health(raw: dict[Any, Any]) -> dict[int, dict[str, Any]]:
    """``{arm: {"failures": n, "quarantined_until": ts | None}}`` from the health hash."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        kind, _, arm = text(key).partition(":")
        slot = out.setdefault(int(arm), {"failures": 0, "quarantined_until": None})
        if kind == "f":
            slot["failures"] = int(value)
        elif kind == "q":
            slot["quarantined_until"] = float(value)
        # "o": quarantines in a row (HealthStore.quarantines), not part of this view
    return out


class HealthStore(StoreBase):
    """Per ranker: failures, quarantine, the probe right."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_fail_script": "fail"}

    def ranker_failed(self, exp_id: str, arm: int, *, threshold: int,
                      quarantine_s: float) -> tuple[int, bool]:
        """Count a failure of ``arm``; returns ``(consecutive failures, quarantined now)``:
        the second is True when this failure opened (or, after a failed probe, re-opened)
        its quarantine for ``quarantine_s``."""
        n, opened = self._fail_script(keys=[health_key(exp_id), exp_key(exp_id)],
                                      args=[int(arm), self.clock(), threshold, quarantine_s])
        return int(n), bool(opened)

    def ranker_health(self, exp_id: str) -> dict[int, dict[str, Any]]:
        """The health of the failing rankers of ``exp_id`` (:func:`parse_health`)."""
        return parse_health(self.r.hgetall(health_key(exp_id)))

    def quarantines(self, exp_id: str, arm: int) -> int:
        """Quarantines of ``arm`` in a row: the first, then one per failed probe (a
        success resets it)."""
        return int(self.r.hget(health_key(exp_id), f"o:{int(arm)}") or 0)

    def ranker_recovered(self, exp_id: str, arm: int) -> bool:
        """Forget the failures of ``arm``; True if it was quarantined."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hexists(health_key(exp_id), f"q:{int(arm)}")
        pipe.hdel(health_key(exp_id), f"f:{int(arm)}", f"q:{int(arm)}", f"o:{int(arm)}")
        was_quarantined, _ = pipe.execute()
        return bool(was_quarantined)

    def take_probe(self, exp_id: str, arm: int, ttl_s: float) -> bool:
        """Take the right to call a quarantined ranker once (one request per ``ttl_s``)."""
        return bool(self.r.set(probe_key(exp_id, arm), 1, nx=True,
                               px=max(1, int(ttl_s * 1000))))
