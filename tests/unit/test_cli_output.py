"""What the command line prints for a person, in process (no command is started): a
long command's first ETA is not a wild guess (:class:`cli.progress.Progress`), and the
demo's summary prints URLs only while they are alive (:meth:`demo.run.Demo.print_summary`).
The commands run as commands: tests/service/test_cli_usability.py."""

from __future__ import annotations

import io

from cli.progress import Progress
from demo.run import Demo, DemoOptions


def test_the_first_eta_is_not_a_wild_guess():
    stream = io.StringIO()
    p = Progress(1_000_000, "job", stream=stream, enabled=True)
    p.advance(10)  # the first steps, slow with start-up costs
    p._draw(p.start + 0.2, "")
    assert stream.getvalue().rstrip().endswith("ETA ?"), stream.getvalue()
    p.done = 500_000  # half done in 2.5 s: 2.5 s to go
    p._draw(p.start + 2.5, "")
    assert "ETA 2s" in stream.getvalue().splitlines()[-1] or "ETA 3s" in stream.getvalue()


def _summary_text(keep_running: bool) -> str:
    out = io.StringIO()
    demo = Demo(DemoOptions(rankers=3, keep_running=keep_running), out=out)
    summary = {"champion": "r00", "true_best": "r00", "queries": 1, "seconds": 1.0,
               "queries_per_second": 1.0, "impressions": 1, "decisive_impressions": 1,
               "comparisons": 1, "regret": 0.0,
               "urls": {"api": "http://127.0.0.1:1", "metrics": "http://127.0.0.1:1/metrics",
                        "openapi": "http://127.0.0.1:1/openapi.json"}}
    demo.print_summary(summary, {"rankers": []})
    return out.getvalue()


def test_the_demo_prints_urls_only_while_they_are_alive():
    stopped = _summary_text(keep_running=False)
    assert "http://" not in stopped and "--keep-running" in stopped
    kept = _summary_text(keep_running=True)
    assert "look at" in kept and "http://127.0.0.1:1/metrics" in kept
    # the bare base URL answers 404: the api line shows the API's description instead
    urls = [line.split()[-1] for line in kept.splitlines() if "http://" in line]
    assert "http://127.0.0.1:1" not in urls and "http://127.0.0.1:1/openapi.json" in urls
    assert [line.split()[0] for line in kept.splitlines() if "openapi.json" in line] == ["api"]


def test_the_demo_prints_each_metric_and_their_disagreement():
    out = io.StringIO()
    demo = Demo(DemoOptions(rankers=3, primary="revenue"), out=out)
    demo.print_metrics({"metrics": [
        {"name": "click", "primary": True, "verdict": "r06 wins click: ..."},
        {"name": "revenue", "primary": False, "verdict": "r11 leads revenue: ..."}],
        "metrics_disagree": "r06 wins click, r11 leads revenue: the metrics disagree."})
    lines = out.getvalue().splitlines()
    assert lines[:3] == ["  click (primary): r06 wins click: ...",
                         "  revenue: r11 leads revenue: ...",
                         "r06 wins click, r11 leads revenue: the metrics disagree."]
    assert len(lines) == 3
    quiet = io.StringIO()
    Demo(DemoOptions(rankers=3), out=quiet).print_metrics({"metrics": [],
                                                           "metrics_disagree": None})
    assert quiet.getvalue() == ""
