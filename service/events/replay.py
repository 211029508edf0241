"""``W`` recomputed from an export of the event log (``rankduel export``), the total and
per segment: what ``rankduel replay`` prints.

Only the ``outcome`` events count for ``W``: each adds its outcomes ``[i, j, s]`` to the
total and to each of its segment labels by the one rule of :mod:`bandits.outcomes`, the
rule the credit step applied live; so on a complete export the result equals ``GET
/experiments/EXP``'s ``W`` and ``segment_W`` exactly (outcomes entered by a judging
campaign excepted: they are not search events). The ``metric`` events (a conversion
credited to its metrics: docs/conversions.md) add, by the same rule, to each metric's
``W``: ``metric_W``, present only when the export holds such events, equals the live
``metric_W``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bandits.outcomes import Tally


def read(path: Path) -> Iterator[dict[str, Any]]:
    """The events of an export, JSON lines or parquet (told by the file's content, not its
    name); ``ValueError`` for a line that is not JSON, or parquet without pyarrow."""
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
    """``{"arms": K, "W": [[...]], "segment_W": {dimension: {value: [[...]]}},
    "outcomes": N}`` from the outcome events: ``K`` one more than the largest arm seen,
    ``segment_W`` the labels that saw a comparison of two arms, by dimension and value in
    the labels' sorted order, ``N`` the outcomes read (``i == j`` included).

    >>> out = replay([{"type": "outcome", "mark": {"outcomes": [[0, 1, 1.0]]},
    ...                "seg": ["device=mobile"]},
    ...               {"type": "outcome", "mark": {"outcomes": [[1, 0, 0.5]]}, "seg": []}])
    >>> out["W"], out["segment_W"]["device"]["mobile"], out["outcomes"]
    ([[0.0, 1.5], [0.5, 0.0]], [[0.0, 1.0], [0.0, 0.0]], 2)
    """
    tally = Tally()
    metrics: dict[str, Tally] = {}
    for e in events:
        if e.get("type") == "outcome":
            tally.add((e.get("mark") or {}).get("outcomes", ()), e.get("seg") or ())
        elif e.get("type") == "metric":
            for name, rows in ((e.get("mark") or {}).get("outcomes") or {}).items():
                metrics.setdefault(name, Tally()).add(rows)
    k = max([tally.k, *(m.k for m in metrics.values())])
    segment_w: dict[str, dict[str, list]] = {}
    for label, counts in sorted(tally.labels.items()):
        if counts.W:  # a label whose outcomes were all i == j has no matrix
            dim, _, value = label.partition("=")
            segment_w.setdefault(dim, {})[value] = counts.matrix(k).tolist()
    out = {"arms": k, "W": tally.total.matrix(k).tolist(), "segment_W": segment_w,
           "outcomes": tally.outcomes}
    if metrics:
        out["metric_W"] = {name: m.total.matrix(k).tolist() for name, m in sorted(metrics.items())}
    return out
