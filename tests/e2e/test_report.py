"""The report (``GET /experiments/ID/report``), ``rankduel report`` and the operator page
``/ui/`` against the real stack: the session's Redis, Celery worker and API, the demo
world's rankers over HTTP, the demo's simulated users, and headless Chromium.

* A converged demo experiment (MergeDTS, 6 rankers, seed 1: one active ranker left) names
  the world's true best ranker as its certified champion, and the page shows the champion,
  the verdict and a K×K heatmap. Its screenshot goes to a temporary folder; with
  ``RANKDUEL_UPDATE_DOCS_SCREENSHOT=1`` it replaces docs/operator-ui.png
  (``RANKDUEL_UPDATE_DOCS_SCREENSHOT=1 .venv/bin/pytest tests/e2e/test_report.py -k
  operator_page``), the one way that image is regenerated.
* An unconverged one (MergeMED after a few hundred users) lists its undecided rankers
  with an estimate of the comparisons still needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import requests
from conftest import ADMIN, ROOT

from demo.run import DemoOptions
from demo.stack import wait_until
from demo.traffic import send, start, wait_credited
from demo.world_rankers import create_ranker_app, ranker_name
from demo.wsgi_server import ThreadedServer

K = 6
#: set to 1 to regenerate docs/operator-ui.png from this test; otherwise the screenshot goes
#: to a temporary folder and a run of the suite leaves the checkout as it was
UPDATE_SCREENSHOT = "RANKDUEL_UPDATE_DOCS_SCREENSHOT"


@pytest.fixture(scope="module")
def world_rankers():
    server = ThreadedServer(create_ranker_app(seed=1, n_rankers=K))
    yield server
    server.close()


def _report(api, exp_id: str) -> dict:
    r = requests.get(f"{api.url}/experiments/{exp_id}/report",
                     headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def converged(api, worker, world_rankers):
    worker.ensure()
    opts = DemoOptions(rankers=K, algorithm="mergedts", seed=1, concurrency=4, quiet=True)
    run = start(api.url, ADMIN, world_rankers.url, opts, name="converged")
    for _ in range(40):
        send(run, 300)
        state = wait_credited(run)
        if sum(r["status"] == "active" for r in state["rankers"]) == 1:
            break
    return run


def test_report_needs_the_admin_token(api):
    r = requests.get(f"{api.url}/experiments/nope/report", timeout=10)
    assert r.status_code == 401
    r = requests.get(f"{api.url}/experiments/nope/report",
                     headers={"Authorization": f"Bearer {ADMIN}"}, timeout=10)
    assert r.status_code == 404 and "nope" in r.json()["error"]


def test_converged_report_certifies_the_true_best(api, converged):
    rep = _report(api, converged.exp_id)
    best = ranker_name(converged.best)
    assert rep["champion"] == best and rep["certified"] is True
    assert rep["undecided"] == [] and rep["estimated_comparisons_to_decide"] == 0
    assert best in rep["verdict"] and "best of 6 rankers" in rep["verdict"]
    assert 0.9 < rep["confidence"] < 1.0
    by_name = {r["name"]: r for r in rep["rankers"]}
    assert by_name[best]["vs_champion"] is None
    others = [r for r in rep["rankers"] if r["name"] != best]
    assert all(r["status"] == "eliminated" and r["eliminated_by"] for r in others)
    assert all(r["eliminated_at_comparison"] <= rep["comparisons"] for r in others)
    for r in others:
        vs = r["vs_champion"]
        assert 0 <= vs["lower"] <= vs["p"] <= vs["upper"] <= 1
        # ties apart from wins and losses, and counted ½ in p (p is W's, ties included)
        n = vs["wins"] + vs["losses"] + vs["ties"]  # 0: eliminated by another ranker
        assert n == 0 or vs["p"] == pytest.approx((vs["wins"] + vs["ties"] / 2) / n, abs=1e-3)
    # each tie against the champion is one of the experiment's ties (team draft: a duel
    # whose clicks credit both sides equally), and this demo has some
    state = requests.get(f"{api.url}/experiments/{converged.exp_id}",
                         headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30).json()
    assert 0 < sum(r["vs_champion"]["ties"] for r in others) <= state["counters"]["ties"]
    elims = [e for e in rep["timeline"] if e["event"] == "eliminated"]
    assert sorted(e["ranker"] for e in elims) == sorted(r["name"] for r in others)
    assert rep["timeline"][0]["event"] == "created"
    assert "true" in rep["regret"] and rep["regret"]["estimated"] >= 0
    assert len(rep["preferences"]) == K and rep["generated_at"] > 0


def test_unconverged_report_lists_the_undecided_with_an_estimate(api, worker, world_rankers):
    worker.ensure()
    opts = DemoOptions(rankers=K, algorithm="mergemed", seed=1, concurrency=4, quiet=True)
    run = start(api.url, ADMIN, world_rankers.url, opts, name="unconverged")
    send(run, 60)
    wait_credited(run)
    rep = _report(api, run.exp_id)
    assert rep["certified"] is False and len(rep["undecided"]) >= 1
    assert rep["champion"] not in rep["undecided"]
    assert isinstance(rep["estimated_comparisons_to_decide"], int)
    assert rep["estimated_comparisons_to_decide"] > 0
    assert rep["verdict"].startswith("Undecided between") and "more comparisons" in rep["verdict"]
    assert "elimination test" in rep["estimate_basis"]


def test_cli_report_text_json_and_html(api, converged, tmp_path):
    base = [sys.executable, "-m", "cli.main", "report", converged.exp_id, "--api", api.url,
            "--token", ADMIN]
    text = subprocess.run(base, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert ranker_name(converged.best) in text.stdout.splitlines()[0]
    js = subprocess.run([*base, "--json"], cwd=ROOT, capture_output=True, text=True,
                        timeout=60)
    assert json.loads(js.stdout)["certified"] is True
    page = tmp_path / "report.html"
    subprocess.run([*base, "--html", str(page)], cwd=ROOT, check=True, timeout=60)
    assert "window.RANKDUEL_REPORT" in page.read_text() and "ui.js" not in page.read_text()
    bad = subprocess.run([*base[:-1], "wrong"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "401" in bad.stderr and "Traceback" not in bad.stderr


def test_operator_page_in_chromium(api, converged, tmp_path):
    from demo.browser import chromium

    rep = _report(api, converged.exp_id)
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1100})
        page.goto(f"{api.url}/ui/")
        page.fill("input[name=token]", ADMIN)
        page.click("form#login button[type=submit]")
        page.wait_for_selector(f"#experiments a[href='#exp={converged.exp_id}']")
        assert ADMIN not in page.url
        page.click(f"#experiments a[href='#exp={converged.exp_id}']")
        page.wait_for_selector("#heatmap td.cell")
        assert page.inner_text("#champion") == rep["champion"]
        assert page.inner_text("#verdict").startswith(rep["champion"] + " is the best")
        assert page.locator("#heatmap td.cell").count() == K * K
        assert page.locator("#timeline li").count() >= K
        assert page.evaluate("sessionStorage.getItem('rankduel.token')") == ADMIN
        shot = (ROOT / "docs" if os.environ.get(UPDATE_SCREENSHOT) == "1" else tmp_path) \
            / "operator-ui.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # refreshes while running: a new report is fetched without a reload
        n = page.evaluate("performance.getEntriesByType('resource').filter("
                          "e => e.name.endsWith('/report')).length")
        wait_until(lambda: page.evaluate(
            "performance.getEntriesByType('resource').filter("
            "e => e.name.endsWith('/report')).length") > n, 30, "page refreshed")
