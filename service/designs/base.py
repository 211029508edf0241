"""The interface of an experiment design: its capabilities, declared once as class
attributes, and what it answers, each operation in one method (the callers:
:mod:`service.api.operator`, :mod:`service.search.serve`, :mod:`service.search.paging`,
:mod:`service.clicks.reports`, :mod:`service.outcomes.attribution`,
:mod:`service.experiments.operations`, :mod:`service.reports`, the workers' sweep).

Types are written loosely (``Any``) where the precise one sits in a layer above this one
(the runtime, the controller's choice, a parsed body): the folder imports nothing of
``service/`` but what is below it (:data:`service.LAYERS`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar


class Design(ABC):
    """One experiment design (``meta["design"]``; none stored: interleaving)."""

    #: its name, as stored in an experiment's meta and an impression's record
    name: ClassVar[str]
    #: why its arms are fixed at creation, the end of the 409 refusing a new ranker (A/B:
    #: a new arm would move users between arms); None: a ranker may be added mid-run
    fixed_arms: ClassVar[str | None]
    #: its pages are interleaved, so the report's split holds team draft's coin
    #: (first pick, positions: :mod:`service.reports.splits`)
    interleaves: ClassVar[bool]
    #: its verdict may be confirmed by an A/B test of its winner (``POST .../confirm``)
    confirmable: ClassVar[bool]
    #: its experiments confirm another's verdict and keep the confirmed pairs
    #: (``GET /agreements``; :func:`service.designs.registry.confirmer`)
    confirms: ClassVar[bool] = False
    #: the model of its ``POST /experiments`` body (:mod:`service.schemas`)
    schema: ClassVar[type]

    @abstractmethod
    def creation(self, rt: Any, body: Any, probe: Any) -> Callable[[], str]:
        """Validate a ``POST /experiments`` body now (422 naming what is wrong) and return
        what creates the experiment (its id) when called: once, or not at all for a
        replayed idempotent request."""

    @abstractmethod
    def serve(self, rt: Any, exp_id: str, choice: Any, q: str, k: int, user: str | None,
              timing: Any = None, calls: list[Any] | None = None,
              segments: dict[str, str] | None = None) -> dict[str, Any]:
        """One search of experiment ``exp_id``, the controller's ``choice`` made (its
        snapshot, step and rankers): the page, with an impression id and a click token
        when the search is recorded."""

    @abstractmethod
    def record_clicks(self, rt: Any, imp: Any, positions: list[int],
                      dwell_ms: dict[int, int] | None) -> dict[str, Any]:
        """Record the checked clicks (0-based ``positions``) of impression ``imp`` (the
        answer of ``POST /clicks``)."""

    @abstractmethod
    def end(self, rt: Any, imp: Any) -> dict[str, Any]:
        """Close impression ``imp`` (the answer of ``POST /impressions/ID/end``): an
        interleaving impression's credit starts (a drain), an A/B search's counts are kept
        already."""

    @abstractmethod
    def outcome_call(self, store: Any, call: Any, member: str) -> Any:
        """The script call that attributes and records outcome event ``call`` (a
        :class:`~service.store.outcomes.OutcomeCall`) for one of its experiments, built
        by its part of the store (a :class:`~service.store.outcomes.ScriptRun`): ``POST
        /outcomes`` sends every candidate experiment's in one round trip
        (:meth:`~service.store.outcomes.OutcomeStore.record_outcomes`). ``member``: the
        event's name as a pending item, for a design whose workers credit it later."""

    @abstractmethod
    def credit_outcome(self, store: Any, exp_id: str) -> None:
        """What follows an outcome event its script attributed (``ok``) for experiment
        ``exp_id``: its credit started (interleaving: the experiment due in the sweep's
        index, for a worker), or nothing (A/B: the script counted it)."""

    @abstractmethod
    def report(self, store: Any, exp_id: str) -> dict[str, Any]:
        """What the experiment has decided (``GET /experiments/ID/report``)."""

    def split_flag(self, store: Any, snap: Any) -> str | None:
        """What of the design's own split is flagged now, in words (None: nothing): the
        placement's split and team draft's coin are checked for every design
        (:mod:`service.reports.splits`)."""
        return None

    def agreements(self, store: Any) -> dict[str, Any] | None:
        """The confirmed pairs it keeps, with both verdicts (``GET /agreements``); None:
        it confirms nothing."""
        return None

    def pair_speedup(self, store: Any, exp_id: str) -> dict[str, Any] | None:
        """The speed-up of the confirmed pair whose confirming experiment is ``exp_id``
        (for the confirmed experiment's report); None: no such pair."""
        return None
