"""Calling the rankers, one module per concern:

* :mod:`service.rankers.client`: the transport — concurrent HTTP fetches, each bounded in
  time, size and concurrency; failures come back as
  :class:`~service.rankers.client.RankerFailure` values;
* :mod:`service.rankers.http_response`: reading a ranker's HTTP answer;
* :mod:`service.rankers.parsing`: a ranker's JSON answer as a result list;
* :mod:`service.rankers.template`: templated rankers, a search engine called in its own
  shape (pure);
* :mod:`service.rankers.allow_list`: where rankers may live (``RANKDUEL_RANKER_ALLOW``);
* :mod:`service.search.ranker_health`: the circuit breaker of a search (quarantine, probes,
  retirement of a ranker that keeps failing);
* :mod:`service.search.degraded`: a ranker answering no (or unreadable) results is never
  a loser: no outcome, and marked ``degraded`` when it keeps doing so;
* :mod:`service.rankers.probe`: the test query at creation, and what its refusal says;
* :mod:`service.rankers.failure_log`: ranker failures in the API's log, rate-limited;
* :mod:`service.rankers.redact`: secrets out of what is said about a ranker.

Limits, so that one ranker cannot hurt anything but its own duels:

* **time**: a ranker's ``timeout_ms`` bounds the whole request (connect, headers, body),
  not each read: a watchdog shuts the socket down at the deadline, so a ranker that
  trickles bytes frees its thread on time;
* **size**: at most ``max_bytes`` of body and ``max_results`` results are read; an id
  longer than ``MAX_DOC_ID_CHARS`` makes the answer invalid;
* **concurrency**: the fetches in flight to one ranker URL are capped (``per_ranker``, half
  the pool by default), whichever thread makes them; a fetch over the cap fails at once
  as ``overloaded`` (counted, but no forfeit and no strike: a burst of traffic is not the
  ranker's fault). With the deadlines, a slow ranker holds at most its cap of pool
  threads for at most its timeout, so the rankers of other experiments always find
  threads.
"""
