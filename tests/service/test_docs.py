"""The documentation: the MkDocs site builds with ``--strict`` (a broken link or a page
missing from the navigation fails), the generated configuration reference covers every
setting of the code, the documents name only settings that exist, the README stays the
front door, and user-facing text cites papers by author and year, never by an internal
file or issue number."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import ENV, Config

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: environment variables the documents may name that are not settings of ``Config``
OUTSIDE_SETTINGS = {
    "RANKDUEL_CONFIG",           # the settings file itself (service/config.py)
    "RANKDUEL_REDIS_HOSTS",      # docker compose's .env: builds REDIS_URL of the cluster
    "RANKDUEL_CHROMIUM",         # the browser tests' Chromium (demo/browser.py)
    "RANKDUEL_IMAGE",            # docker compose: the project image's name
    "RANKDUEL_METRICS_TOKEN_FILE",  # the podman override: the metrics secret's file
    "RANKDUEL_COMPOSE_CHECK_DIR",   # scripts/compose-check's state folder
    "RANKDUEL_FRONTEND_TOKEN",   # rankduel traffic's front-end key (a client, not the API)
    "RANKDUEL_BENCH_CODE",       # bench/search_cpu.py: the checkout to measure
    "RANKDUEL_UPDATE_DOCS_SCREENSHOT",  # tests/e2e/test_report.py: rewrite docs/operator-ui.png
}


def _hooks():
    spec = importlib.util.spec_from_file_location("rankduel_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _user_docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted(DOCS.rglob("*.md"))]


def test_site_builds_strict(tmp_path):
    """``mkdocs build --strict`` passes, and the generated pages hold the references."""
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
         str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config_page = (site / "operations" / "configuration" / "index.html").read_text()
    for var in ENV.values():
        assert f"<code>{var}</code>" in config_page, var
    api_page = (site / "reference" / "http-api" / "index.html").read_text()
    for path in ("/search", "/clicks", "/impressions/{imp_id}/end", "/experiments",
                 "/experiments/{exp_id}/rankers", "/metrics"):
        assert f"<code>{path}</code>" in api_page, path
    assert "rankduel:" not in api_page + config_page  # every marker was replaced
    quick = (site / "quickstart" / "index.html").read_text()
    assert "rankduel serve" in quick and "/impressions/$IMP/end" in quick


def test_configuration_reference_is_every_setting():
    """One row per setting of ``Config``, each with its variable, default and meaning."""
    hooks = _hooks()
    rows = hooks.configuration_rows()
    fields = [f.name for f in dataclasses.fields(Config)]
    assert [r["setting"] for r in rows] == fields
    assert set(ENV) == set(fields), "a setting without an environment variable, or the reverse"
    for row in rows:
        assert row["variable"] == ENV[row["setting"]]
        assert row["meaning"], f"{row['setting']} has no description in Config's docstring"
    table = hooks.configuration_reference()
    for var in ENV.values():  # each variable once: no duplicated rows
        assert table.count(f"| `{var}` |") == 1, var
    assert "`RANKDUEL_WORKER_METRICS_BIND`" in table


def test_documents_name_only_real_settings():
    """Every ``RANKDUEL_*`` variable the README or the site names is a setting (or one of
    the few documented outside the settings)."""
    known = set(ENV.values()) | OUTSIDE_SETTINGS
    for path in _user_docs():
        for var in set(re.findall(r"\bRANKDUEL_[A-Z0-9_]+\b", path.read_text())):
            assert var in known, f"{path.relative_to(ROOT)} names {var}, which is no setting"
    assert "RANKDUEL_CONFIG" in (ROOT / "service" / "config.py").read_text()


def test_readme_is_the_front_door():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    assert "\n## Quick start\n" in text
    for target in re.findall(r"\]\(((?:docs/)?[^)#:]+\.md)", text):
        assert (ROOT / target).is_file(), f"README links to a missing {target}"


@pytest.mark.parametrize("pattern", [r"\bseeds? ?0\d\d\b", r"\bissues? #?\d+\b",
                                     r"\(#\d+\)"])
def test_no_internal_references(pattern):
    """Papers are cited by author, year and section; no internal issue numbers."""
    for path in _user_docs():
        hits = re.findall(pattern, path.read_text(), flags=re.I)
        assert not hits, f"{path.relative_to(ROOT)}: {hits[:5]}"
