"""An experiment's per-segment counts as matrices: ``W`` per dimension and value, in the
layout of the total ``W`` (rows and columns by arm), for ``GET /experiments/ID`` and the
report. What the counts are and how they are kept: :mod:`service.segments.dimensions`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from service.segments.dimensions import values
from service.store import Store
from service.store.credits import SegmentCounts
from service.store.snapshot import Snapshot


def matrices(declared: Mapping[str, list[str]], counts: Mapping[str, SegmentCounts],
             k: int) -> dict[str, dict[str, np.ndarray]]:
    """``W`` (K×K) per dimension and value (``other`` included) from the stored
    ``counts`` by label; a value never seen is all zeros.

    >>> c = {"device=mobile": SegmentCounts(W={(0, 1): 2.0, (1, 0): 1.0}, n=3)}
    >>> m = matrices({"device": ["mobile", "desktop"]}, c, 2)
    >>> m["device"]["mobile"].tolist(), float(m["device"]["other"].sum())
    ([[0.0, 2.0], [1.0, 0.0]], 0.0)
    """
    out: dict[str, dict[str, np.ndarray]] = {}
    for dim in declared:
        out[dim] = {}
        for v in values(declared, dim):
            w = np.zeros((k, k))
            c = counts.get(f"{dim}={v}")
            for (i, j), x in (c.W.items() if c is not None else ()):
                if i < k and j < k:
                    w[i, j] = x
            out[dim][v] = w
    return out


def segment_state(store: Store, snap: Snapshot, k: int) -> dict[str, Any]:
    """``segments`` (the declared values per dimension, ``other`` last) and
    ``segment_W`` (W per dimension and value, as lists) of ``GET /experiments/ID``; both
    None for an experiment without segments."""
    declared = snap.meta.get("segments")
    if not declared:
        return {"segments": None, "segment_W": None}
    counts = store.credits.segment_counts(snap.exp_id)
    return {
        "segments": {d: values(declared, d) for d in declared},
        "segment_W": {d: {v: w.tolist() for v, w in by_value.items()}
                      for d, by_value in matrices(declared, counts, k).items()},
    }
