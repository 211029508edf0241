"""The documentation site builds: ``mkdocs build --strict`` (a broken link or a page
missing from the navigation fails it), with the generated reference pages in it, and a
deliberately broken link does fail it. Each test starts ``mkdocs`` in another process; the
pure checks of the documents are in tests/unit/test_docs_text.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.config import ENV

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: every test here runs mkdocs in another process (tests/conftest.py)
pytestmark = pytest.mark.starts_process


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config`` into ``site``. Never with ``-q``: with it,
    mkdocs 1.6 does not count warnings, so ``--strict`` would pass a broken link."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
         "-d", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=300)


def test_site_builds_strict(tmp_path):
    """``mkdocs build --strict`` passes, and the generated pages hold the references."""
    site = tmp_path / "site"
    proc = _mkdocs_build(ROOT / "mkdocs.yml", site)
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


def test_a_broken_link_fails_the_build(tmp_path):
    """The check above can fail: a copy of the site with one link to a missing page does
    not build."""
    copy = tmp_path / "repo"
    shutil.copytree(DOCS, copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    for name in ("README.md", "BENCHMARKS.md"):  # the hooks read them
        shutil.copy(ROOT / name, copy / name)
    page = copy / "docs" / "concepts.md"
    page.write_text(page.read_text() + "\nSee [the missing page](no-such-page.md).\n")
    proc = _mkdocs_build(copy / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "no-such-page.md" in proc.stdout + proc.stderr
