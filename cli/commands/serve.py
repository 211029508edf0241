"""``rankduel serve``: the HTTP API under gunicorn (threaded workers).

Settings come from the configuration (``RANKDUEL_BIND``, ``RANKDUEL_WORKERS``,
``RANKDUEL_THREADS``, ...) and can be overridden by flags. Refuses to start without
``RANKDUEL_ADMIN_TOKEN`` and ``RANKDUEL_SECRET_KEY``. For a deployment driven by a
gunicorn config file, ``deploy/gunicorn.conf.py`` does the same:
``gunicorn -c deploy/gunicorn.conf.py 'service.app:create_app()'``.

Access log: one line per request on standard output (``RANKDUEL_ACCESS_LOG``: ``-``, the
default; a file path; or ``off``), in the format :data:`service.serving.ACCESS_LOG_FORMAT`::

    127.0.0.1 [23/Nov/2026:10:57:17 +0000] "GET /search HTTP/1.1" 200 1234 12ms "curl/8.5.0"

client address, time, method, path *without the query string* (a search query may be
personal data; click tokens travel in bodies, the admin token in a header: neither is
logged), protocol, status, response bytes, duration in milliseconds, user agent.

Nothing is left on disk after a stop: the metrics folder created when
``PROMETHEUS_MULTIPROC_DIR`` is unset is removed by the master process (only by it: a
gunicorn worker that exits must not remove the folder the others still write to), and
gunicorn's control socket (``~/.gunicorn/``), which rankduel does not use, is off.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import shutil
import tempfile

from cli.help_text import plain
from service.config import load_config
from service.multiproc import child_exit, prepare_multiproc_dir

log = logging.getLogger("rankduel.serve")


def load_factory(spec: str):
    """``module:callable`` → the callable (an app factory taking no arguments)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"--app must be module:factory, got {spec!r}")
    return getattr(importlib.import_module(module), name)


#: gunicorn's ``access_log_format`` of ``rankduel serve`` and ``deploy/gunicorn.conf.py``
def run_gunicorn(options: dict, factory) -> None:
    from gunicorn.app.base import BaseApplication

    class App(BaseApplication):
        def load_config(self) -> None:
            for key, value in options.items():
                if key in self.cfg.settings:  # control_socket_disable: gunicorn >= 27
                    self.cfg.set(key, value)

        def load(self):
            return factory()

    App().run()


def run(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in {"bind": args.bind, "workers": args.workers,
                                   "threads": args.threads}.items() if v is not None}
    config = load_config(overrides=overrides)
    missing = [v for n, v in (("admin_token", "RANKDUEL_ADMIN_TOKEN"),
                              ("secret_key", "RANKDUEL_SECRET_KEY")) if not getattr(config, n)]
    if missing:
        raise ValueError(f"refusing to start without {' and '.join(missing)} "
                         "(set them, or run `rankduel demo` which generates them)")
    for name, value in overrides.items():  # the workers re-read the environment
        os.environ[f"RANKDUEL_{name.upper()}"] = str(value)
    prom_dir = prepare_multiproc_dir()  # before any metric is created by an import
    factory = load_factory(args.app)
    created = not args.keep_metrics_dir and prom_dir.startswith(tempfile.gettempdir())
    master = os.getpid()
    logging.basicConfig(level=config.log_level)
    from cli.startup import check_redis

    check_redis(config)  # an evicting Redis refused; persistence off warned
    log.info("serving on %s with %d workers x %d threads; config %r",
             config.bind, config.workers, config.threads, config)
    from service.serving import (  # JSON 414, the longest request line; the access log
        ACCESS_LOG_FORMAT,
        GUNICORN_OPTIONS,
        access_log,
    )

    options = {
        "bind": config.bind,
        "workers": config.workers,
        "threads": config.threads,
        "worker_class": "gthread",
        "timeout": 30,
        "graceful_timeout": 10,
        "keepalive": 5,
        "child_exit": child_exit,
        "loglevel": config.log_level.lower(),
        "proc_name": "rankduel-api",
        **GUNICORN_OPTIONS,
        "accesslog": access_log(config),
        "access_log_format": ACCESS_LOG_FORMAT,
        "control_socket_disable": True,
    }
    try:
        run_gunicorn(options, factory)
    finally:
        # a worker process leaves through here too (gunicorn forks it inside run())
        if created and "rankduel-prom-" in prom_dir and os.getpid() == master:
            shutil.rmtree(prom_dir, ignore_errors=True)
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP API under gunicorn",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bind", help="host:port (default RANKDUEL_BIND or 127.0.0.1:8000)")
    p.add_argument("--workers", type=int, help="worker processes (default RANKDUEL_WORKERS)")
    p.add_argument("--threads", type=int, help="threads per worker (default RANKDUEL_THREADS)")
    p.add_argument("--app", default="service.app:create_app",
                   help="application factory module:callable (default %(default)s)")
    p.add_argument("--keep-metrics-dir", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=run)
