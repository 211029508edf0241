"""CPU and wall seconds per test and per module, the servers included: a pytest plugin.

Each pytest process (each xdist process, under ``scripts/test``) runs its modules one after
the other, with its own Redis, API, rankers and Celery worker. The CPU a test costs is read
as the CPU its process *tree* spent while the test ran (setup, call and teardown): the
pytest process, every live descendant (Redis, the worker and its pool, gunicorn, Chromium,
Prometheus) and the descendants already reaped. A module's session fixtures are charged to
the test that starts them (the first of its process). Needs psutil (not a dependency of
the project: ``pip install psutil``). ``-p`` loads it before ``tests/conftest.py`` puts
``tests/`` on the path, so the command does (``tests/``, not ``tests/helpers/``, whose
``workers.py`` would shadow the project's ``workers`` package):

    PYTHONPATH=tests RANKDUEL_CPU_PROFILE=/tmp/prof.jsonl scripts/test -p helpers.cpu_profile
    .venv/bin/python tests/helpers/cpu_profile.py /tmp/prof.jsonl   # the table, by module

A line of the file is one test: ``{"id", "module", "cpu", "wall", "pid"}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import pytest


def tree_cpu(pid: int | None = None) -> float:
    """CPU seconds (user and system) of process ``pid`` (this one by default), its live
    descendants and the children they have reaped."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # exited between the listing and the read
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.environ.get("RANKDUEL_CPU_PROFILE")
    if not path:
        yield
        return
    cpu0, wall0 = tree_cpu(), time.monotonic()
    yield
    cpu, wall = tree_cpu() - cpu0, time.monotonic() - wall0
    line = json.dumps({"id": item.nodeid, "module": item.nodeid.split("::")[0],
                       "cpu": round(cpu, 3), "wall": round(wall, 3), "pid": os.getpid()})
    with open(path, "a", encoding="utf-8") as f:  # one short write: appends do not mix
        f.write(line + "\n")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for name in argv:
        with open(name, encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                cpu[row["module"]] += row["cpu"]
                wall[row["module"]] += row["wall"]
                count[row["module"]] += 1
    print(f"{'cpu s':>8} {'wall s':>8} {'tests':>6}  module")
    for module in sorted(cpu, key=lambda m: -cpu[m]):
        print(f"{cpu[module]:8.1f} {wall[module]:8.1f} {count[module]:6d}  {module}")
    print(f"{sum(cpu.values()):8.1f} {sum(wall.values()):8.1f} {sum(count.values()):6d}  in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
