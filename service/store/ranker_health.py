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
from service.store.scripts import SCRIPTS
from service.store.snapshot import (
    text,
)


def parse_health(raw: dict[Any, Any]) -> dict[int, dict[str, Any]]:
    """``{arm: {"failures": n, "quarantined_until": ts | None, "degraded": reason | None,
    "degraded_until": ts | None}}`` from the health hash (only the rankers failing,
    quarantined, degraded or with recent bad answers: those also have ``"answers"``; a
    ranker being probed also has ``"probing_until"``, when its probe right lapses)."""
    out: dict[int, dict[str, Any]] = {}
    for key, value in raw.items():
        kind, _, arm = text(key).partition(":")
        if kind not in ("f", "q", "d", "u", "w", "p"):
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
        elif kind == "p":
            slot["probing_until"] = float(value)
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
        n, opened = self._fail_script(*SCRIPTS["fail"].build(
            {"health": health_key(exp_id), "exp": exp_key(exp_id)},
            {"arm": arm, "now": self.clock(), "threshold": threshold,
             "quarantine_s": quarantine_s}))
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
        pipe.hdel(health_key(exp_id), f"f:{int(arm)}", f"q:{int(arm)}", f"o:{int(arm)}",
                  f"p:{int(arm)}")
        was_quarantined, _ = pipe.execute()
        return bool(was_quarantined)

    def take_probe(self, exp_id: str, arm: int, ttl_s: float) -> bool:
        """Take the right to call a quarantined ranker once (one request per ``ttl_s``).

        The health hash records until when (``p:<arm>``), so that selection leaves the
        ranker out while its probe is in flight
        (:func:`service.experiments.controller.quarantined`): every other search that
        chose it then would be served by its opponent alone, no duel, for as long as the
        probe waits (a hanging ranker's whole timeout). The probe's answer ends it: a
        success clears it (:meth:`ranker_recovered`, :meth:`ranker_restored`), a failure
        opens a new quarantine; if the prober dies, it lapses with the right."""
        taken = bool(self.r.set(probe_key(exp_id, arm), 1, nx=True,
                                px=max(1, int(ttl_s * 1000))))
        if taken:
            self.r.hset(health_key(exp_id), f"p:{int(arm)}", repr(self.clock() + ttl_s))
        return taken

    def ranker_answers(self, exp_id: str, codes: dict[int, str], *, window: int, least: int,
                       share: float, reprobe_s: float) -> dict[int, tuple[int, int, int, bool]]:
        """Record one answer per arm of ``codes`` (``"o"`` results, ``"e"`` none, ``"u"``
        unparseable) in its window of the last ``window``; an arm with ``least`` answers
        or more, ``share`` of them empty or unparseable, is marked degraded (probed again
        after ``reprobe_s``). Per arm: ``(answers, empty, unparseable, marked now)``."""
        rows = self._answers_script(*SCRIPTS["answers"].build(
            {"health": health_key(exp_id), "exp": exp_key(exp_id)},
            {"window": window, "least": least, "share": share, "now": self.clock(),
             "reprobe_s": reprobe_s},
            [({}, {"arm": arm, "code": code}) for arm, code in codes.items()]))
        return {arm: (int(n), int(e), int(u), bool(m))
                for arm, (n, e, u, m) in zip(codes, rows, strict=False)}

    def ranker_reprobe(self, exp_id: str, arm: int, at: float) -> None:
        """A degraded ``arm`` that answered no results to its probe: next probe at ``at``."""
        self.r.hset(health_key(exp_id), f"u:{int(arm)}", repr(float(at)))

    def ranker_restored(self, exp_id: str, arm: int) -> bool:
        """Clear the degraded mark of ``arm`` and its window; True if it was degraded."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hexists(health_key(exp_id), f"d:{int(arm)}")
        pipe.hdel(health_key(exp_id), f"d:{int(arm)}", f"u:{int(arm)}", f"w:{int(arm)}",
                  f"p:{int(arm)}")
        was_degraded, _ = pipe.execute()
        return bool(was_degraded)
