"""The P136 regret curves to 10⁷ steps in one figure (BENCHMARKS.md, "Regret at K = 136").

    .venv/bin/python bench/results/floor/plot.py     # writes bench/results/floor/regret_1e7.png
"""

import json
from pathlib import Path

from cli.plots import Curve, plot_regret

HERE = Path(__file__).resolve().parent
SOURCES = [
    ("recommended (MergeMED)", HERE / "merge1e7/recommended/summary.json"),
    ("MergeDTS", HERE / "merge1e7/mergedts/summary.json"),
    ("MergeRUCB", HERE / "merge1e7/mergerucb/summary.json"),
    ("Self-Sparring", HERE / "ss1e7/summary.json"),
    ("RMED1", HERE / "rmed1e7/summary.json"),
    ("DTS α=0.8⁷ (to 10⁶)", HERE.parent / "paper_ordering_dts_tuned/summary.json"),
]

curves = []
for name, path in SOURCES:
    d = json.loads(path.read_text())
    curves.append(Curve(name, d["checkpoints"], d["regret_mean"], d["regret_stderr"], d["runs"]))
plot_regret(curves, HERE / "regret_1e7.png", title="P136 (K = 136): cumulative regret to 10⁷ steps",
            log_regret=True)
