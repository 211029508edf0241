"""Sample-Only Scored Multileave (SOSM), the multileaving method MDB uses.

Brost, Cox, Seldin, Lioma, "An improved multileaving algorithm for online ranker
evaluation", SIGIR 2016; used by the MDB paper (Brost et al. 2016, §2.2 "SOSM
was found to outperform the other multileaving methods ... We used SOSM to multileave
rankers for our multi-dueling bandit algorithm", and §4.1: top-10 shown, clicks from a
probabilistic user model). The MDB paper gives only prose; the definition followed here:

* **Creation** is team-draft multileaving (see :mod:`interleaving.team_draft`): the
  "sample" is the shown list.
* **Scoring** ignores the teams. Every participant is scored on the shown list only
  (hence "sample only"): it ranks the shown documents by its own order, and a clicked
  document at rank ``ρ_j(d)`` within that re-ranked sample earns it ``1 / ρ_j(d)``.
  Pairwise outcomes compare the scores.
* **Documents a participant did not retrieve.** In the papers' setting every feature
  ranker scores every document, so each participant orders the whole sample. Rankers
  behind an HTTP API return only their top ``k``; a shown document missing from a
  participant's list ranks below all of its retrieved ones, in unknown order. It gets
  the *average* credit of those bottom ranks, ``mean(1/ρ for ρ = n_j+1 .. |L|)`` with
  ``n_j`` the participant's retrieved shown documents — so every participant's credits
  over the sample sum to the same total, and clicks at random favour nobody. An empty
  list is a ranker of unknown order: it wins a click only where the other ranks the
  clicked document in the bottom half of the page. (Giving
  such documents no credit, as a literal reading of "only scored" would, rewards
  rankers for overlapping with the others: under random clicks a participant whose
  list covers more of the page wins.)

**The next page** continues the team draft (the record keeps the teams for it, though
they do not score) and scores the whole sample again with the deeper lists: the record
of pages 1..N is that of one SOSM list of depth N·k.

This is what makes SOSM robust to similar rankers (the failure of team-draft credit that
Brost et al. describe): two rankers that order the sample the same way get the same
score, whoever happened to draft the clicked document. **Departure to note:** the
reciprocal-rank credit is our reading of the paper's description; the open-source
implementation accompanying later multileaving work (Oosterhuis and de Rijke, CIKM 2017)
raises the rank to the power τ of probabilistic multileave instead. The outcomes'
direction — which ranker ranks the clicked documents higher within the sample — is
the same; only the weighting of several clicks differs. ``power`` selects it.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from interleaving.base import Interleaver, Outcome, pairwise_from_scores
from interleaving.team_draft import team_draft


def sample_ranks(rankings: list[list[str]], shown: list[str]) -> list[list[int]]:
    """For each participant, the 1-based rank of each shown document within the shown
    documents it retrieved (0 where it did not retrieve the document).

    Examples
    --------
    >>> sample_ranks([["x", "b", "a"], ["a"]], ["a", "b", "c"])
    [[2, 1, 0], [1, 0, 0]]
    >>> sosm = SOSM()
    >>> record = {"method": "sosm", "n": 2, "len": 3, "ranks": [[2, 1, 0], [1, 0, 0]]}
    >>> sosm.credit(record, [1])     # ranker 0 ranks "b" 1st; ranker 1 lacks it: (1/2+1/3)/2
    [(0, 1, 1.0)]
    >>> sosm.credit(record, [2])     # both lack "c": 1/3 against (1/2 + 1/3)/2
    [(0, 1, 0.0)]
    """
    out = []
    for ranking in rankings:
        pos = {d: r for r, d in enumerate(ranking)}
        scored = sorted((pos[d], i) for i, d in enumerate(shown) if d in pos)
        ranks = [0] * len(shown)
        for rho, (_, i) in enumerate(scored, start=1):
            ranks[i] = rho
        out.append(ranks)
    return out


class SOSM(Interleaver):
    """Sample-Only Scored Multileave of any number of rankings (Brost et al. 2016).

    Parameters
    ----------
    power
        Exponent of the rank in the credit ``1 / ρ^power`` (1 = reciprocal rank).

    Examples
    --------
    >>> import numpy as np
    >>> sosm = SOSM()
    >>> shown, record = sosm.interleave([["a", "b"], ["b", "a"], ["a", "b"]], 2,
    ...                                 np.random.default_rng(0))
    >>> outcomes = sosm.credit(record, [shown.index("a")])
    >>> outcomes                       # rankers 0 and 2 rank "a" first: they tie, 1 loses
    [(0, 1, 1.0), (0, 2, 0.5), (1, 2, 0.0)]
    """

    name: ClassVar[str] = "sosm"
    pairwise: ClassVar[bool] = False

    def __init__(self, power: float = 1.0) -> None:
        self.power = float(power)

    def _interleave(
        self, rankings: list[list[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        shown, teams = team_draft(rankings, k, rng)
        # the teams do not score (sample only); they are kept so the draft can continue
        return shown, {"ranks": sample_ranks(rankings, shown), "teams": teams}

    def _extend(
        self, record: dict[str, Any], shown: list[str], rankings: list[list[str]], k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        if "teams" not in record:
            raise ValueError("this SOSM record predates continuation (no teams): it cannot "
                             "be continued")
        shown, teams = team_draft(rankings, k, rng, shown, record["teams"])
        # every shown document re-ranked within the whole sample, by the deeper lists
        return shown, {"ranks": sample_ranks(rankings, shown), "teams": teams}

    def _credit(self, record: dict[str, Any], clicked: list[int]) -> list[Outcome]:
        n = int(record["len"])
        weights = [rho ** -self.power for rho in range(1, n + 1)]
        scores = []
        for ranks in record["ranks"]:
            n_ret = sum(1 for r in ranks if r > 0)
            missing = sum(weights[n_ret:]) / (n - n_ret) if n_ret < n else 0.0
            scores.append(sum(weights[ranks[p] - 1] if ranks[p] > 0 else missing
                              for p in clicked))
        return pairwise_from_scores(scores)
