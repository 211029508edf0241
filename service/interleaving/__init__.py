"""The interleaving design (every experiment whose meta names no other): the object that
answers for it, :mod:`service.interleaving.design`. Its code is where rankduel grew it
around the pure :mod:`interleaving` and :mod:`bandits` packages: the search
(:mod:`service.search.serve`, :mod:`service.search.paging`), the clicks
(:mod:`service.clicks.reports`), the credit (:mod:`service.credit`), the report
(:mod:`service.reports.build`); the design object delegates to it."""
