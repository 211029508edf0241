"""Preference-matrix files: what ``rankduel simulate --matrix`` reads and ``rankduel matrix
generate|estimate`` write (the pure matrix code, validation included, is
:mod:`bandits.matrices`, which does no I/O).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bandits import matrices as M


def load_matrix(path: str | Path) -> np.ndarray:
    """Read and validate a preference matrix from ``.txt`` (whitespace, ``#`` comments),
    ``.csv`` or ``.npy``; any problem becomes a ``ValueError`` naming the file."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".npy":
            raw = np.load(path, allow_pickle=False)
        elif path.suffix.lower() == ".csv":
            raw = np.loadtxt(path, delimiter=",", ndmin=2)
        else:
            raw = np.loadtxt(path, ndmin=2)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read a numeric matrix: {exc}") from None
    try:
        return M.validate_matrix(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def save_matrix(path: str | Path, P: np.ndarray, header: str = "") -> Path:
    """Write ``P`` as text ``numpy.loadtxt`` reads back (12 significant digits)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".npy":
        np.save(path, P)
    else:
        delim = "," if path.suffix.lower() == ".csv" else " "
        np.savetxt(path, P, fmt="%.12g", delimiter=delim, header=header)
    return path
