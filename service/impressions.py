"""The front end's three operations: serve a search, record clicks, end an impression.

``search`` asks the controller for a comparison, fetches the chosen rankers concurrently,
interleaves their lists with the experiment's method, stores the impression (with the
interleaving record the credit step needs) and returns the page with a click token.

* A pair ``(a, a)``, a paused or stopped experiment, or a comparison where all but one
  ranker failed: one list is served as is and **no duel** is recorded (the impression is
  still stored so its clicks are accepted and validated).
* Every chosen ranker failed: :class:`~service.errors.BadGateway` (502).

Clicks and ends only touch the impression; crediting happens in a worker
(:mod:`workers.tasks`) once the impression closes.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from service import metrics
from service.config import Config
from service.controller import Controller
from service.errors import BadGateway, Forbidden, NotFound, Unprocessable
from service.rankers import RankerClient, RankerFailure
from service.store import Store
from service.tokens import issue_token, verify_token


@dataclass
class Runtime:
    """Everything a request handler needs, built once per process by ``create_app``."""

    config: Config
    store: Store
    controller: Controller
    rankers: RankerClient
    celery: Any  # celery.Celery; typed loosely to keep Celery out of type imports

    @property
    def secret(self) -> bytes:
        return self.config.secret_key.encode()


def _interleaving():
    import interleaving  # deferred: the package is large and only the front end needs it

    return interleaving


def _interleave_rng(exp_id: str, q: str, user: str | None, arms: tuple[int, ...],
                    seed: list[int]) -> np.random.Generator:
    """Seed from (user, query) when the user is known, so a repeated view of the same
    comparison shows the same list; from (experiment seed, t) otherwise."""
    if user:
        salt = f"{exp_id}:{','.join(map(str, arms))}"
        return np.random.default_rng(_interleaving().seed_for(user, q, salt=salt))
    return np.random.default_rng(seed)


def search(rt: Runtime, exp_id: str, q: str, k: int, user: str | None) -> dict[str, Any]:
    """Serve one search of experiment ``exp_id``; see the module docstring."""
    imp_id = secrets.token_hex(12)
    choice = rt.controller.choose(exp_id)
    seed = [choice.snapshot.meta["seed"], choice.t, 1]
    method = choice.snapshot.meta["interleaving"]
    lists = rt.rankers.fetch_all(list(choice.rankers), q, k, experiment=exp_id)
    ok = [(arm, r, res) for arm, r, res in zip(choice.arms, choice.rankers, lists, strict=True)
          if not isinstance(res, RankerFailure)]
    if not ok:
        reasons = "; ".join(f"{r['name']}: {res.detail or res.reason}"
                            for r, res in zip(choice.rankers, lists, strict=True))
        raise BadGateway(f"every ranker failed ({reasons})")
    fallback = len(ok) < len(choice.arms)
    if fallback:
        metrics.FALLBACKS.labels(exp_id).inc()
    by_id: dict[str, dict[str, Any]] = {}
    for _, _, res in ok:
        for item in res:
            by_id.setdefault(str(item["id"]), item)
    if len(ok) >= 2:
        # participants in arm order, so the pair (j, i) interleaves exactly like (i, j)
        # and a repeated (user, query) view of the same comparison shows the same list
        ok.sort(key=lambda x: x[0])
        arms = tuple(arm for arm, _, _ in ok)
        rng = _interleave_rng(exp_id, q, user, arms, seed)
        rankings = [[str(item["id"]) for item in res] for _, _, res in ok]
        shown, record = _interleaving().interleave(method, rankings, k, rng)
        duel, kind = True, "duel"
    else:
        arms = (ok[0][0],)
        shown = [str(item["id"]) for item in ok[0][2][:k]]
        record, duel = None, False
        kind = "fallback" if fallback else "single"
    now = time.time()
    expires = int(now + rt.config.token_ttl_s)
    counters = {"impressions": 1, kind: 1}
    if fallback:  # also a multileaved comparison that lost some of its rankers
        counters["fallback"] = 1
    rt.store.save_impression(
        imp_id, exp_id=exp_id, arms=list(arms), shown=shown, record=record, duel=duel,
        token_expires=expires, ttl_s=rt.config.impression_ttl_s,
        inactivity_s=rt.config.inactivity_s, counters=counters,
    )
    metrics.IMPRESSIONS.labels(exp_id, kind).inc()
    results = []
    for rank, doc in enumerate(shown, start=1):
        item = dict(by_id[doc])
        item["rank"] = rank
        results.append(item)
    names = {r["arm"]: r["name"] for r in choice.rankers}
    return {
        "impression_id": imp_id,
        "token": issue_token(rt.secret, imp_id, exp_id, expires),
        "experiment": exp_id,
        "rankers": [names[a] for a in arms],
        "results": results,
    }


def _load_verified(rt: Runtime, imp_id: str, token: object) -> dict[str, Any]:
    imp = rt.store.impression(imp_id)
    if imp is None:
        raise NotFound(f"no impression {imp_id!r} (unknown or expired)")
    try:
        verify_token(rt.secret, token, imp_id, imp["exp"], now=time.time())
    except Forbidden:
        metrics.TOKENS_REFUSED.inc()
        raise
    return imp


def record_clicks(rt: Runtime, imp_id: str, token: object,
                  clicks: list[tuple[str, int]]) -> dict[str, Any]:
    """Validate clicks against what the impression showed and record them (once each)."""
    imp = _load_verified(rt, imp_id, token)
    shown = imp["shown"]
    positions = []
    for doc, rank in clicks:
        if doc not in shown:
            raise Unprocessable(f"document {doc!r} was not shown in impression {imp_id!r}")
        if not 1 <= rank <= len(shown) or shown[rank - 1] != doc:
            raise Unprocessable(
                f"document {doc!r} was shown at rank {shown.index(doc) + 1}, not {rank}")
        positions.append(rank - 1)
    added = rt.store.add_clicks(imp_id, imp["exp"], positions,
                                inactivity_s=rt.config.inactivity_s,
                                ttl_s=rt.config.impression_ttl_s)
    return {"impression_id": imp_id, "accepted": added, "duplicates": len(positions) - added}


def end_impression(rt: Runtime, imp_id: str, token: object | None) -> dict[str, Any]:
    """Close the impression and make sure a worker will credit it.

    The token is checked when given. Rather than one task per impression, the worker
    credits each experiment's closed impressions in batches (``rankduel.drain``): a drain
    task is queued only when none is queued or running for the experiment (a flag in
    Redis, taken atomically with the close).
    """
    if token is not None:
        imp = _load_verified(rt, imp_id, token)
    else:
        imp = rt.store.impression(imp_id)
        if imp is None:
            raise NotFound(f"no impression {imp_id!r} (unknown or expired)")
    first, drain = rt.store.end_impression(imp_id, imp["exp"],
                                           drain_ttl_s=rt.config.credit_retry_s)
    if drain:
        rt.celery.send_task("rankduel.drain", args=[imp["exp"]])
    return {"impression_id": imp_id, "status": "closed", "already_closed": not first}
