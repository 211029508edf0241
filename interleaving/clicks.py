"""Simulated users: click models over graded result lists.

Cascade-style models, as used to simulate users across the online-evaluation
literature. The user walks down the list from the top; at each result of relevance
grade ``g`` they click with probability ``P(click | g)`` and, only after a click, stop
reading with probability ``P(stop | g)``. This is the dependent click model family (Guo,
Liu, Wang, "Efficient multiple-click models in web search", WSDM 2009) built on the
cascade hypothesis of Craswell, Zoeter, Taylor, Ramsey ("An experimental comparison of
click position-bias models", WSDM 2008). The four configurations for grades 0–4 are
the click-model configurations of Hofmann, Whiteson, de Rijke, "Fidelity, soundness,
and efficiency of interleaved comparison methods", ACM TOIS 31(4), 2013, in the
five-grade form used by the later multileaving work (Schuth et al. 2014/2015; the MergeDTS
paper, Li et al. 2020, §5.4, and the MDB paper, Brost et al. 2016, §4.1, use the same family):

=============  =================================  ============================
model          P(click | grade 0..4)              P(stop | grade 0..4)
=============  =================================  ============================
perfect        0.0, 0.2, 0.4, 0.8, 1.0            0, 0, 0, 0, 0
navigational   0.05, 0.3, 0.5, 0.7, 0.95          0.2, 0.3, 0.5, 0.7, 0.9
informational  0.4, 0.6, 0.7, 0.8, 0.9            0.1, 0.2, 0.3, 0.4, 0.5
almost_random  0.4, 0.45, 0.5, 0.55, 0.6          0.5 for every grade
=============  =================================  ============================

Also a position-based model (PBM; Chuklin, Markov, de Rijke, *Click Models for Web
Search*, Morgan & Claypool 2015, §3.3; after Richardson et al. 2007 and Craswell et al.
2008): a result at rank ``r`` is examined with probability ``γ_r`` independently of
the rest of the list, and an examined result of grade ``g`` is clicked with
probability ``α_g``. The default ``γ_r = (1/r)^η`` with ``η = 1`` is the power-law
examination curve of Joachims, Swaminathan, Schnabel ("Unbiased learning-to-rank with
biased feedback", WSDM 2017, §6).

Grades are integers 0–4; ``-1`` marks an empty slot (a list shorter than the page),
which is never clicked and does not stop the user.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

N_GRADES = 5


def _table(values: Sequence[float], what: str) -> np.ndarray:
    """A probability table over grades with a leading 0 for the empty slot (grade -1)."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (N_GRADES,) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{what} must be {N_GRADES} probabilities in [0, 1], got {values}")
    return np.concatenate([[0.0], arr])


