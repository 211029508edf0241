"""The long contract-fuzzing run: ``tests/service/test_contract_fuzz.py`` with a large
budget, going on past failures, then its figures.

The same code as the CI test (same fixtures: a real Redis, the app on a real port, the
toy rankers), with ``--examples`` examples per operation in schemathesis' fuzzing phase,
its coverage phase in full (positive and negative boundary cases, where CI runs the
positive ones) and ``--scenarios`` stateful scenarios of up to 20 steps following the
document's links. Prints the requests sent,
the 5xx seen (``/search``'s documented 502 excepted), the responses that broke the
contract (undocumented status, body off its schema, schema-valid request refused,
schema-invalid one accepted), and the operations never reached past their 404; exits 1
if any of those is not zero.

    .venv/bin/python bench/fuzz.py [--examples 300] [--scenarios 200] [--seed 20261123]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--examples", type=int, default=300, help="fuzzing examples per operation")
    p.add_argument("--scenarios", type=int, default=200, help="stateful scenarios")
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--json", help="also write the figures to this file")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="rankduel-fuzz-") as tmp:
        report = os.path.join(tmp, "report.json")
        env = dict(os.environ, RANKDUEL_FUZZ_EXAMPLES=str(args.examples),
                   RANKDUEL_FUZZ_SCENARIOS=str(args.scenarios), RANKDUEL_FUZZ_SEED=str(args.seed),
                   RANKDUEL_FUZZ_COVERAGE="all", RANKDUEL_FUZZ_REPORT=report)
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/service/test_contract_fuzz.py", "-q",
             "-p", "no:cacheprovider", "-o", "addopts=", "--timeout=7200"],
            cwd=ROOT, env=env)
        elapsed = time.monotonic() - t0
        if not os.path.exists(report):
            print("the fuzzing run wrote no report", file=sys.stderr)
            return 2
        with open(report) as f:
            figures = json.load(f)
    figures.update(seconds=round(elapsed), examples=args.examples, scenarios=args.scenarios,
                   seed=args.seed)
    print(f"\nrequests sent       {figures['requests']:,} in {elapsed:.0f} s")
    print(f"5xx seen            {figures['server_errors']}")
    print(f"contract violations {figures['violations']}")
    print(f"unreached           {', '.join(figures['unreached']) or 'none'}")
    print("statuses            " + ", ".join(f"{k}: {v:,}" for k, v in figures["statuses"].items()))
    for example in figures["failures"]:
        print("\n" + example)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)
    bad = figures["server_errors"] or figures["violations"] or figures["unreached"]
    return 1 if bad or proc.returncode else 0


if __name__ == "__main__":
    sys.exit(main())
