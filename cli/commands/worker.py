"""``rankduel worker``: a Celery worker crediting impressions, supervised.

The worker runs the inactivity sweep from its main process (``--no-beat`` on all but one
worker when you run several). ``rankduel worker`` is a small supervisor: it starts the
Celery worker as a child process and starts it again, after a backoff of 1 s doubling
to 30 s, whenever it dies other than by a clean stop (an unrecoverable error, a SIGKILL,
the OOM killer); SIGTERM or SIGINT stop it warmly (running tasks finish) and then the
supervisor exits with the worker's exit code. ``--no-supervise`` runs the Celery worker
in this process instead (for a process manager of your own: it then exits non-zero on an
unrecoverable error). Nothing is left on disk after a stop: the metrics folder it
creates when ``PROMETHEUS_MULTIPROC_DIR`` is unset is removed.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import click

from cli.help_text import plain
from service.config import load_config
from service.multiproc import prepare_multiproc_dir

log = logging.getLogger("rankduel.supervisor")

#: restart backoff: first delay, cap, and the run time after which it starts over
BACKOFF_S, BACKOFF_MAX_S, STABLE_S = 1.0, 30.0, 60.0
#: the environment variable by which the supervisor gives its pid to the Celery worker
#: (the worker's readiness marker names the process you started)
SUPERVISOR_PID = "RANKDUEL_SUPERVISOR_PID"


def celery_argv(args: argparse.Namespace) -> list[str]:
    """The ``celery worker`` arguments for ``args``."""
    from service.queue import QUEUE

    argv = ["worker", "--loglevel", args.loglevel, "--concurrency", str(args.concurrency),
            "-Q", QUEUE, "--without-gossip", "--without-mingle", "--without-heartbeat"]
    if args.hostname:
        argv += ["--hostname", args.hostname]
    if args.pool:
        argv += ["--pool", args.pool]
    if not args.no_beat:
        argv.append("--sweep")
    return argv


@contextlib.contextmanager
def metrics_dir():
    """``PROMETHEUS_MULTIPROC_DIR``, emptied (stale files would add a previous run's
    counts); a temp folder when unset, removed on the way out."""
    created = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    path = prepare_multiproc_dir()
    try:
        yield path
    finally:
        if created:
            shutil.rmtree(path, ignore_errors=True)


def run_celery(args: argparse.Namespace) -> int:
    """Run the Celery worker in this process; its exit code (``app.worker_main`` would
    drop it: after ``Unrecoverable error`` the process exited 0)."""
    from celery.bin.celery import celery

    from workers import celery_app

    try:
        code = celery.main(args=["-A", celery_app.__name__, *celery_argv(args)],
                           standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    return int(code or 0)


def _child_setup() -> None:  # pragma: no cover - runs in the child before exec
    """The Celery worker dies with its supervisor (no orphan keeps consuming)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


def wait_reaping(child: subprocess.Popen) -> int:
    """Wait for ``child``, reaping any other child on the way: as a container's PID 1 the
    supervisor inherits the orphans of a Celery worker that died (its pool processes)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:  # pragma: no cover - reaped elsewhere
            return child.wait()
        if pid == child.pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            return child.returncode


def supervise(args: argparse.Namespace) -> int:
    """Run the Celery worker as a child; start it again when it dies unexpectedly."""
    stopping = threading.Event()
    child: subprocess.Popen | None = None
    forward = {signal.SIGTERM: signal.SIGTERM, signal.SIGINT: signal.SIGTERM,
               signal.SIGQUIT: signal.SIGQUIT, signal.SIGHUP: signal.SIGHUP}

    def on_signal(signum, _frame) -> None:
        if signum != signal.SIGHUP:
            stopping.set()
        if child is not None and child.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(forward[signum])

    for sig in forward:
        signal.signal(sig, on_signal)
    argv = [sys.executable, "-m", "cli.main", "worker", "--supervised",
            "--concurrency", str(args.concurrency), "--loglevel", args.loglevel]
    argv += ["--hostname", args.hostname] if args.hostname else []
    argv += ["--pool", args.pool] if args.pool else []
    argv += ["--no-beat"] if args.no_beat else []
    env = dict(os.environ, **{SUPERVISOR_PID: str(os.getpid())})
    delay = BACKOFF_S
    while True:
        started = time.monotonic()
        child = subprocess.Popen(argv, env=env, preexec_fn=_child_setup)
        code = wait_reaping(child)
        if stopping.is_set() or code == 0:
            return code if code >= 0 else 128 - code
        ran = time.monotonic() - started
        delay = BACKOFF_S if ran >= STABLE_S else delay
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        log.error("the Celery worker (pid %d) died after %.0f s (%s): starting it again "
                  "in %.0f s", child.pid, ran, how, delay)
        if stopping.wait(delay):  # stopped while waiting: nothing runs any more
            return 0
        delay = min(delay * 2, BACKOFF_MAX_S)


def run(args: argparse.Namespace) -> int:
    config = load_config()  # fail early, with one clear line, on a bad configuration
    if args.supervised:  # the supervisor prepared the metrics folder and will remove it
        return run_celery(args)
    from cli.startup import check_redis

    if not args.no_supervise:
        logging.basicConfig(level=config.log_level,
                            format="[%(asctime)s: %(levelname)s/supervisor] %(message)s")
    check_redis(config)  # an evicting Redis refused; persistence off warned
    with metrics_dir():
        if args.no_supervise:
            return run_celery(args)
        return supervise(args)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("worker", help="run a Celery worker that credits impressions",
                              description=plain(__doc__),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", type=int, default=1, help="pool processes (default 1)")
    p.add_argument("--loglevel", default="info", help="Celery log level (default info)")
    p.add_argument("--hostname", help="Celery node name")
    p.add_argument("--pool", choices=["prefork", "solo", "threads"], help="Celery pool")
    p.add_argument("--no-beat", action="store_true",
                   help="do not run the periodic sweep in this worker")
    p.add_argument("--no-supervise", action="store_true",
                   help="run the Celery worker in this process, without restarting it")
    p.add_argument("--supervised", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=run)
