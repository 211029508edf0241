"""The real Celery worker of a test session (the ``worker`` fixture of tests/conftest.py):
started, restarted slow (tests/fault_worker.py), stopped and killed with SIGKILL."""

from __future__ import annotations

import os
import signal
from pathlib import Path

#: the checkout's root (tests/fault_worker.py is under it)
ROOT = Path(__file__).resolve().parents[2]


class WorkerControl:
    """Start, restart and kill the real Celery worker of the test session (one per xdist
    process: each has its own Redis, so its own queue)."""

    def __init__(self, stack, env: dict[str, str], redis_url: str) -> None:
        self.stack, self.env, self.redis_url = stack, env, redis_url
        self.child = None
        self.generation = 0
        self.delay_ms, self.concurrency = 0.0, 1
        #: settings of the running worker over the session's environment
        self.settings: dict[str, str] = {}

    def ensure(self, delay_ms: float = 0.0, concurrency: int = 1) -> None:
        """A live worker with these settings (and the session's environment): the one
        running, or a new one."""
        if (self.child is not None and self.child.alive() and self.delay_ms == delay_ms
                and self.concurrency == concurrency and not self.settings):
            return
        self.restart(delay_ms, concurrency)

    def restart(self, delay_ms: float = 0.0, concurrency: int = 1,
                settings: dict[str, str] | None = None) -> None:
        """Stop the worker (if any) and start a new one, with ``settings`` (environment
        variables) over the session's; returns once it consumes."""
        if self.child is not None:
            self.child.stop()
        self.generation += 1
        self.delay_ms, self.concurrency = delay_ms, concurrency
        self.settings = dict(settings or {})
        env = {**self.env, **self.settings}
        name = f"worker{self.generation}"
        if delay_ms:  # slow credit transactions, by a wrapper (tests/fault_worker.py)
            self.child = self.stack.python(name, [
                str(ROOT / "tests" / "fault_worker.py"), str(delay_ms), "worker",
                "--no-supervise",  # the patch lives in this process, not in a child
                "--concurrency", str(concurrency), "--loglevel", "warning",
                "--hostname", f"{name}-{os.getpid()}@%h"], env)
        else:
            self.child = self.stack.start_worker(env, name=name, concurrency=concurrency)
        self.stack.wait_worker(self.child, self.redis_url)

    def stop(self) -> None:
        """Stop the worker cleanly (``ensure()`` starts it again)."""
        if self.child is not None:
            self.child.stop()

    def kill9(self) -> None:
        """SIGKILL the worker's whole process group: supervisor, main process and pool."""
        self.child.kill(signal.SIGKILL)
        self.child.proc.wait(10)

    def log_tail(self, n: int = 40) -> str:
        """The last ``n`` lines of the current worker's log (for a failure's message)."""
        return self.child.tail(n) if self.child is not None else ""
