"""The wrk generator's rows (bench/wrk_search.lua) are read and summarised right: the
figures come from per-request values, answers without Server-Timing parts or with an
error status are left out of what they cannot say. No wrk is run here."""

import math

import numpy as np

from bench.service_load import wrk_figures, wrk_rows

ROWS = """\
200 10.0 8.0 1.5 0.2
200 12.0 9.0 2.5 0.0
200 3.0 nan nan 0.4
500 50.0 0 1.0 0.1
"""


def test_rows_are_parsed_with_missing_parts_as_nan():
    rows = wrk_rows(ROWS)
    assert rows.shape == (4, 5)
    assert math.isnan(rows[2, 2]) and math.isnan(rows[2, 3])
    assert wrk_rows("").shape == (0, 5)


def test_figures_are_per_request_differences_over_ok_answers():
    fig = wrk_figures(wrk_rows(ROWS), seconds=2.0)
    assert fig["requests"] == 4 and fig["errors"] == 1
    assert fig["req_per_s"] == 1.5
    assert fig["p50_ms"] == round(float(np.percentile([10.0, 12.0, 3.0], 50)), 2)
    # added: latency minus the rankers part, only where the header had it
    assert fig["added_p50_ms"] == round(float(np.percentile([2.0, 3.0], 50)), 2)
    assert fig["added_p99_ms"] == round(float(np.percentile([2.0, 3.0], 99)), 2)
    assert fig["rankduel_p50_ms"] == 2.0
    assert fig["send_lag_p99_ms"] == round(float(np.percentile([0.2, 0.0, 0.4], 99)), 2)


def test_bare_answers_have_no_added_figures():
    fig = wrk_figures(wrk_rows("200 1.0 nan nan 0\n200 2.0 nan nan 0\n"), seconds=1.0)
    assert "added_p50_ms" not in fig and "rankduel_p50_ms" not in fig
    assert fig["p50_ms"] == 1.5
