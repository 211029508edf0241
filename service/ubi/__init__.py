"""OpenSearch User Behavior Insights (UBI) in: ``POST /ubi/events`` takes the events a
front end instrumented with ``ubi.js`` sends (:mod:`service.ubi.receive`). A ``click``
on a rankduel impression is recorded by :func:`service.clicks.reports.record_clicks`,
exactly as ``POST /clicks`` records one; any other event of an impression is stored in
the experiment's event log (type ``ubi``), not credited. UBI out, the log as UBI
documents, is :mod:`service.events.ubi`.
"""
