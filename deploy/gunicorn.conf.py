"""gunicorn settings for the rankduel API:

    gunicorn -c deploy/gunicorn.conf.py 'service.app:create_app()'

The same settings ``rankduel serve`` uses, read from the environment (``RANKDUEL_BIND``,
``RANKDUEL_WORKERS``, ``RANKDUEL_THREADS``). Set ``PROMETHEUS_MULTIPROC_DIR`` to an empty
folder so ``/metrics`` aggregates over the workers.
"""

import os

from service.commands.serve import child_exit  # noqa: F401 - gunicorn hook
from service.config import load_config

_config = load_config()

bind = os.environ.get("RANKDUEL_BIND", "0.0.0.0:8000")
workers = _config.workers
threads = _config.threads
worker_class = "gthread"
timeout = 30
graceful_timeout = 10
keepalive = 5
proc_name = "rankduel-api"
accesslog = None