class ClickModel(abc.ABC):
    """A simulated user: ``clicks`` for one list, ``clicks_batch`` for many at once."""

    kind: ClassVar[str] = "base"

    def __init__(self, name: str) -> None:
        self.name = name

    def clicks(self, grades: np.ndarray | Sequence[int], rng: np.random.Generator) -> np.ndarray:
        """Boolean click vector for one list of grades (top first)."""
        g = np.asarray(grades, dtype=np.int64)
        if g.ndim != 1:
            raise ValueError("clicks expects a 1-d array of grades; use clicks_batch")
        return self.clicks_batch(g[None, :], rng)[0]

    def clicks_batch(self, grades: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Boolean clicks of shape ``grades.shape``, one independent user per row."""
        g = np.asarray(grades)
        if g.ndim != 2:
            raise ValueError("clicks_batch expects a 2-d array (lists × positions)")
        if g.size and (g.min() < -1 or g.max() >= N_GRADES):
            raise ValueError(f"grades must be in -1..{N_GRADES - 1}")
        return self._clicks_batch(g.astype(np.intp) + 1, rng)

    @abc.abstractmethod
    def _clicks_batch(self, shifted: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Clicks for grades shifted by +1 (0 = empty slot)."""


class CascadeModel(ClickModel):
    """Cascade user with grade-dependent click and stop probabilities.

    Parameters
    ----------
    name
        Label of the configuration.
    p_click, p_stop
        ``P(click | grade)`` and ``P(stop | grade)`` for grades 0..4.

    Examples
    --------
    >>> import numpy as np
    >>> nav = CLICK_MODELS["navigational"]
    >>> nav
    CascadeModel('navigational', click=[0.05, 0.3, 0.5, 0.7, 0.95], stop=[0.2, 0.3, 0.5, 0.7, 0.9])
    >>> perfect = CLICK_MODELS["perfect"]
    >>> perfect.clicks([4, 0, 4, -1], np.random.default_rng(0)).tolist()
    [True, False, True, False]
    """

    kind: ClassVar[str] = "cascade"

    def __init__(self, name: str, p_click: Sequence[float], p_stop: Sequence[float]) -> None:
        super().__init__(name)
        self.p_click = _table(p_click, "p_click")
        self.p_stop = _table(p_stop, "p_stop")

    def _clicks_batch(self, shifted: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        u = rng.random((2, *shifted.shape))
        would_click = u[0] < self.p_click[shifted]
        would_stop = would_click & (u[1] < self.p_stop[shifted])
        # the user reaches slot r iff no earlier slot was a click-and-stop
        stopped_before = np.cumsum(would_stop, axis=1) - would_stop
        return would_click & (stopped_before == 0)

    def __repr__(self) -> str:
        c = [float(x) for x in self.p_click[1:]]
        s = [float(x) for x in self.p_stop[1:]]
        return f"CascadeModel({self.name!r}, click={c}, stop={s})"


class PositionBasedModel(ClickModel):
    """Position-based model: examine rank ``r`` with ``γ_r``, click if attracted (``α_g``).

    Parameters
    ----------
    name
        Label of the configuration.
    attractiveness
        ``α_g``, the click probability of an examined result of grade 0..4.
    examination
        ``γ_1, γ_2, ...``; ranks beyond the given ones use the power law.
    eta
        Exponent of the default examination curve ``γ_r = (1/r)^η``.

    Examples
    --------
    >>> import numpy as np
    >>> pbm = CLICK_MODELS["pbm"]
    >>> pbm.examination(4).round(3).tolist()
    [1.0, 0.5, 0.333, 0.25]
    >>> clicks = pbm.clicks_batch(np.full((20000, 2), 4), np.random.default_rng(0))
    >>> bool(abs(clicks[:, 1].mean() - 0.5 * 0.95) < 0.02)   # γ_2 · α_4
    True
    """

    kind: ClassVar[str] = "pbm"

    def __init__(
        self,
        name: str,
        attractiveness: Sequence[float],
        examination: Sequence[float] | None = None,
        eta: float = 1.0,
    ) -> None:
        super().__init__(name)
        self.attractiveness = _table(attractiveness, "attractiveness")
        self.gamma = None if examination is None else np.asarray(examination, dtype=float)
        if self.gamma is not None and (np.any(self.gamma < 0) or np.any(self.gamma > 1)):
            raise ValueError("examination probabilities must be in [0, 1]")
        self.eta = float(eta)

    def examination(self, n: int) -> np.ndarray:
        """``γ_1..γ_n``."""
        gamma = (1.0 / np.arange(1, n + 1)) ** self.eta
        if self.gamma is not None:
            m = min(n, len(self.gamma))
            gamma[:m] = self.gamma[:m]
        return gamma

    def _clicks_batch(self, shifted: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        p = self.examination(shifted.shape[1])[None, :] * self.attractiveness[shifted]
        return rng.random(shifted.shape) < p

    def __repr__(self) -> str:
        a = [float(x) for x in self.attractiveness[1:]]
        return f"PositionBasedModel({self.name!r}, attractiveness={a}, eta={self.eta})"


#: the configurations by name (Hofmann et al. TOIS 2013; PBM as above)
CLICK_MODELS: dict[str, ClickModel] = {
    "perfect": CascadeModel("perfect", [0.0, 0.2, 0.4, 0.8, 1.0], [0.0] * 5),
    "navigational": CascadeModel(
        "navigational", [0.05, 0.3, 0.5, 0.7, 0.95], [0.2, 0.3, 0.5, 0.7, 0.9]
    ),
    "informational": CascadeModel(
        "informational", [0.4, 0.6, 0.7, 0.8, 0.9], [0.1, 0.2, 0.3, 0.4, 0.5]
    ),
    "almost_random": CascadeModel("almost_random", [0.4, 0.45, 0.5, 0.55, 0.6], [0.5] * 5),
    "pbm": PositionBasedModel("pbm", [0.05, 0.3, 0.5, 0.7, 0.95]),
}


def get_click_model(name: str) -> ClickModel:
    """The click model registered under ``name``."""
    try:
        return CLICK_MODELS[name]
    except KeyError:
        raise ValueError(
            f"unknown click model {name!r}; choose from {', '.join(CLICK_MODELS)}"
        ) from None
