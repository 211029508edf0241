"""``rankduel replay FILE``: W recomputed from an export (``rankduel export``), the total
and per segment, printed as JSON: ``{"arms": K, "W": [[...]], "segment_W": {dimension:
{value: [[...]]}}, "outcomes": N}``.

Only the ``outcome`` events count: each adds its outcomes ``[i, j, s]`` (``s`` to
``W[i][j]``, ``1 − s`` to ``W[j][i]``) to the total and to each of its segment labels,
exactly what the credit step added live; so on a complete export the result equals
``GET /experiments/EXP``'s ``W`` and ``segment_W`` exactly (outcomes entered by a
judging campaign excepted: they are not search events).

An experiment with metrics (docs/conversions.md) also logs ``metric`` events, one per
outcome event credited, with its outcomes per metric; when there are any, the answer has
``"metric_W": {metric: [[...]]}``, each the sum of its outcomes in log order: equal to
``GET /experiments/EXP``'s ``metric_W`` exactly.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The events of an export, JSON lines or parquet (by the file's content)."""
    with path.open("rb") as fh:
        magic = fh.read(4)
    if magic == b"PAR1":
        try:
            import pyarrow.parquet as pq  # deferred: the optional export extra
        except ImportError:
            raise ValueError(f"{path} is parquet: reading it needs pyarrow: pip install "
                             "'rankduel[export]'") from None
        for e in pq.read_table(str(path), columns=["event"]).column("event").to_pylist():
            yield json.loads(e)
        return
    with path.open() as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except ValueError:
                    raise ValueError(f"{path}:{n}: not a JSON line") from None


def replay(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """W (total) and W per segment label from the outcome events, K from the largest arm.

    >>> out = replay([{"type": "outcome", "mark": {"outcomes": [[0, 1, 1.0]]},
    ...                "seg": ["device=mobile"]},
    ...               {"type": "outcome", "mark": {"outcomes": [[1, 0, 0.5]]}, "seg": []}])
    >>> out["W"], out["segment_W"]["device"]["mobile"], out["outcomes"]
    ([[0.0, 1.5], [0.5, 0.0]], [[0.0, 1.0], [0.0, 0.0]], 2)
    """
    adds: list[tuple[tuple[str, ...], int, int, float]] = []
    by_metric: list[tuple[str, int, int, float]] = []
    k = 0
    for e in events:
        if e.get("type") == "metric":
            for name, rows in ((e.get("mark") or {}).get("outcomes") or {}).items():
                for i, j, s in rows:
                    by_metric.append((name, int(i), int(j), float(s)))
                    k = max(k, int(i) + 1, int(j) + 1)
            continue
        if e.get("type") != "outcome":
            continue
        labels = tuple(e.get("seg") or ())
        for i, j, s in (e.get("mark") or {}).get("outcomes", ()):
            adds.append((labels, int(i), int(j), float(s)))
            k = max(k, int(i) + 1, int(j) + 1)
    W = np.zeros((k, k))
    by_label: dict[str, np.ndarray] = {}
    for labels, i, j, s in adds:
        if i == j:
            continue
        W[i, j] += s
        W[j, i] += 1 - s
        for label in labels:
            w = by_label.setdefault(label, np.zeros((k, k)))
            w[i, j] += s
            w[j, i] += 1 - s
    segment_w: dict[str, dict[str, list]] = {}
    for label, w in sorted(by_label.items()):
        dim, _, value = label.partition("=")
        segment_w.setdefault(dim, {})[value] = w.tolist()
    out = {"arms": k, "W": W.tolist(), "segment_W": segment_w, "outcomes": len(adds)}
    if by_metric:
        out["metric_W"] = _metric_w(by_metric, k)
    return out


def _metric_w(adds: list[tuple[str, int, int, float]], k: int) -> dict[str, list]:
    """Each metric's W from its outcomes, in log order (as the metrics' credit script)."""
    out: dict[str, np.ndarray] = {}
    for name, i, j, s in adds:
        if i == j:
            continue
        w = out.setdefault(name, np.zeros((k, k)))
        w[i, j] += s
        w[j, i] += 1 - s
    return {name: w.tolist() for name, w in sorted(out.items())}


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
