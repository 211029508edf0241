"""MergeGuard: MergeDTS with the non-Condorcet guard, a policy made of components.

MergeGuard is MergeDTS (Li et al. 2020; :mod:`bandits.merge_dts`: the same batching,
pair rule :class:`~bandits.merge_dts.DTSPairs` and elimination test
:class:`~bandits.merge_dts.HoeffdingElimination`, tuned preset α = 0.8⁶, M = 16,
C = 4·10⁶) with the component
:class:`~bandits.non_condorcet_guard.NonCondorcetGuard`, which adds what Li et al.
2020, §6.5 shows is missing: a check that the data still admit a Condorcet winner
(:mod:`bandits.non_condorcet_guard`, with what a flag does), and the champion's
verification and readmission after convergence (:mod:`bandits.champion_verification`).
This module only declares which components MergeGuard is made of (the guard and the
verification are shared with MergeMED, so they live in modules of their own), one level
below :class:`~bandits.merge_base.MergeBandit` like every Merge policy.

Interface: as MergeDTS (``select``, ``select_at``, ``sync_step``, ``structure``,
``update``, add/retire, ``state_dict``/``from_state``); the guard adds its flag, mode,
readmissions and report to ``structure()`` and the state.
"""

from __future__ import annotations

from typing import ClassVar

from bandits.merge_base import MergeBandit
from bandits.merge_dts import HOEFFDING, DTSPairs, MergeDTS
from bandits.non_condorcet_guard import GUARD_PARAMS, NonCondorcetGuard
from bandits.params import Param


class MergeGuard(MergeBandit):
    """MergeDTS plus an anytime-valid non-Condorcet guard (see the module docstring):
    the components :class:`~bandits.merge_dts.DTSPairs`,
    :class:`~bandits.merge_dts.HoeffdingElimination` and
    :class:`~bandits.non_condorcet_guard.NonCondorcetGuard`.

    Parameters (besides MergeDTS's ``preset``, ``alpha``, ``batch_size``, ``c``,
    ``horizon``): ``delta`` the false-flag rate over a run (default 0.01);
    ``on_non_condorcet`` ``"flag"`` or ``"switch"``; ``check_every`` comparisons between
    two checks (1000); ``verify_scale`` the fraction of the elimination threshold at
    which the champion must refute each eliminated arm (default 1.0: MergeDTS's own
    bound). Declared in ``PARAMS`` (the guard's in
    :data:`bandits.non_condorcet_guard.GUARD_PARAMS`).

    Examples
    --------
    >>> import numpy as np
    >>> from bandits.matrices import non_condorcet
    >>> P = non_condorcet(8, gap=0.05, upset=0.3, seed=1)
    >>> env = np.random.default_rng(0)
    >>> b = MergeGuard(8, seed=1, check_every=200)
    >>> for _ in range(60000):
    ...     i, j = b.select()
    ...     b.update(i, j, float(env.random() < P[i, j]))
    >>> b.structure()["non_condorcet"]["flagged"]
    True
    """

    name = "mergeguard"
    PRESETS = MergeDTS.PRESETS  # Li et al. 2020, §5.5 (tuned) and Algorithm 1 line 2
    PARAMS: ClassVar[dict[str, Param]] = {**MergeBandit.PARAMS, **GUARD_PARAMS}
    PAIRS = DTSPairs
    ELIMINATION = HOEFFDING
    GUARD = NonCondorcetGuard
    condorcet_guard = True
    _round_up = True
