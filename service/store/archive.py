"""An archived experiment's keys: what stays, what goes (:mod:`service.reports.archive`).

Every key of an experiment carries its hash tag (``rd:{e}...``), so they are found by one
``SCAN MATCH`` (each node of a cluster scanned) and freed in one ``UNLINK`` per batch, in
its slot. What stays is what a finished experiment is read for (:data:`KEEP`): its state
and verdicts (``rd:{e}``, W, ties, segments, the metrics' counts, counters, shown), its
timeline (audit, history), its webhook delivery state and outbox, an A/B test's moments and
decisions. Everything per user or per impression goes (impressions and their clicks, the
attribution index, outcome events, the event log, the pending set, an A/B test's per-user
hash), as do the transient keys (leases, probes).
"""

from __future__ import annotations

import json
from typing import Any

from service.store.base import StorePart
from service.store.keys import exp_key

#: the suffixes (after ``rd:{e}``) of the keys an archive keeps
KEEP = frozenset({"", ":W", ":ties", ":segments", ":metrics", ":counters", ":shown",
                  ":health", ":t", ":audit", ":history", ":hooks", ":outbox", ":ab:m",
                  ":ab:decided"})
#: the field of ``rd:{e}`` holding the archive's record (JSON)
ARCHIVED = "archived"


class ArchiveStore(StorePart):
    """Keys of one experiment, their memory, and the archive's one write."""

    def experiment_keys(self, exp_id: str) -> list[str]:
        """Every key of experiment ``exp_id`` (its hash tag)."""
        base = exp_key(exp_id)
        pattern = base.replace("[", "\\[").replace("?", "\\?").replace("*", "\\*") + "*"
        out = []
        for k in self.r.scan_iter(match=pattern, count=1000):
            k = k.decode() if isinstance(k, bytes) else k
            if k == base or k.startswith(base + ":"):
                out.append(k)
        return sorted(set(out))

    def key_bytes(self, keys: list[str]) -> int:
        """Their memory (``MEMORY USAGE``, bytes)."""
        pipe = self.r.pipeline(transaction=False)
        for k in keys:
            pipe.memory_usage(k, samples=0)
        return sum(int(n or 0) for n in pipe.execute())

    def write_archive(self, exp_id: str, record: dict[str, Any], drop: list[str]) -> None:
        """Store the archive's ``record`` in ``rd:{e}`` and free ``drop``."""
        self.r.hset(exp_key(exp_id), ARCHIVED, json.dumps(record, separators=(",", ":")))
        for i in range(0, len(drop), 500):
            self.r.unlink(*drop[i:i + 500])

    def archive_record(self, exp_id: str) -> dict[str, Any] | None:
        raw = self.r.hget(exp_key(exp_id), ARCHIVED)
        return json.loads(raw) if raw else None


__all__ = ["ARCHIVED", "KEEP", "ArchiveStore"]
