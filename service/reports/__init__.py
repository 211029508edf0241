"""What an experiment has decided, for people: the report of ``GET /experiments/ID/report``
(:mod:`service.reports.build`) and its response schema (:mod:`service.reports.schema`).
"""
