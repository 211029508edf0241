"""The live service, the I/O shell of rankduel around the pure packages, one folder per
concept: :mod:`service.api` (HTTP), :mod:`service.rankers` (calling rankers),
:mod:`service.credit` (how a click reaches ``W``), :mod:`service.store` (Redis),
:mod:`service.reports`; the request path's steps (:mod:`service.search`,
:mod:`service.clicks`, :mod:`service.paging`, :mod:`service.controller`), the operators'
(:mod:`service.experiments`, :mod:`service.campaigns`), configuration and metrics at the
top. docs/architecture.md draws the layout. The command line (``cli``), the demo tooling
(``demo``) and the workers sit on top of it; ``tests/unit/test_architecture.py`` checks
that it imports none of them."""
