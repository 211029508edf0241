"""The metrics' counts as an experiment's state shows them (``GET /experiments/ID``):
only for an experiment that declares metrics; nothing is added otherwise."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from service.outcomes.declared import counted, declared, primary
from service.segments.dimensions import values
from service.store import Store
from service.store.outcomes import MetricCounts


def matrix(c: MetricCounts | None, k: int) -> np.ndarray:
    """A metric's ``W`` (K×K) from its counts (all zeros: never counted).

    >>> matrix(MetricCounts(W={(0, 1): 1.5, (1, 0): 0.5}), 2).tolist()
    [[0.0, 1.5], [0.5, 0.0]]
    """
    w = np.zeros((k, k))
    for (i, j), x in (c.W.items() if c is not None else ()):
        if i < k and j < k:
            w[i, j] = x
    return w


def by_ranker(values: Mapping[int, float], names: Mapping[int, str]) -> dict[str, float]:
    return {names.get(a, str(a)): v for a, v in sorted(values.items())}


def metric_state(store: Store, exp_id: str, meta: Mapping[str, Any], k: int,
                 names: Mapping[int, str]) -> dict[str, Any]:
    """``metrics`` (as declared, defaults filled in), ``primary``, ``metric_W`` (each
    metric of an action: its W, as lists; the click metric's is ``W``, unless the policy
    learns from another metric: then it is listed too, and ``W`` is the primary's) and
    ``metric_values`` (a sum metric's values per ranker), and with segments
    ``metric_segment_W`` (metric -> dimension -> value -> W); empty without metrics."""
    metrics = declared(meta)
    if not metrics:
        return {}
    counts = store.outcomes.metric_counts(exp_id)
    apart = counted(meta)
    out = {
        "metrics": [m.to_json() for m in metrics],
        "primary": primary(meta),
        "metric_W": {m.name: matrix(counts.get(m.name), k).tolist() for m in apart},
        "metric_values": {m.name: by_ranker(counts[m.name].values if m.name in counts
                                            else {}, names)
                          for m in metrics if m.value == "sum"},
    }
    declared_segments = meta.get("segments")
    if declared_segments:  # each metric of an action's W per segment value too
        out["metric_segment_W"] = {
            m.name: {dim: {v: by_label(counts.get(m.name), f"{dim}={v}", k).tolist()
                           for v in values(declared_segments, dim)}
                     for dim in declared_segments}
            for m in apart}
    return out


def by_label(c: MetricCounts | None, label: str, k: int) -> np.ndarray:
    """A metric's ``W`` among the impressions of one segment label (all zeros: none)."""
    w = np.zeros((k, k))
    for (i, j), x in ((c.segments.get(label) or {}).items() if c is not None else ()):
        if i < k and j < k:
            w[i, j] = x
    return w
