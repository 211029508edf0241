"""The A/B design (:class:`service.designs.base.Design`, ``"design": "ab"``): one control
and its treatments on a placement, each user sticky in one arm and served that arm's
list whole, measured per user; the object the registry resolves for an A/B experiment,
over this folder's code (:mod:`service.ab`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar

from service.ab import operations, report, search
from service.ab.schemas import NewABExperiment
from service.designs.base import Design
from service.runtime import Runtime
from service.store import ImpressionMissing, Store
from service.store.outcomes import OutcomeCall, ScriptRun
from service.store.snapshot import Snapshot
from service.tokens import user_hash


class ABDesign(Design):
    """An A/B test (the module docstring)."""

    name = "ab"
    fixed_arms: ClassVar[str | None] = ("is an A/B test: its arms are fixed at creation "
                                        "(create another A/B test)")
    interleaves = False
    confirmable = False
    confirms = True
    schema = NewABExperiment

    def creation(self, rt: Runtime, body: Any, probe: Any) -> Callable[[], str]:
        """Everything but the body's form is checked when called
        (:func:`service.ab.operations.create_from_body`)."""
        return partial(operations.create_from_body, rt, body, probe)

    def serve(self, rt: Runtime, exp_id: str, choice: Any, q: str, k: int, user: str | None,
              timing: Any = None, calls: list[Any] | None = None,
              segments: dict[str, str] | None = None) -> dict[str, Any]:
        """One arm's list, whole (:mod:`service.ab.search`); no segments are kept."""
        return search.serve(rt, exp_id, choice, q, k, user, timing, calls,
                            user_hash(rt.secret, exp_id, user))

    def record_clicks(self, rt: Runtime, imp: Any, positions: list[int],
                      dwell_ms: dict[int, int] | None) -> dict[str, Any]:
        """The search counted clicked, once (:mod:`service.ab.store`: exactly once)."""
        if rt.store.ab.ab_click(imp.exp, imp.id) < 0:
            raise ImpressionMissing(f"no impression {imp.id!r} (unknown or expired)")
        return {"impression_id": imp.id, "accepted": len(positions), "duplicates": 0}

    def end(self, rt: Runtime, imp: Any) -> dict[str, Any]:
        """Closed; nothing to credit, its counts are kept already."""
        first = rt.store.ab.ab_end(imp.exp, imp.id)
        return {"impression_id": imp.id, "status": "closed", "already_closed": not first}

    def outcome_call(self, store: Store, call: OutcomeCall, member: str) -> ScriptRun:
        """``ab_outcome.lua``'s, which counts the event per user at once
        (:meth:`service.ab.store.ABStore.outcome_call`); no pending item."""
        return store.ab.outcome_call(call)

    def credit_outcome(self, store: Store, exp_id: str) -> None:
        """Nothing: the script counted the event, no worker credits an A/B test."""

    def report(self, store: Store, exp_id: str) -> dict[str, Any]:
        return report.build(store, exp_id)

    def split_flag(self, store: Store, snap: Snapshot) -> str | None:
        """Its arms' users against their equal shares (:func:`service.ab.report.users_flag`)."""
        return report.users_flag(store, snap)

    def agreements(self, store: Store) -> dict[str, Any]:
        return report.agreements(store)

    def pair_speedup(self, store: Store, exp_id: str) -> dict[str, Any] | None:
        return report.pair_speedup(store, exp_id)


#: the design, as the registry loads it (service.designs.registry.INSTALLED)
DESIGN = ABDesign()

__all__ = ["DESIGN", "ABDesign"]
