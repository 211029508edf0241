"""Seconds per test module, summed from the ``--durations=0`` lines of a pytest run's output
(setup, call and teardown), longest first: the numbers of ``MODULE_SECONDS`` in
tests/conftest.py.

    scripts/test --durations=0 > run.txt; .venv/bin/python tests/helpers/durations.py run.txt
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable

LINE = re.compile(r"\s*([\d.]+)s (?:setup|call|teardown)\s+(\S+)")


def by_module(lines: Iterable[str]) -> Counter[str]:
    """Seconds per module of the durations among ``lines``.

    >>> by_module(["1.50s call     tests/service/test_a.py::test_x",
    ...            "0.50s setup    tests/service/test_a.py::test_y[1]", "other"])
    Counter({'tests/service/test_a.py': 2.0})
    """
    out: Counter[str] = Counter()
    for line in lines:
        m = LINE.match(line)
        if m:
            out[m.group(2).split("::")[0]] += float(m.group(1))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8", errors="replace") as f:
        totals = by_module(f)
    for module, seconds in totals.most_common():
        print(f"{seconds:8.1f}  {module}")
    print(f"{sum(totals.values()):8.1f}  in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
