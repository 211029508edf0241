"""A/B tests on a placement, the pure statistics: per-user metrics and their mergeable
moments (:mod:`rollout.ab.moments`), the anytime-valid confidence sequence
(:mod:`rollout.ab.sequence`), each treatment against the control
(:mod:`rollout.ab.compare`), the report with its verdict and the agreement of confirmed
interleaving verdicts (:mod:`rollout.ab.report`) and the offline runner on the simulated
world (:mod:`rollout.ab.simulation`). The split's own check is :mod:`rollout.srm`.

Like the rest of ``rollout``, no I/O: the service keeps the counters and calls these.
"""

from rollout.ab.compare import MIN_USERS, Comparison, analyse, certified_best, compare
from rollout.ab.moments import METRICS, Metric, Moments, UserCounts, increments
from rollout.ab.report import ab_report, agreement_rate, agrees, metric_verdicts
from rollout.ab.sequence import (
    DEFAULT_TARGET_USERS,
    difference_margin,
    lift_margin,
    margin,
    rho_for,
    users_to_decide,
)

__all__ = ["DEFAULT_TARGET_USERS", "METRICS", "MIN_USERS", "Comparison", "Metric", "Moments",
           "UserCounts", "ab_report", "agreement_rate", "agrees", "analyse", "certified_best",
           "compare", "difference_margin", "increments", "lift_margin", "margin",
           "metric_verdicts", "rho_for", "users_to_decide"]
