"""``rankduel replay FILE``: W recomputed from an export (``rankduel export``), the total
and per segment, printed as JSON: ``{"arms": K, "W": [[...]], "segment_W": {dimension:
{value: [[...]]}}, "outcomes": N}``.

Only the ``outcome`` events count: each adds its outcomes ``[i, j, s]`` (``s`` to
``W[i][j]``, ``1 − s`` to ``W[j][i]``) to the total and to each of its segment labels,
exactly what the credit step added live; so on a complete export the result equals
``GET /experiments/EXP``'s ``W`` and ``segment_W`` exactly (outcomes entered by a
judging campaign excepted: they are not search events).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from service.events.replay import read, replay


def _run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise ValueError(f"{path}: no such file (write one with rankduel export)")
    print(json.dumps(replay(read(path))))
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("replay", help="recompute W from an exported event log",
                              description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="an export (jsonl or parquet)")
    p.set_defaults(func=_run)
