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
The layers are declared once, in :data:`LAYERS`: ``tests/unit/test_architecture.py``
checks every import against it, and docs/architecture.md's drawing is rendered from it
(``python -m cli.docs``). The command line (``cli``), the demo tooling (``demo``) and
the workers sit on top of it."""

#: The layers of ``service/``, bottom to top: each a folder (``store/``) or a module at the
#: top of ``service/`` (``config``); each imports only from the layers below its own, never
#: from its own layer or above (``tests/unit/test_architecture.py``).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("designs/",),
    ("store/", "events/", "config", "errors", "metrics", "id_limits", "serving"),
    ("access/", "rankers/", "segments/", "transaction", "queue", "tokens", "multiproc"),
    ("outcomes/", "webhooks/", "campaigns/"),
    ("credit/", "schemas/"),
    ("experiments/",),
    ("reports/", "runtime"),
    ("clicks/",),
    ("search/", "ubi/"),
    ("placements/",),
    ("ab/", "interleaving/"),
    ("api/",),
    ("app",),
)

#: what docs/architecture.md's drawing says beside a layer (keyed by its first name; the two
#: long bottom rows say nothing: rankers/ calls rankers, store/ is Redis)
LAYER_NOTES: dict[str, str] = {
    "designs/": "the designs' interface and registry (it imports none)",
    "app": "the factory: the only importer of api/",
    "api/": "HTTP",
    "ab/": "the designs: A/B's code; interleaving's object",
    "placements/": "a placement's search sits on an experiment's search",
    "search/": "UBI events and next pages go through clicks/",
    "clicks/": "the front end's click reports",
    "reports/": "reports read experiments/ (metric_collector.py)",
    "experiments/": "operators' changes",
    "credit/": "how a click reaches W; every body as a model",
    "outcomes/": "told by credit/ and experiments/",
}

