"""The case tables: one folder (``tests/cases/``), one JSON file per rule that several
implementations share, each with a ``version``. A table is the contract between its
implementations; changing what a case expects is a new version (here and in the file),
so that a test written against an older table says so instead of passing by chance.

=============== ======= =====================================================================
table           version run against
=============== ======= =====================================================================
``outcomes``    1       bandits.outcomes, a policy's update, replay (tests/unit/
                        test_outcome_cases.py); credit.lua's W target, the hold's writes
                        (tests/service/test_outcome_cases_store.py); credit.lua's click
                        target, metric_credit.lua (tests/service/test_outcome_cases_metrics.py)
``guard``       1       service.credit.guard (tests/unit/test_guard_cases.py); guard.lua
                        (tests/service/test_guard_lua.py)
``assignment``  1       rollout.hashing and rollout.assignment (tests/unit/
                        test_rollout_assignment.py): the only implementation so far
``ab_moments``  1       rollout.ab.moments and ab_moments.lua (tests/service/
                        test_ab_moments_cases.py)
=============== ======= =====================================================================
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent / "cases"
#: the version of each table these tests are written against
VERSIONS = {"outcomes": 1, "guard": 1, "assignment": 1, "ab_moments": 1}


def load(name: str) -> dict[str, Any]:
    """The table ``name`` (``tests/cases/<name>.json``), refused when its version is not
    the one the tests are written against."""
    table = json.loads((FOLDER / f"{name}.json").read_text())
    if table.get("version") != VERSIONS[name]:
        raise ValueError(f"tests/cases/{name}.json is version {table.get('version')!r}; "
                         f"the tests are written against version {VERSIONS[name]}: update "
                         "the tests with the table")
    return table
