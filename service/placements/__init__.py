"""Placements (search boxes): a control ranker and the experiments that take a share of
its traffic. The rules (shares, sticky buckets, ramps, guardrail thresholds, page
tokens) are pure, in :mod:`rollout`; this folder is their I/O shell:

* :mod:`service.placements.operations`: the operator's actions on a placement, and the
  request path's cached view of it;
* :mod:`service.placements.search`: serving a placement's search (an experiment's or
  the control's answer);
* :mod:`service.placements.traffic`: an experiment's share and lifecycle on its
  placement, with the one :func:`~service.placements.traffic.pause` used by operators,
  ramps and guardrails;
* :mod:`service.placements.guardrails`: what a placement search counts and the check
  that pauses a harmful experiment;
* :mod:`service.placements.control_pages`: the control's page tokens and their clicks;
* :mod:`service.placements.collector`: placements as Prometheus metrics.

Stored by :mod:`service.store.placements`; served by :mod:`service.api.placements`.
"""
