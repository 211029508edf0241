"""The folder of prometheus-client's multiprocess mode, prepared before any metric exists.

prometheus-client chooses between in-memory values and per-process files when it is first
imported, from ``PROMETHEUS_MULTIPROC_DIR``; so this module imports neither it nor
:mod:`service.metrics`. ``rankduel serve``, ``rankduel worker`` and
``deploy/gunicorn.conf.py`` call :func:`prepare_multiproc_dir` first, then start the
processes that import the metrics.
"""

from __future__ import annotations

import os
import tempfile


def prepare_multiproc_dir() -> str:
    """Point prometheus-client's multiprocess mode at a folder, emptied at start-up
    (stale files from a previous run would add their counts to this one's); a temp folder
    when ``PROMETHEUS_MULTIPROC_DIR`` is unset. Returns the folder."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not path:
        path = tempfile.mkdtemp(prefix="rankduel-prom-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        if name.endswith(".db"):
            os.unlink(os.path.join(path, name))
    return path


def child_exit(server, worker) -> None:
    """gunicorn hook: forget a dead worker's live gauges."""
    from service.metrics import mark_process_dead

    mark_process_dead(worker.pid)
