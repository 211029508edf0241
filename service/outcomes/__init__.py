"""Outcomes beyond the click: the metrics an experiment declares (:mod:`.metrics`), what a
front end or a back end reports with ``POST /outcomes`` and how it is attributed to an
impression (:mod:`.attribution`), and the in-process view of which running experiments
declare which action (:mod:`.actions`). Crediting an attributed event to each metric's
``W`` happens in the workers, by the protocol of :mod:`service.credit`.
"""
