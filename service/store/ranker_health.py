"""Ranker health in Redis: consecutive failures, quarantine and its probes; recent
answers and the degraded mark (:mod:`service.search.degraded`)."""

from __future__ import annotations

from typing import Any, ClassVar

from service.store.base import StorePart
from service.store.keys import (
    exp_key,
    health_key,
    probe_key,
)
from service.store.snapshot import (
    text,
)


def parse_health(raw: dict[Any, Any]) -> dict[int, dict[str, Any]]:
    """``{arm: {"failures": n, "quarantined_until": ts | None, "degraded": reason | None,
    "degraded_until": ts | None}}`` from the health hash (only the rankers failing,
    quarantined, degraded or with recent bad answers: those also have ``"answers"``)."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        kind, _, arm = text(key).partition(":")
        if kind not in ("f", "q", "d", "u", "w"):
            continue  # "o": quarantines in a row (HealthStore.quarantines), not this view
        slot = out.setdefault(int(arm), {"failures": 0, "quarantined_until": None,
                                         "degraded": None, "degraded_until": None})
        if kind == "f":
            slot["failures"] = int(value)
        elif kind == "q":
            slot["quarantined_until"] = float(value)
        elif kind == "d":
            slot["degraded"] = text(value)
        elif kind == "w":
            slot["answers"] = text(value)  # its recent answers (service.search.degraded)
        else:
            slot["degraded_until"] = float(value)
    return out


class HealthStore(StorePart):
    """Per ranker: failures, quarantine, the probe right."""

    SCRIPTS: ClassVar[dict[str, str]] = {"_fail_script": "fail", "_answers_script": "answers"}

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

    def ranker_answers(self, exp_id: str, codes: dict[int, str], *, window: int, least: int,
                       share: float, reprobe_s: float) -> dict[int, tuple[int, int, int, bool]]:
        """Record one answer per arm of ``codes`` (``"o"`` results, ``"e"`` none, ``"u"``
        unparseable) in its window of the last ``window``; an arm with ``least`` answers
        or more, ``share`` of them empty or unparseable, is marked degraded (probed again
        after ``reprobe_s``). Per arm: ``(answers, empty, unparseable, marked now)``."""
        args: list[Any] = [window, least, share, self.clock(), reprobe_s]
        for arm, code in codes.items():
            args += [int(arm), code]
        rows = self._answers_script(keys=[health_key(exp_id), exp_key(exp_id)], args=args)
        return {arm: (int(n), int(e), int(u), bool(m))
                for arm, (n, e, u, m) in zip(codes, rows, strict=False)}

    def ranker_reprobe(self, exp_id: str, arm: int, at: float) -> None:
        """A degraded ``arm`` that answered no results to its probe: next probe at ``at``."""
        self.r.hset(health_key(exp_id), f"u:{int(arm)}", repr(float(at)))

    def ranker_restored(self, exp_id: str, arm: int) -> bool:
        """Clear the degraded mark of ``arm`` and its window; True if it was degraded."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hexists(health_key(exp_id), f"d:{int(arm)}")
        pipe.hdel(health_key(exp_id), f"d:{int(arm)}", f"u:{int(arm)}", f"w:{int(arm)}")
        was_degraded, _ = pipe.execute()
        return bool(was_degraded)
