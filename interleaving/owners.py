"""Whose copy of each shown document a page shows.

Two rankers may return the same document with different fields (a price, a snippet, a
title): the interleaved page shows one copy, and which one must not depend on which
ranker answered first. The rule, for every method:

* **A slot with a team** (team-draft interleaving and multileaving, SOSM: the record's
  ``teams``): the copy of the ranker whose team the document is in, the ranker a click on
  it credits (Radlinski et al. 2008, Algorithm 2).
* **A slot without a team** (team ``-1``: the shared top of identical lists, or a document
  past the end of a shorter list), and every slot of the methods without teams
  (probabilistic interleaving and multileaving, balanced interleaving, where a click
  credits each ranker by the rank or the probability with which it put the document
  there): the copy of the ranker that ranks the document **highest**; between rankers that
  rank it equally high, the first participant (participants are in arm order, so the
  ranker added to the experiment first).

:func:`owners` applies it; the service builds the page from the owners' copies
(``service/search/serve.py``, ``service/search/paging.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def owners(record: dict[str, Any] | None, shown: Sequence[str],
           rankings: Sequence[Sequence[str]]) -> list[int]:
    """The participant (index into ``rankings``) whose copy of each shown document is
    shown; ``-1`` for a document no ranking holds. ``record`` is the interleaving's
    (None: one ranking served alone).

    Examples
    --------
    >>> owners({"teams": [-1, 1, 0]}, ["a", "b", "c"], [["a", "c", "b"], ["a", "b", "c"]])
    [0, 1, 0]
    >>> owners({"post": []}, ["b", "a"], [["a", "b"], ["b", "a"]])
    [1, 0]
    >>> owners(None, ["x"], [["x"]])
    [0]
    """
    teams = (record or {}).get("teams")
    ranks = [{doc: r for r, doc in reversed(list(enumerate(ranking)))} for ranking in rankings]
    out = []
    for slot, doc in enumerate(shown):
        team = int(teams[slot]) if teams is not None and slot < len(teams) else -1
        if 0 <= team < len(rankings) and doc in ranks[team]:
            out.append(team)
            continue
        holders = [(rank[doc], p) for p, rank in enumerate(ranks) if doc in rank]
        out.append(min(holders)[1] if holders else -1)
    return out
