"""The interleaving design (:class:`service.designs.base.Design`): every experiment whose
meta names no other. Two or more rankers' lists are interleaved into one page, the
clicks credited by the workers into the policy's ``W``; each method delegates to the code
that does it (:mod:`service.interleaving`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from service.clicks import reports as clicks
from service.designs.base import Design
from service.experiments import operations as experiments
from service.placements import operations as placements
from service.placements import traffic as placement_traffic
from service.reports.build import build as build_report
from service.runtime import Runtime
from service.schemas import NewExperiment
from service.search import serve as searching
from service.store import Store
from service.store.outcomes import OutcomeCall, ScriptRun


class InterleavingDesign(Design):
    """Interleaving and a dueling-bandit policy (the module docstring)."""

    name = "interleaving"
    fixed_arms: ClassVar[str | None] = None
    interleaves = True
    confirmable = True
    #: the body of ``POST /experiments``
    schema = NewExperiment
    #: one search: :func:`service.search.serve.serve` itself (no call in between)
    serve = staticmethod(searching.serve)

    def creation(self, rt: Runtime, body: Any, probe: Any) -> Callable[[], str]:
        """Its placement and share checked now (422); the experiment created, then put on
        its placement (or deleted when that fails), when called."""
        spec = body
        traffic = placement_traffic.traffic_of(spec.root)

        def make() -> str:
            if traffic is not None:
                placements.check_join(rt.store, spec.root.placement, "new", traffic)
            exp_id = experiments.create(rt.store, spec,
                                        default_timeout_ms=rt.config.ranker_timeout_ms,
                                        probe=probe, policy=rt.rankers.policy)
            if traffic is not None:
                placement_traffic.join_or_delete(rt, exp_id, spec.root.placement, traffic)
            return exp_id

        return make

    def record_clicks(self, rt: Runtime, imp: Any, positions: list[int],
                      dwell_ms: dict[int, int] | None) -> dict[str, Any]:
        return clicks.add_clicks(rt, imp, positions, dwell_ms)

    def end(self, rt: Runtime, imp: Any) -> dict[str, Any]:
        return clicks.close(rt, imp)

    def outcome_call(self, store: Store, call: OutcomeCall, member: str) -> ScriptRun:
        """``outcome.lua``'s: the event recorded as a pending item, credited by a worker
        (:mod:`service.credit.outcome_events`)."""
        return store.outcomes.outcome_call(call, member)

    def credit_outcome(self, store: Store, exp_id: str) -> None:
        """The experiment due at once in the sweep's index (a worker credits the event)."""
        store.drains.mark_due(exp_id, 0.0)

    def report(self, store: Any, exp_id: str) -> dict[str, Any]:
        return build_report(store, exp_id)


#: the design, as the registry loads it (service.designs.registry.INSTALLED)
DESIGN = InterleavingDesign()

__all__ = ["DESIGN", "InterleavingDesign"]
