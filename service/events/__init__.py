"""The event log, its export and its replay: the file side of an experiment's history.

The log itself (a Redis Stream per experiment, appended by the scripts and the transaction
that write each impression, click report and credit) is stored and paged by
:mod:`service.store.event_log`, which also defines each event's JSON; ``GET
/experiments/ID/events`` serves it. Here, without Redis or HTTP:

* :mod:`service.events.export`: an export file's formats, JSON lines (one event a line)
  or parquet (columns ``cursor``, ``type``, ``id``, ``event``), written page by page;
* :mod:`service.events.replay`: an export read back (either format) and ``W`` recomputed
  from its outcome events, total and per segment, by the rule the credit step applies
  (:mod:`bandits.outcomes`): on a complete export it equals the live ``W`` and
  ``segment_W`` exactly.

``rankduel export`` and ``rankduel replay`` (:mod:`cli.commands.export`,
:mod:`cli.commands.replay`) page the API, parse their arguments and print; the formats and
the arithmetic are here so that a test or a benchmark uses the same code.
"""
