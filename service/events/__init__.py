"""The event log of an experiment (impressions, clicks, outcomes), stored by
:mod:`service.store.events` and paged by ``GET /experiments/ID/events``.
"""
