"""Experiments: what an operator creates and steers, and the policy each API process
serves them from.

* :mod:`service.experiments.operations`: create, read, add and retire rankers, the
  lifecycle (``running ⇄ paused → stopped``);
* :mod:`service.experiments.ranker_versions`: a ranker's definition changed as a new
  version (a new arm), never in place;
* :mod:`service.experiments.error_rates`: the experiment's ``error_rate`` δ;
* :mod:`service.experiments.idempotency`: ``Idempotency-Key`` on creation;
* :mod:`service.experiments.controller`: the request path's cache of each experiment's
  policy: which rankers meet on a search;
* :mod:`service.experiments.collector`: experiments as Prometheus metrics, read at
  scrape time.

Stored by :mod:`service.store.experiments`; served over HTTP by
:mod:`service.api.operator`.
"""
