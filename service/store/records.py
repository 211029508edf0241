"""The record types of what the store keeps, shared by the API and the worker.

Pure (no Redis): the store builds them from what it reads (:mod:`service.store`), the
API's handlers and the credit step (:mod:`service.credit.step`) read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Impression:
    """One stored impression (``rd:{e}:imp:<i>`` and its clicks).

    The API reads it with :meth:`~service.store.impressions.ImpressionStore.impression`
    (to check a token and what was shown); the worker with
    :meth:`~service.store.credits.CreditStore.read_impressions` (what the credit step
    needs: the API's fields are then left at their defaults).
    """

    id: str
    arms: list[int]
    duel: bool
    record: Any = None
    clicks: list[int] = field(default_factory=list)
    forfeits: list[tuple[int, int]] = field(default_factory=list)  # (winner arm, loser arm)
    created: float = 0.0
    credited: bool = False
    #: clicked position -> the longest dwell (ms) a browser reported for it (rankduel.js)
    dwell_ms: dict[int, int] = field(default_factory=dict)
    #: click reports the impression had taken when read (the credit script refuses to
    #: commit when it has taken another since: a click or a dwell arrived meanwhile)
    reports: int = 0
    #: its experiment
    exp: str = ""
    #: the selection's step
    t: int = 0
    #: the document ids shown, in order
    shown: list[str] = field(default_factory=list)
    #: the result URLs shown (for the click redirect), where the rankers gave them
    urls: list[str | None] = field(default_factory=list)
    #: when its token expires (epoch seconds)
    expires: int = 0
    #: closed to new clicks (ended, or credited)
    closed: bool = False
    #: its segment labels, ``dimension=value`` (:mod:`service.segments.dimensions`)
    segments: tuple[str, ...] = ()
    #: ``"ab"``: an A/B search's light impression (:mod:`service.ab.store`)
    design: str = "interleaving"
    #: an A/B search's user (their keyed hash: where the search was counted)
    ab_user: str = ""


#: a stored ranker's keys, in the order they are written (what :meth:`Ranker.to_json`
#: gives back; ``request`` and ``response`` only when the ranker has them)
_RANKER_KEYS = ("name", "url", "timeout_ms", "request", "response", "arm", "status",
                "added_at", "retired_at")


@dataclass(frozen=True)
class Ranker:
    """One ranker of an experiment (an entry of the ``rankers`` field of ``rd:{e}``).

    The API builds it when a ranker is added (:func:`service.experiments.operations.ranker_entry`)
    and shows it (``GET /experiments/ID``); the search path calls it
    (:class:`service.rankers.client.RankerClient`); the worker names arms by it. Parsed once from
    the stored JSON (:meth:`from_json`, in :func:`service.store.snapshot.parse_snapshot`) and
    written back exactly as it was read (:meth:`to_json`).

    Examples
    --------
    >>> r = Ranker.from_json({"name": "bm25", "url": "http://s/r", "timeout_ms": 800,
    ...                       "arm": 0, "status": "active", "added_at": 1.5,
    ...                       "retired_at": None})
    >>> r.name, r.timeout_s, r.request is None
    ('bm25', 0.8, True)
    >>> r.to_json()["status"], list(r.to_json())[:3]
    ('active', ['name', 'url', 'timeout_ms'])
    """

    name: str
    url: str
    timeout_ms: int
    #: its index in ``W``; -1 until the experiment gives it one
    arm: int = -1
    #: ``active`` or ``retired`` as stored (elimination is the policy's, not stored here)
    status: str = "active"
    added_at: float | None = None
    retired_at: float | None = None
    #: its request template and response mapping (:mod:`service.rankers.template`)
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    #: keys of a stored entry this version does not know, kept to be written back
    extra: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def timeout_s(self) -> float:
        return self.timeout_ms / 1000.0

    @property
    def version(self) -> int:
        """Which version of its ranker this is (1 unless added as a new version:
        :mod:`service.experiments.ranker_versions`)."""
        return int(self.extra.get("version", 1))

    @property
    def version_of(self) -> str:
        """The plain name of its ranker (``bm25`` for ``bm25@v2``)."""
        return str(self.extra.get("version_of", self.name))

    @classmethod
    def from_json(cls, entry: dict[str, Any]) -> Ranker:
        """The ranker of one stored entry (a dict of the ``rankers`` JSON list)."""
        known = {k: entry[k] for k in _RANKER_KEYS if k in entry}
        extra = {k: v for k, v in entry.items() if k not in known}
        return cls(**known, extra=extra)

    def to_json(self) -> dict[str, Any]:
        """The stored entry, keys in the order they were always written."""
        out: dict[str, Any] = {"name": self.name, "url": self.url,
                               "timeout_ms": self.timeout_ms}
        if self.request is not None:
            out["request"] = self.request
        if self.response is not None:
            out["response"] = self.response
        if self.arm >= 0:
            out.update(arm=self.arm, status=self.status, added_at=self.added_at,
                       retired_at=self.retired_at)
        out.update(self.extra)
        return out
