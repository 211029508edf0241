"""The toy rankers of the server tests (the ``ranker_server`` fixture of tests/conftest.py):
fixed document orders over HTTP, and rankers that fail in each way a real one can.

``/r/<name>?k=&q=``: ``good``/``bad``/``mid``/``alt`` (and any other name) return fixed
orders of 30 documents; ``slow`` sleeps 1.5 s first; ``broken`` answers 500; ``garbage``
answers non-JSON; ``trickle`` sends its headers, then a byte every 100 ms for 5 s; ``huge``
answers 2 MiB; ``longid`` an id of 300 characters.
"""

from __future__ import annotations

import time


def docs(name: str, k: int) -> list[dict]:
    """The first ``k`` documents of ranker ``name``'s fixed order.

    >>> [d["id"] for d in docs("bad", 3)]
    ['d29', 'd28', 'd27']
    """
    base = [f"d{i:02d}" for i in range(30)]
    order = {
        "good": base,
        "bad": base[::-1],
        "mid": base[10:] + base[:10],
        "alt": base[1:] + base[:1],
    }.get(name, base)
    return [{"id": d, "title": f"doc {d}", "source": name, "url": f"https://docs.example/{d}"}
            for d in order[:k]]


def make_toy_rankers():
    """The Flask app of the toy rankers (serve it with ``demo.wsgi_server.ThreadedServer``)."""
    from flask import Flask, jsonify, request

    app = Flask("toy-rankers")

    @app.get("/r/<name>")
    def rank(name: str):
        k = int(request.args.get("k", 10))
        if name == "slow":
            time.sleep(1.5)
        if name == "broken":
            return jsonify({"error": "boom"}), 500
        if name == "garbage":
            return "<html>not json</html>", 200
        if name == "trickle":  # headers at once, then one byte every 100 ms for 5 s
            def drip():
                for _ in range(50):
                    time.sleep(0.1)
                    yield b" "
            return app.response_class(drip(), mimetype="application/json")
        if name == "huge":  # a 2 MiB body
            return jsonify({"results": [{"id": f"d{i:02d}", "pad": "x" * 70_000}
                                        for i in range(30)]})
        if name == "longid":
            return jsonify({"results": [{"id": "x" * 300}]})
        return jsonify({"results": docs(name, k), "q": request.args.get("q")})

    return app
