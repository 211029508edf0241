"""The documents: the generated configuration reference covers every setting of the
code, the documents name only settings that exist, the README stays the front door, and
user-facing text cites papers by author and year, never by an internal file or issue
number (also across a line break), and no document states how many tests the suite has
(a count that is wrong after the next test). That the site builds:
tests/service/test_docs.py."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path

import pytest
from readme_quickstart import quickstart_blocks

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
    "RANKDUEL_TEST_PROCESSES",   # scripts/test: how many pytest-xdist processes
    "RANKDUEL_CPU_PROFILE",      # tests/helpers/cpu_profile.py: where it writes its figures
}


def _hooks():
    spec = importlib.util.spec_from_file_location("rankduel_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _user_docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted(DOCS.rglob("*.md"))]


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


def test_quickstart_blocks_are_short():
    """About 15 copy-paste lines of commands (plus the experiment's JSON); that they run
    as written: tests/service/test_quickstart.py."""
    lines = [ln for b in quickstart_blocks() for ln in b.splitlines() if ln.strip()]
    assert 10 <= len(lines) <= 30, len(lines)


#: internal references user text must not hold (papers are cited by authors, year and
#: section; issues by nothing): the seed files' numbers ("seed 000"), issue numbers
INTERNAL_REFERENCES = (r"\bseeds? ?0\d\d\b", r"\bissues? #?\d+\b", r"\(#\d+\)")


def internal_references(text: str) -> list[str]:
    """Every internal reference in ``text``, also one a line break splits ("seed\\n000"):
    whitespace runs, line breaks and a Markdown quote's ``>`` included, count as one
    space."""
    flat = re.sub(r"\s*\n[\s>]*|\s+", " ", text)
    return [hit for pattern in INTERNAL_REFERENCES
            for hit in re.findall(pattern, flat, flags=re.I)]


def test_no_internal_references():
    """Papers are cited by author, year and section; no internal issue numbers."""
    for path in _user_docs():
        hits = internal_references(path.read_text())
        assert not hits, f"{path.relative_to(ROOT)}: {hits[:5]}"


@pytest.mark.parametrize("text", ["the proxy method, seed\n000 §5.3",
                                  "the utility sets of seed\n  001 Table 1",
                                  "as in seeds 002", "see issue #31", "fixed (#12)"])
def test_internal_references_are_found(text):
    """The check above can fail, also across a line break."""
    assert internal_references(text)


def test_citations_pass():
    assert internal_references("Li et al. 2020, §5.3; Brost et al. 2016, Table 1; "
                               "--seed 1; seeds 1-8; 1,000 issues") == []


#: a count of the suite's tests ("1,949 tests", "1949 tests"): a number of three digits or
#: more (a thousands comma allowed), then "tests". A smaller count is a statistics
#: document's multiple testing ("with 14 tests a value needs ..."), not the suite's size
TEST_COUNT = re.compile(r"\b(?:\d{1,3}(?:,\d{3})+|\d{3,})\s+tests\b")


def stated_test_counts(text: str) -> list[str]:
    """Every count of tests that ``text`` states, also across a line break."""
    return TEST_COUNT.findall(text)


def test_no_document_states_how_many_tests_there_are():
    """The suite's size changes with every test: the documents give its times only."""
    for path in _user_docs():
        hits = stated_test_counts(path.read_text())
        assert not hits, f"{path.relative_to(ROOT)} states a test count: {hits}"


@pytest.mark.parametrize("text", [
    "scripts/test  # every tier (1,949 tests: about 17 min)",
    "run the test suite (1949 tests)", "the suite's 2,010\ntests", "about 900 tests"])
def test_a_test_count_is_found(text):
    """The check above can fail, also across a line break."""
    assert stated_test_counts(text)


def test_other_numbers_of_tests_pass():
    assert stated_test_counts("with 14 tests a value needs about 50 comparisons; 1,949 "
                              "comparisons; the tests take 17 min; tests 1-8") == []


#: the longest a table cell of BENCHMARKS.md may be: a claim and its numbers in a line a
#: reader takes in; more goes in the result's own page (bench/results/)
MAX_CELL = 300


def long_cells(text: str, limit: int = MAX_CELL) -> list[str]:
    """``line N: the cell's start (length)`` for each Markdown table cell of ``text``
    longer than ``limit`` characters."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            for cell in (c.strip() for c in line.strip().strip("|").split(" | ")):
                if len(cell) > limit:
                    out.append(f"line {n}: {cell[:60]}... ({len(cell)})")
    return out


def test_long_cells_are_found():
    assert long_cells("| a | b |\n| " + "x" * 301 + " | c |\n", 300) == [
        f"line 2: {'x' * 60}... (301)"]
    assert long_cells("| " + "x" * 300 + " | c |\ntext " + "y" * 400 + "\n", 300) == []


def test_no_benchmarks_table_cell_is_over_300_characters():
    found = long_cells((ROOT / "BENCHMARKS.md").read_text())
    assert not found, "BENCHMARKS.md cells over 300 characters:\n" + "\n".join(found)
