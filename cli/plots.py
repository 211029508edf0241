"""Figures for the command line: cumulative-regret curves as PNG.

Uses matplotlib's object API with the Agg canvas (``Figure`` + ``FigureCanvasAgg``), never
``pyplot``: no global backend state, no display needed, safe in worker processes.
matplotlib comes with the ``demo`` extra and is imported only when a figure is drawn;
without it :func:`plot_regret` raises :class:`PlotsUnavailable`, whose message says what to
install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: the one line a missing matplotlib becomes
MATPLOTLIB_MISSING = "matplotlib is not installed: pip install 'rankduel[demo]'"


class PlotsUnavailable(ModuleNotFoundError):
    """matplotlib (the ``demo`` extra) is not installed."""


@dataclass
class Curve:
    """One algorithm's mean cumulative regret and its standard error per checkpoint."""

    name: str
    checkpoints: Sequence[int]
    mean: Sequence[float]
    stderr: Sequence[float]
    runs: int = 1


def plot_regret(
    curves: Sequence[Curve],
    path: str | Path,
    *,
    title: str | None = None,
    log_regret: bool = False,
) -> Path:
    """Draw mean cumulative regret ± one standard error, log time axis, one line per curve.

    The band is mean ± stderr (sample standard deviation over runs / √runs), as in the
    papers' figures; with one run there is no band. Returns the written path.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith("matplotlib"):
            raise
        raise PlotsUnavailable(MATPLOTLIB_MISSING, name="matplotlib") from None
    fig = Figure(figsize=(7.0, 4.5), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for curve in curves:
        x = np.asarray(curve.checkpoints, dtype=float)
        m = np.asarray(curve.mean, dtype=float)
        s = np.asarray(curve.stderr, dtype=float)
        label = f"{curve.name} ({curve.runs} run{'s' if curve.runs != 1 else ''})"
        (line,) = ax.plot(x, m, label=label, linewidth=1.6)
        if curve.runs > 1:
            lo = m - s
            if log_regret:
                lo = np.maximum(lo, np.where(m > 0, m * 1e-3, 1e-9))
            ax.fill_between(x, lo, m + s, color=line.get_color(), alpha=0.25, linewidth=0)
    ax.set_xscale("log")
    if log_regret:
        ax.set_yscale("log")
    ax.set_xlabel("time step t")
    ax.set_ylabel("cumulative regret")
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
