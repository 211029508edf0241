"""What a worker's log says, in process (no worker is started): Celery's routine lines
of the sweep are dropped and the other tasks' per-run lines are DEBUG, failures and the
service's own lines kept (:class:`workers.health.QuietSweep`); and one INFO line a
minute of totals, nothing for an idle minute (:class:`workers.monitoring.Totals`). That
a real worker at INFO logs no line per drain: tests/service/test_cli_usability.py."""

from __future__ import annotations

import logging

from workers.health import QuietSweep
from workers.monitoring import Totals


def test_the_worker_log_filter_drops_only_the_sweeps_routine_lines():
    """What an idle worker would log every sweep_interval_s is dropped; the other tasks'
    "received"/"succeeded" lines become DEBUG (kept only when DEBUG is on); anything above
    INFO, and the service's own lines, are kept."""

    def record(level, msg, *args):
        return logging.LogRecord("celery", level, __file__, 1, msg, args, None)

    quiet = QuietSweep()
    sweep = {"name": "rankduel.sweep", "id": "x", "runtime": 0.01, "return_value": 0}
    drain = dict(sweep, name="rankduel.drain")
    assert not quiet.filter(record(logging.INFO, "Task %(name)s[%(id)s] received", sweep))
    assert not quiet.filter(record(logging.INFO, "Task %(name)s succeeded", sweep))
    assert not quiet.filter(record(logging.INFO, "Discarding revoked task: %s[%s]",
                                   "rankduel.sweep", "x"))
    received = record(logging.INFO, "Task %(name)s[%(id)s] received", drain)
    logging.getLogger("celery").setLevel(logging.INFO)
    assert not quiet.filter(received) and received.levelno == logging.DEBUG
    logging.getLogger("celery").setLevel(logging.DEBUG)
    try:
        assert quiet.filter(record(logging.INFO, "Task %(name)s[%(id)s] received", drain))
    finally:
        logging.getLogger("celery").setLevel(logging.NOTSET)
    assert quiet.filter(record(logging.ERROR, "Task %(name)s raised", sweep))
    assert quiet.filter(record(logging.INFO, "sweep queued %d drains", 3))


def test_celery_task_lines_are_debug_and_failures_stay():
    logger = logging.getLogger("celery.app.trace.test")
    logger.setLevel(logging.INFO)
    f = QuietSweep()

    def record(level, msg, args):
        return logger.makeRecord(logger.name, level, __file__, 1, msg, args, None)

    drain = {"name": "rankduel.drain", "id": "x", "runtime": 0.1, "return_value": None}
    try:
        assert not f.filter(record(logging.INFO, "Task %(name)s[%(id)s] received", drain))
        assert not f.filter(record(logging.INFO, "Task %(name)s[%(id)s] succeeded in "
                                   "%(runtime)ss: %(return_value)s", drain))
        assert f.filter(record(logging.ERROR, "Task %(name)s[%(id)s] raised", drain))
        assert f.filter(record(logging.INFO, "Task %(name)s[%(id)s] retry: x", drain))
        logger.setLevel(logging.DEBUG)  # at DEBUG the per-task lines are there, as DEBUG
        r = record(logging.INFO, "Task %(name)s[%(id)s] received", drain)
        assert f.filter(r) and r.levelno == logging.DEBUG
    finally:
        logger.setLevel(logging.NOTSET)


def test_the_worker_logs_one_line_a_minute_of_totals(caplog):
    counts = {"runs:drain": 0.0, "runs:sweep": 0.0, "failed": 0.0, "retried": 0.0}
    totals = Totals(read=lambda: dict(counts), interval_s=60)
    with caplog.at_level(logging.INFO, logger="rankduel.worker.metrics"):
        assert totals.tick() is None  # an idle minute logs nothing
        counts.update({"runs:drain": 100.0, "runs:sweep": 12.0, "credited:credited": 900.0,
                       "credited:no_clicks": 40.0, "failed": 1.0})
        line = totals.tick()
    assert line == ("last 60 s: 112 task runs (drain 100, sweep 12), 1 failed, 0 retried; "
                    "impressions credited: credited 900, no_clicks 40")
    assert [r.getMessage() for r in caplog.records] == [line]
