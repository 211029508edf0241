"""Webhooks: telling the people who own an experiment what happened to it.

An event is recorded **where it happens**, into the experiment's outbox (a Redis stream
hash-tagged with the experiment), by the same script or transaction as its cause
(:mod:`service.webhooks.outbox`): a guardrail's trip (:mod:`service.placements.
guardrails`), the pause (:func:`service.experiments.operations.set_lifecycle`, through
the one :func:`service.placements.traffic.pause`), a degraded ranker
(:mod:`service.search.degraded`), a ranker shown worse and a certified champion (the
hold's decision, :mod:`service.webhooks.verdicts`), a ramp step (the workers' sweep,
:mod:`service.webhooks.sweep`). Storage never calls up into this package: the code
that causes an event calls it.

The workers deliver (:mod:`service.webhooks.delivery`): signed
(:mod:`service.webhooks.signing`), at least once, in order per experiment and hook,
retried with exponential backoff, a hook disabled after failures in a row. The operator
manages hooks through :mod:`service.webhooks.operations` (``/webhooks``); the events
and their words are :mod:`service.webhooks.payloads`. docs/webhooks.md tells it for users.
"""
