"""The sweep, published from the worker's main process every ``sweep_interval_s``.

:class:`Sweep` is a consumer bootstep (enabled by the worker's ``--sweep`` switch) that
publishes ``rankduel.sweep`` from a timer of the worker's *main* process. Celery's
embedded beat (``-B``), used before, ran as a separate child process that the main
process does not restart: once it was killed (say, with the pool processes) the sweep
stopped for good and impressions without ``/end`` were never credited, while the health
check kept passing. A timer in the main process lives as long as the worker does, is
started again with the consumer after a broker reconnect, and needs no schedule file.
Each completed sweep writes a heartbeat that the worker's ``/healthz`` checks
(:mod:`workers.health`).
"""

from __future__ import annotations

import logging
import time

import click
from celery import bootsteps

from service.queue import SWEEP
from workers import health

log = logging.getLogger("rankduel.worker")


#: the worker's command-line switch that enables :class:`Sweep`
SWEEP_OPTION = click.Option(["--sweep"], is_flag=True, default=False,
                            help="publish rankduel.sweep every sweep_interval_s from this "
                                 "worker's main process")


class Sweep(bootsteps.StartStopStep):
    """Publish ``rankduel.sweep`` every ``interval`` seconds while connected.

    Each message expires after a few intervals: sweeps that wait in a backlog (a pool
    that is busy, or stopped) are discarded rather than run in a burst later.
    """

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c, sweep: bool = False, **kwargs) -> None:
        self.enabled = bool(sweep)
        self.interval = float(c.app.conf.rankduel_sweep_interval_s)
        health.state.sweep = self.enabled
        self.tref = None
        self.failing_since: float | None = None
        super().__init__(c, **kwargs)

    def start(self, c) -> None:
        self.tref = c.timer.call_repeatedly(self.interval, self.send, (c,), priority=10)

    def stop(self, c) -> None:
        if self.tref is not None:
            self.tref.cancel()
            self.tref = None

    shutdown = stop

    def send(self, c) -> None:
        try:
            c.app.send_task(SWEEP, expires=max(3 * self.interval, 5.0), retry=True,
                            retry_policy={"max_retries": 1, "interval_start": 0,
                                          "interval_step": 0.2, "interval_max": 0.2})
        except Exception as exc:  # the consumer's own reconnect deals with the broker
            if self.failing_since is None:
                self.failing_since = time.monotonic()
                log.warning("cannot publish the sweep: %r (retrying every %.3g s)",
                            exc, self.interval)
            return
        if self.failing_since is not None:
            log.warning("sweep published again after %.1f s",
                        time.monotonic() - self.failing_since)
            self.failing_since = None
