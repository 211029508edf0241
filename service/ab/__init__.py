"""The A/B design: an experiment of one control against treatments, each user sticky in
one arm, measured per user (``"design": "ab"``). Its service code lives here, its Lua
beside it; its pure statistics are :mod:`rollout.ab` (and the split's check,
:mod:`rollout.srm`):

* :mod:`service.ab.operations`: creation (``POST /experiments`` with ``"design": "ab"``)
  and the confirmation of an interleaving verdict (``POST /experiments/ID/confirm``);
* :mod:`service.ab.search`: a search, one arm's list whole;
* :mod:`service.ab.store` (the store's part ``store.ab``): per-user counts and moments,
  the confirmed pairs; scripts ``ab_search.lua``, ``ab_click.lua``, ``ab_outcome.lua``
  and the moments they share, ``ab_moments.lua``;
* :mod:`service.ab.report`: the report, the split's flag, ``GET /agreements``;
* :mod:`service.ab.schemas`: its request and response bodies.
"""
