"""Team-draft interleaving and team-draft multileaving.

Team-draft interleave (Radlinski, Kurup, Joachims, "How does clickthrough data reflect
retrieval quality?", CIKM 2008, Algorithm 2): like captains picking teams, at each step
the ranker whose team is smaller (a coin decides when they are equal) adds its highest
ranked document not yet shown, and that document joins its team. A click credits the
team of the clicked document; the team with more credited clicks wins.

Team-draft multileave (Schuth, Sietsma, Whiteson, Lefortier, de Rijke, "Multileaved
comparisons for fast online evaluation", CIKM 2014, §3.1) is the same draft among any
number of rankers: the rankers with the smallest team are eligible and one of them,
chosen uniformly at random, picks next. With two rankers the two are the same method.

Decisions, where the papers leave room:

* **Identical top prefix.** Documents on which all participants agree position by
  position are shown first and belong to no team (team ``-1``); clicks on them count as
  clicks (so a comparison with only such clicks is a tie) but credit nobody.
* **Nested lists** (one list a prefix of the other, e.g. the same ranker asked for 5
  and for 10 results; :func:`interleaving.base.nested_depth`): the longest list is
  shown as it is and every document belongs to no team, so clicks give a tie: the
  identical-prefix rule carried past the shorter list's end.
* **A list that runs out** (shorter than the page, or everything it has is already
  shown): it stops picking and the others keep drafting until the page is full or every
  list is exhausted. An empty list never gets a team member.
* **Seeding**: the random choices come from the ``rng`` argument; the service seeds it
  with :func:`interleaving.seed_for` so that a repeated view shows the same list.
* **The next page** continues the draft (team sizes carry over, shown documents are
  skipped), drawing from ``rng`` as the one-shot draft would: a ranker's first ``k``
  picks are the same from its top ``k`` as from its top ``N·k``, so pages 1..N are the
  first ``N·k`` of one draft of depth ``N·k``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from interleaving.base import (
    Interleaver,
    Outcome,
    identical_prefix,
    nested_depth,
    pairwise_from_scores,
)


def team_draft(
    rankings: list[list[str]], k: int, rng: np.random.Generator,
    shown: list[str] | None = None, teams: list[int] | None = None,
) -> tuple[list[str], list[int]]:
    """The shown list and the team (participant index, ``-1`` for none) of each slot.

    Shared by team-draft interleave and multileave and by SOSM's list creation. Given
    the ``shown`` list and ``teams`` of an earlier page, the draft continues from them
    (the next page): team sizes are counted from ``teams``, and the identical prefix
    grows only while everything shown so far is that prefix.
    """
    m = len(rankings)
    shown = list(shown or [])
    teams = list(teams or [])
    if m > 1 and nested_depth(rankings) is not None and all(t == -1 for t in teams):
        longest = max(rankings, key=len)
        if longest[: len(shown)] == shown:  # nested lists: shown as one, no team
            shown = list(longest[: max(k, len(shown))])
            return shown, [-1] * len(shown)
    prefix = identical_prefix(rankings, k) if m > 1 else 0
    if all(t == -1 for t in teams) and rankings and rankings[0][: len(shown)] == shown:
        # the page so far is all identical prefix: it goes on as far as the lists agree
        shown += rankings[0][len(shown):prefix]
        teams += [-1] * (len(shown) - len(teams))
    in_list = set(shown)
    pointer = [0] * m
    size = [teams.count(j) for j in range(m)]
    ends = [len(r) for r in rankings]
    js = range(m)
    random = rng.random
    while len(shown) < k:
        # advance each pointer past documents already shown; exhausted rankers drop out;
        # the eligible are the live rankers with the smallest team
        eligible: list[int] = []
        smallest = -1
        for j in js:
            r, p, end = rankings[j], pointer[j], ends[j]
            while p < end and r[p] in in_list:
                p += 1
            pointer[j] = p
            if p < end:
                if smallest < 0 or size[j] < smallest:
                    smallest, eligible = size[j], [j]
                elif size[j] == smallest:
                    eligible.append(j)
        if not eligible:
            break
        # uniform among the eligible (rng.random() is ~5x cheaper than rng.integers())
        j = eligible[int(random() * len(eligible))] if len(eligible) > 1 else eligible[0]
        doc = rankings[j][pointer[j]]
        shown.append(doc)
        in_list.add(doc)
        teams.append(j)
        size[j] += 1
    return shown, teams


def team_credit(teams: list[int], clicked: list[int], m: int) -> list[float]:
    """Clicks credited to each of ``m`` teams."""
    scores = [0.0] * m
    for p in clicked:
        t = teams[p]
        if t >= 0:
            scores[t] += 1.0
    return scores


class TeamDraft(Interleaver):
    """Team-draft interleave of two rankings (Radlinski et al. 2008).

    Examples
    --------
    >>> import numpy as np
    >>> td = TeamDraft()
    >>> shown, record = td.interleave([["a", "b", "c"], ["a", "c", "d"]], 4,
    ...                               np.random.default_rng(1))
    >>> shown[0], record["teams"][0]     # shared top document: shown first, no team
    ('a', -1)
    >>> sorted(shown)
    ['a', 'b', 'c', 'd']
    >>> winner = record["teams"].index(1)   # a click on ranker 1's first pick
    >>> td.credit(record, [winner])
    [(0, 1, 0.0)]
    >>> td.credit(record, [])               # no clicks, no duel
    []
    """

    name: ClassVar[str] = "team_draft"
    pairwise: ClassVar[bool] = True

    def _interleave(
        self, rankings: list[list[str]], k: int, rng: np.random.Generator
    ) -> tuple[list[str], dict[str, Any]]:
        shown, teams = team_draft(rankings, k, rng)
        return shown, {"teams": teams}

    def _extend(
        self, record: dict[str, Any], shown: list[str], rankings: list[list[str]], k: int,
        rng: np.random.Generator,
    ) -> tuple[list[str], dict[str, Any]]:
        shown, teams = team_draft(rankings, k, rng, shown, record["teams"])
        return shown, {"teams": teams}

    def _credit(self, record: dict[str, Any], clicked: list[int]) -> list[Outcome]:
        return pairwise_from_scores(team_credit(record["teams"], clicked, int(record["n"])))


class TeamDraftMultileave(TeamDraft):
    """Team-draft multileave of any number of rankings (Schuth et al. 2014, §3.1).

    Every pair of participants is compared on the clicks credited to their teams; a
    participant without a team member in the shown list has credit 0.

    Examples
    --------
    >>> import numpy as np
    >>> tdm = TeamDraftMultileave()
    >>> shown, record = tdm.interleave([["a", "b"], ["c", "d"], ["e", "f"]], 3,
    ...                                np.random.default_rng(0))
    >>> sorted(shown)                       # each ranker drafts its top document
    ['a', 'c', 'e']
    >>> first = record["teams"][0]
    >>> [o for o in tdm.credit(record, [0]) if first in o[:2]] == [
    ...     (min(first, j), max(first, j), 1.0 if first < j else 0.0)
    ...     for j in range(3) if j != first]
    True
    """

    name: ClassVar[str] = "team_draft_multileave"
    pairwise: ClassVar[bool] = False
