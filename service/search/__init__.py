"""A search, on the request path: the comparison chosen, the rankers fetched, their lists
interleaved, the impression stored.

* :mod:`service.search.serve`: ``GET /search?experiment=…``: choose (the experiment's
  controller, :mod:`service.experiments.controller`), fetch, interleave, store, answer;
* :mod:`service.search.ranker_health`: the rankers' circuit breaker of one search
  (quarantine, probes, forfeits, retirement of a ranker that keeps failing);
* :mod:`service.search.paging`: the next page of an impression.

A placement's search (``?placement=…``) picks its experiment or its control first
(:mod:`service.placements.search`) and then calls :func:`service.search.serve.search`.
"""
