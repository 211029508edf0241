"""A/B experiments on a placement: ``POST /experiments`` with ``"design": "ab"``,
``POST /experiments/ID/confirm``, and the answers of an A/B report and of
``GET /agreements`` (:mod:`service.ab.operations`, :mod:`service.ab.report`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from service.schemas.base import MAX_RANKERS, PROBE, Closed, Name, Out
from service.schemas.experiments import TRAFFIC_DOC, RankerIn, Traffic
from service.schemas.params import Metrics
from service.schemas.placements import Guardrails, PlacementName

DELTA_DOC = ("δ: the chance, over the whole run, that any interval the report states ever "
             "misses its true difference (split over the treatments)")


class NewABExperiment(Closed):
    """``POST /experiments`` with ``"design": "ab"``: an A/B test on a placement. Its arms
    are the placement's control and the ``rankers`` (the treatments); a user in the
    experiment's share sees one arm's list whole, the arm a sticky hash of the user over
    the arms in equal shares."""

    design: Literal["ab"]
    name: Name
    rankers: Annotated[list[RankerIn], Field(min_length=1, max_length=MAX_RANKERS - 1)] = Field(
        description="the treatments (the placement's control is the control arm)")
    placement: PlacementName = Field(description="the placement whose control is the control")
    traffic: Traffic = Field(description=TRAFFIC_DOC + " (every arm gets an equal part)")
    guardrails: Guardrails | None = Field(  # type: ignore[valid-type]
        None, description="guardrail thresholds it changes (docs/operations/rollout.md)")
    error_rate: Annotated[float, Field(gt=0, le=0.5)] = Field(0.05, description=DELTA_DOC)
    probe: bool = Field(True, description=PROBE)
    metrics: Metrics | None = Field(
        None, description="optional: conversion metrics measured per user besides ctr, "
        "e.g. [{\"name\": \"revenue\", \"action\": \"purchase\", \"value\": \"sum\", "
        "\"window_s\": 86400}] (docs/ab-tests.md, docs/conversions.md); the verdict stays "
        "on ctr")


class Confirm(Closed):
    """``POST /experiments/ID/confirm``: the A/B test of a certified winner against the
    placement's control (absent fields: the interleaving experiment's share, no
    guardrail change, its δ)."""

    name: Name | None = Field(None, description="default: 'confirm <name>'")
    traffic: Traffic | None = Field(None, description=TRAFFIC_DOC + " (default: the share "
                                    "the interleaving experiment had)")
    guardrails: Guardrails | None = Field(None)  # type: ignore[valid-type]
    error_rate: Annotated[float, Field(gt=0, le=0.5)] | None = Field(None, description=DELTA_DOC)


class Agreement(Out):
    """One confirmed pair: an interleaving verdict and the A/B test of its winner."""

    interleaving: str = Field(description="the interleaving experiment's id")
    ab: str = Field(description="the A/B experiment's id")
    placement: str
    winner: str = Field(description="the ranker interleaving certified")
    control: str = Field(description="the placement's control ranker")
    preference: float | None = Field(
        description="the share of duels the winner won against the control (interleaving's "
                    "preference; null: they never met)")
    interleaving_verdict: str
    ab_verdict: str
    decided: bool = Field(description="whether the A/B test has decided")
    lift: float | None = Field(description="the winner's relative CTR lift over the control")
    lift_interval: list[float | None] | None
    difference: float | None
    interval: list[float | None] | None
    agree: bool | None = Field(description="same direction (null: the A/B has not decided)")
    trusted: bool = Field(description="false while the A/B's split is flagged (SRM)")
    sample_sizes: dict[str, Any] | None = Field(
        description="what each design needed to decide: interleaving's searches (up "
                    "to the one that certified its champion) and comparisons then (users "
                    "null: it counts searches), the A/B test's users and searches when it "
                    "first decided "
                    "(null until then), and whether both used the same δ; null for a pair "
                    "confirmed before samples were kept")
    speedup: float | None = Field(
        description="the A/B test's searches over interleaving's: how many times fewer "
                    "searches interleaving needed (null until the A/B test decides in the "
                    "same direction)")
    speedup_statement: str | None = Field(
        description="the same in words: 'interleaving decided in 1,120 searches; its A/B "
                    "confirmation needed 38,400 (9,100 users): 34×'")


class Agreements(Out):
    """``GET /agreements``: every confirmed pair and the running agreement rate."""

    pairs: list[Agreement]
    rate: dict[str, Any] = Field(
        description="decided pairs, those that agree, the rate and its Wilson 95 % interval")
    speedup: dict[str, Any] = Field(
        description="the median speed-up over the pairs that have one, and how many "
                    "(the metric rankduel_interleaving_speedup_median)")


__all__ = ["DELTA_DOC", "Agreement", "Agreements", "Confirm", "NewABExperiment"]
