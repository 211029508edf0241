"""HTTP rankers backed by the simulated search world (the demo, the compose demo profile,
the metrics tests and the benchmarks).

One small Flask app serves every ranker of an :class:`interleaving.world.World`:
``GET /rankers/<n>?q=TEXT&k=K`` returns ``{"results": [{"id", "title", "score"}]}``, the
top ``k`` documents of world ranker ``n`` for the query whose text is ``TEXT`` (an empty
list for a query the world does not know, as a real engine with no match would; the
service's probe query, ``RANKDUEL_PROBE_QUERY``'s default, is answered as query 0, as a
real engine answers it with some match).
``GET /world`` describes the world (true best ranker, buyers' ranker, NDCG@10 of each
ranker).

Run under gunicorn by the demo::

    gunicorn 'demo.world_rankers:create_ranker_app(seed=1, n_rankers=12)'
"""

from __future__ import annotations

from functools import lru_cache

from flask import Flask, jsonify, request

from service.config import Config


@lru_cache(maxsize=4)
def demo_world(seed: int, n_rankers: int, n_queries: int = 200):
    """The demo's world: ``n_rankers`` rankers, one of them clearly best on clicks, and
    purchases (:meth:`interleaving.world.World.add_purchases`): the clear best ranks
    attractive documents that never sell high (it wins the clicks, loses the purchases),
    the buyers' ranker demotes them (it loses the clicks, wins the purchases)."""
    from interleaving.world import World

    world = World(seed, n_rankers, n_queries, clear_best=True)
    if n_rankers >= 2:
        world.add_purchases()
    return world


def ranker_name(n: int) -> str:
    """Name under which world ranker ``n`` is registered in the demo experiment."""
    return f"r{n:02d}"


def create_ranker_app(seed: int = 1, n_rankers: int = 12, n_queries: int = 200,
                      doc_base: str = "") -> Flask:
    """A WSGI app serving all rankers of ``demo_world(seed, n_rankers, n_queries)``; with
    ``doc_base``, every result has a ``url``, ``{doc_base}/doc/{id}`` (the demo search
    page serves those documents)."""
    world = demo_world(seed, n_rankers, n_queries)
    app = Flask("rankduel-demo-rankers")

    @app.get("/rankers/<int:n>")
    def rank(n: int):
        if not 0 <= n < world.n_rankers:
            return jsonify({"error": f"no ranker {n}"}), 404
        try:
            k = int(request.args.get("k", 10))
        except ValueError:
            return jsonify({"error": "k must be an integer"}), 400
        text = request.args.get("q", "")
        q = world.query_id(text)
        if q is None and text == Config.probe_query:  # the probe at creation: query 0
            q = 0
        if q is None or k < 1:
            return jsonify({"results": []})
        docs = world.ranking(n, q, k)
        return jsonify({"results": [
            {"id": d, "title": f"{world.query_text(q)} — result {d}", "score": round(1.0 / i, 4),
             **({"url": f"{doc_base}/doc/{d}"} if doc_base else {})}
            for i, d in enumerate(docs, start=1)]})

    @app.get("/world")
    def describe():
        nd = world.ndcg_all(10)
        return jsonify({
            "seed": seed, "rankers": world.n_rankers, "queries": world.n_queries,
            "true_best": ranker_name(world.true_best),
            "buyers": None if world.buyers is None else ranker_name(world.buyers),
            "ndcg": {ranker_name(r): round(float(nd[r]), 4) for r in range(world.n_rankers)},
        })

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    return app
