"""What the front end reports on an impression after the search: clicks
(``POST /clicks``, the click redirect ``/r``) and its end (``POST /impressions/ID/end``),
in :mod:`service.clicks.reports`. They only touch the impression
(:mod:`service.store.impressions`); a worker credits it once it closes
(:mod:`service.credit`). A control page's click goes to
:mod:`service.placements.control_pages` instead.
"""
