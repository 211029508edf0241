"""Production rollout of experiments on a placement (a search box), pure.

* :mod:`rollout.placements`: a placement's control ranker and its experiments' traffic,
  validated;
* :mod:`rollout.ramps`: ``traffic`` as a share or a schedule of shares;
* :mod:`rollout.hashing`: a user's sticky bucket (GrowthBook's FNV-1a hash);
* :mod:`rollout.allocation`: the buckets each experiment holds, moving the fewest users
  when shares change;
* :mod:`rollout.assignment`: the experiment of a search (``None``: control);
* :mod:`rollout.guardrails`: the rules that pause a harmful experiment.

Like ``bandits``, ``interleaving`` and ``judging``, this package does no I/O and imports
neither Flask, Redis nor Celery: the service keeps the state and calls these functions.
"""

from rollout.allocation import allocate, check_ranges
from rollout.assignment import assign, experiment_of
from rollout.guardrails import PARAMS as GUARDRAIL_PARAMS
from rollout.guardrails import evaluate as evaluate_guardrails
from rollout.hashing import BUCKETS, bucket
from rollout.placements import ExperimentTraffic, Placement
from rollout.ramps import parse_traffic, share_at

__all__ = ["BUCKETS", "GUARDRAIL_PARAMS", "ExperimentTraffic", "Placement", "allocate",
           "assign", "bucket", "check_ranges", "evaluate_guardrails", "experiment_of",
           "parse_traffic", "share_at"]
