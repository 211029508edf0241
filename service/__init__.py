"""The live service, the I/O shell of rankduel around the pure packages, one folder per
concept, each named as it is at every layer (``rollout/`` pure, ``service/X/`` the shell,
``service/store/X.py``, ``service/api/X.py``):

* the request path: :mod:`service.search` (choose, fetch, interleave, store),
  :mod:`service.clicks` (the front end's reports), :mod:`service.placements` (a search
  box's control, shares, guardrails);
* the operators': :mod:`service.experiments`, :mod:`service.placements`,
  :mod:`service.campaigns`, :mod:`service.reports`, :mod:`service.segments`,
  :mod:`service.events`;
* below them: :mod:`service.credit` (how a click reaches ``W``), :mod:`service.rankers`
  (calling rankers), :mod:`service.schemas` (every body, as pydantic models),
  :mod:`service.store` (Redis);
* above them: :mod:`service.api` (HTTP; only :mod:`service.app` imports it).

Configuration, errors, tokens, metrics and the wiring are the few modules at the top.
docs/architecture.md draws the layout; ``tests/unit/test_architecture.py`` checks that
nothing imports up the layers and that no two folders import each other. The command
line (``cli``), the demo tooling (``demo``) and the workers sit on top of it."""
