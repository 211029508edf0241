"""gunicorn settings for the rankduel API:

    gunicorn -c deploy/gunicorn.conf.py 'service.app:create_app()'

The same settings ``rankduel serve`` uses, read from the environment (``RANKDUEL_BIND``,
``RANKDUEL_WORKERS``, ``RANKDUEL_THREADS``, ``RANKDUEL_ACCESS_LOG``), with the same access
log format. ``PROMETHEUS_MULTIPROC_DIR`` (created and emptied here; a temp folder when
unset, removed when the master exits) lets ``/metrics`` aggregate over the workers.
"""

import os
import shutil

from service.config import load_config
from service.multiproc import child_exit, prepare_multiproc_dir  # noqa: F401 - hook
from service.serving import ACCESS_LOG_FORMAT, GUNICORN_OPTIONS, access_log

_config = load_config()
# metrics folder: created (a temp dir when unset) and emptied of a previous run's files
# before any worker imports the metrics
_created = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
_prom_dir = prepare_multiproc_dir()

bind = os.environ.get("RANKDUEL_BIND", "0.0.0.0:8000")
workers = _config.workers
threads = _config.threads
# gthread answering an over-long request line (414) in JSON, and gunicorn's longest request
# line: 1,000 characters of q such as "é" take 6 kB percent-encoded (service/serving.py)
worker_class = GUNICORN_OPTIONS["worker_class"]
limit_request_line = GUNICORN_OPTIONS["limit_request_line"]
timeout = 30
graceful_timeout = 10
keepalive = 5
proc_name = "rankduel-api"
accesslog = access_log(_config)
access_log_format = ACCESS_LOG_FORMAT
control_socket_disable = True  # gunicorn >= 27: no ~/.gunicorn/gunicorn.ctl


def on_starting(server) -> None:
    """Refuse an evicting Redis, warn when its persistence is off (cli/startup.py)."""
    from cli.startup import check_redis

    check_redis(_config)


def on_exit(server) -> None:
    """Leave nothing behind: the metrics folder this file created."""
    if _created:
        shutil.rmtree(_prom_dir, ignore_errors=True)
