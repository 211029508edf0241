"""``rankduel demo`` end to end (reduced size): real Redis, gunicorn, Celery, HTTP rankers.

It finds the true best and stops everything at the end, leaving the checkout as it was;
with ``--keep-running`` every URL it prints answers, and Ctrl-C (SIGINT) stops it and
every process it started within 10 s, even when it was started with SIGINT ignored, as a
command started with ``&`` from a script is.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from demo.client import http_json, http_ok
from demo.run import DemoOptions
from demo.stack import wait_until

ROOT = Path(__file__).resolve().parents[2]


def git_status() -> str | None:
    """``git status --porcelain`` of the checkout (None outside a git checkout): compared
    before and after, since a developer's checkout need not be clean."""
    proc = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                          cwd=ROOT, capture_output=True, text=True)
    return proc.stdout if proc.returncode == 0 else None


def demo_env() -> dict[str, str]:
    """The environment without a Redis or rankduel settings: the demo starts its own."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("RANKDUEL_") and k != "REDIS_URL"}


def ignore_sigint() -> None:
    """In the child before exec: SIGINT ignored, as for a command started with ``&``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def children_of(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def assert_cleaned_up(s: dict, before: str | None) -> None:
    """Every process the demo started is gone (the API port no longer answers), and the
    checkout is as it was; the default workdir (var/demo) is ignored by git."""
    with pytest.raises(OSError):
        http_ok(s["urls"]["api"] + "/healthz")
    assert git_status() == before
    if before is not None:
        ignored = subprocess.run(["git", "check-ignore", "-q",
                                  f"{DemoOptions().workdir}/logs/api.log"], cwd=ROOT)
        assert ignored.returncode == 0


@pytest.mark.starts_process  # runs rankduel demo as a command
def test_demo_finds_the_true_best_and_cleans_up(tmp_path):
    """``rankduel demo`` on its own Redis. The same demo on a Redis Cluster is
    :func:`test_the_demo_on_a_cluster_learning_from_revenue_names_the_buyers_ranker`
    (one run checks both the cluster and the revenue metric: each demo run costs a
    minute of CPU)."""
    out = tmp_path / "summary.json"
    env = dict(os.environ)
    env.pop("REDIS_URL", None)  # the demo must start its own Redis
    before = git_status()
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "demo", "--queries", "4000",
         "--workdir", str(tmp_path / "var"), "--json", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    s = json.loads(out.read_text())
    # the world has one clearly best ranker on clicks (NDCG@10 0.94 vs 0.77 for the
    # next), but two rankers lose to it only about 0.57-0.60 : 0.40-0.43 in interleaving
    # (the buyers' ranker, as good at relevance but demoting bait, is the closer). The
    # live run is not seeded (crediting order). The offline rate was measured for the
    # demo's former MergeDTS (another ranker named in 2 of 1,000 simulated runs at 4,000
    # comparisons, in the world before its purchases); not re-measured for recommended
    assert s["champion"] == s["true_best"]
    assert s["queries"] == 4000 and s["errors"] == 0, s["failures"]
    # every decisive impression is one comparison in W, none lost or doubled
    assert s["decisive_impressions"] == s["comparisons"] > 500
    assert 0 < s["regret"] < s["queries"] * 0.5
    assert "eliminated" in proc.stdout and "champion" in proc.stdout
    # the users buy: an order service reported their purchases by user, each attributed
    # to its page, the retried ones counted once; clicks name the best ranker on clicks,
    # revenue the buyers' ranker, and the summary says they disagree
    assert s["algorithm"] == "recommended" and s["primary"] == "click"
    assert s["purchases"] > 300 and s["purchases_attributed"] == s["purchases"], (
        s["unattributed"])
    assert s["orders_retried"] > 0
    by = {m["name"]: m for m in s["metrics"]}
    assert list(by) == ["click", "revenue"] and by["click"]["primary"]
    assert by["click"]["champion"] == s["true_best"]
    # revenue's leader at the demo's searches is a point estimate (not certified: one run
    # in this suite named the click champion): one of the two, and printed when they differ
    assert by["revenue"]["champion"] in (s["buyers"], s["true_best"])
    if s["metrics_disagree"]:
        assert s["metrics_disagree"] in proc.stdout
    assert f"  revenue: {by['revenue']['verdict']}" in proc.stdout
    assert f"verdict: {s['verdict']}" in proc.stdout and s["urls"]["ui"].endswith(s["experiment"])
    assert "redis cluster of" not in proc.stdout
    assert s["urls"]["api"].startswith("http://127.0.0.1:")
    assert_cleaned_up(s, before)


@pytest.mark.starts_process  # runs rankduel demo as a command
def test_the_demo_on_a_cluster_learning_from_revenue_names_the_buyers_ranker(tmp_path):
    """``rankduel demo --primary revenue --redis-cluster 3``: the policy learns from the
    purchases, so its champion is the buyers' ranker (the summary's true best on
    revenue), not the best on clicks; each purchase it learnt from is one comparison in
    W, and each decisive impression one in the click metric's W, on a Redis Cluster of
    3 masters; and it stops everything at the end, leaving the checkout as it was."""
    out = tmp_path / "summary.json"
    before = git_status()
    proc = subprocess.run(
        [sys.executable, "-m", "cli.main", "demo", "--primary", "revenue", "--queries",
         "3000", "--redis-cluster", "3", "--workdir", str(tmp_path / "var"), "--json",
         str(out)],
        cwd=ROOT, env=demo_env(), capture_output=True, text=True, timeout=540)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    s = json.loads(out.read_text())
    assert "redis cluster of 3 masters" in proc.stdout
    assert s["queries"] == 3000
    by = {m["name"]: m for m in s["metrics"]}
    assert s["primary"] == "revenue" and by["revenue"]["primary"] and not by["click"]["primary"]
    assert s["true_best"] == s["buyers"]
    # one run of 8,000 searches had the buyers' ranker champion from the 1,600th search
    # on (eliminating 7 of 11 by revenue); at 3,000 it leads, uncertified
    assert s["champion"] == s["buyers"] == by["revenue"]["champion"]
    # the policy's comparisons are the purchases it learnt from, far fewer than the
    # decisive impressions (the click metric's)
    assert 0 < s["comparisons"] == by["revenue"]["comparisons"] < s["decisive_impressions"]
    assert by["click"]["comparisons"] == s["decisive_impressions"]
    assert s["purchases_attributed"] == s["purchases"] > 300, s["unattributed"]
    assert s["errors"] == 0, s["failures"]
    assert s["orders_retried"] > 0
    assert f"  revenue (primary): {by['revenue']['verdict']}" in proc.stdout
    if s["metrics_disagree"]:
        assert s["metrics_disagree"] in proc.stdout
    assert_cleaned_up(s, before)


@pytest.mark.starts_process  # runs rankduel demo as a command
def test_ctrl_c_stops_the_demo_started_with_sigint_ignored(tmp_path):
    """``rankduel demo --keep-running`` started as ``&`` starts it (SIGINT ignored): every
    URL it prints answers, and one SIGINT stops it and every process it started."""
    before = git_status()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "demo", "--keep-running", "--queries", "40",
         "--rankers", "3", "--concurrency", "2", "--workdir", str(tmp_path / "var")],
        cwd=ROOT, env=demo_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, preexec_fn=ignore_sigint)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: "Ctrl-C stops everything" in "".join(out) or
                   proc.poll() is not None, 300, "the demo up and waiting")
        text = "".join(out)
        assert proc.poll() is None, text
        admin = re.search(r"admin token: (\S+)", text).group(1)
        listed = text.split("look at", 1)[1].split("verdict:", 1)[0]
        urls = dict(re.findall(r"^  (\w+) +(http://\S+)$", listed, re.M))
        assert {"api", "experiment", "metrics", "report", "ui", "worker_metrics"} <= set(urls)
        for name, url in urls.items():  # each answers (operator ones with the admin token)
            status, _ = http_json("GET", url.partition("#")[0],
                                  headers={"Authorization": f"Bearer {admin}"}, timeout=30)
            assert status == 200, (name, url, status)
        children = children_of(proc.pid)
        assert len(children) >= 4, children  # Redis, API, worker, rankers
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
        stopped_in = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    reader.join(10)
    text = "".join(out)
    assert proc.returncode == 0, text[-3000:]
    assert stopped_in < 10, (stopped_in, text[-2000:])
    assert "stopping every process the demo started" in text
    # each child led its own process group: nothing of any is left
    wait_until(lambda: all(group_gone(pid) for pid in children), 10, "the demo's children gone")
    with pytest.raises(OSError):
        http_ok(urls["metrics"].removesuffix("/metrics") + "/healthz")
    assert git_status() == before
