"""Ranker failures in the API's log (logger ``rankduel.rankers``), one WARNING line each
with the experiment, the ranker's name and why, rate-limited.

Per (experiment, ranker) in each process: the first failure is logged, and so is a
failure of another kind than the last one logged (with the count of those held back);
failures of the same kind after it are counted and logged as one summary line per
``interval_s`` (default a minute), so a
dead ranker at 100 searches a second writes a line a minute, not a hundred a second.
State changes (quarantined, recovered, degraded, restored, and a refusal by this
process's allow-list) are always logged, and after one the next failure is logged again.

Nothing secret reaches the line: the ranker's URL and the failure's detail go through
:func:`service.rankers.redact.redact` (credentials in URLs, the ranker's header secrets);
request headers are never logged.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from service.rankers.client import RankerFailure
from service.rankers.redact import header_secrets, redact
from service.store.records import Ranker

log = logging.getLogger("rankduel.rankers")

#: seconds between two summary lines of one ranker's repeated failures
SUMMARY_INTERVAL_S = 60.0
#: (experiment, ranker) pairs remembered per process (the least recent dropped beyond)
MAX_TRACKED = 10_000


@dataclass
class _Track:
    reason: str
    logged_at: float
    since: dict[str, int] = field(default_factory=dict)  # reason -> failures not logged


def _where(exp_id: str, ranker: Ranker) -> str:
    return f"experiment {exp_id} ranker {ranker.name} ({redact(ranker.url)})"


def _counts(track: _Track) -> str:
    """``"12 failures (10 connection, 2 timeout)"``: what ``track`` held back."""
    n = sum(track.since.values())
    kinds = ", ".join(f"{k} {r}" for r, k in sorted(track.since.items()))
    return f"{n} failure{'s' if n != 1 else ''} ({kinds})"


def _detail(ranker: Ranker, failure: RankerFailure) -> str:
    text = failure.reason + (f": {failure.detail}" if failure.detail else "")
    return redact(text, header_secrets(ranker.request))


class FailureLog:
    """The rate-limited log lines of one process (:data:`FAILURES`)."""

    def __init__(self, interval_s: float = SUMMARY_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval_s, self.clock = interval_s, clock
        self._tracks: OrderedDict[tuple[str, str], _Track] = OrderedDict()
        self._lock = threading.Lock()

    def failure(self, exp_id: str, ranker: Ranker, failure: RankerFailure) -> None:
        """One failed call of ``ranker``: logged, counted for a summary, or dropped."""
        key, now = (exp_id, ranker.name), self.clock()
        with self._lock:
            track = self._tracks.get(key)
            held = ""
            if track is None or track.reason != failure.reason:
                if track is not None and track.since:
                    held = f" (and {_counts(track)} held back since the last line)"
                self._tracks[key] = _Track(failure.reason, now)
                self._tracks.move_to_end(key)
                while len(self._tracks) > MAX_TRACKED:
                    self._tracks.popitem(last=False)
                line = None
            else:
                track.since[failure.reason] = track.since.get(failure.reason, 0) + 1
                if now - track.logged_at < self.interval_s:
                    return
                line = f"{_counts(track)} in the last {now - track.logged_at:.0f} s"
                track.logged_at, track.since = now, {}
        if failure.reason == "refused":
            log.warning("%s: this process's allow-list refused the call (%s); it is not "
                        "counted against the ranker: set RANKDUEL_RANKER_ALLOW in this "
                        "API process's environment as for the process that added the "
                        "ranker (hostnames, IPs, CIDRs, or *)", _where(exp_id, ranker),
                        _detail(ranker, failure))
        elif line is None:
            log.warning("%s failed: %s%s", _where(exp_id, ranker), _detail(ranker, failure),
                        held)
        else:
            log.warning("%s: %s; last: %s", _where(exp_id, ranker), line,
                        _detail(ranker, failure))

    def event(self, exp_id: str, ranker: Ranker, what: str) -> None:
        """A change of the ranker's state (``what``: "quarantined for 30 s ...")."""
        with self._lock:
            self._tracks.pop((exp_id, ranker.name), None)
        log.warning("%s %s", _where(exp_id, ranker), redact(what))


#: this process's log of ranker failures
FAILURES = FailureLog()
