"""The record types of what the store keeps, shared by the API and the worker.

Pure (no Redis): the store builds them from what it reads (:mod:`service.store`), the
API's handlers and the credit step (:mod:`service.credit`) read them.
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
