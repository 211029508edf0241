"""Preparing a pool and cleaning judgments: exact duplicates (§5.2) and test pairs (§5.1).

Pure functions over plain Python data; the live campaign calls them before judging
(duplicates) and as judgments arrive (assessor quality).

Exact duplicates (Yan 2022, §5.2). The TREC 2021 pools held passages that were
"character-for-character identical"; 460 of 1,570 had a duplicate in the same pool, and
assessors were asked to choose between identical passages. "If we had encountered these
duplicates earlier ... we would have merged them into equivalence classes": that is what
:func:`merge_duplicates` does — one item per distinct text, judged once, its verdict
expanded to every member afterwards (:meth:`Duplicates.expand`).

Test pairs (Yan 2022, §5.1). Each task of ten target pairs carries three test pairs (a
question, its best-known answer and an off-topic passage). "Data from workers who did not
correctly answer at least 75% of the test pairs was excluded": one task needs three of
three, two tasks five of six. :func:`assessor_quality` computes the verdict per assessor,
:func:`drop_excluded` removes the excluded assessors' judgments.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Duplicates:
    """Equivalence classes of a pool under exact equality of text.

    ``groups[k]`` lists the ids of class ``k`` in pool order; its first id represents it.
    ``index[id]`` is the class of ``id``.
    """

    groups: tuple[tuple[Hashable, ...], ...]
    index: Mapping[Hashable, int]

    @property
    def representatives(self) -> list[Hashable]:
        """One id per class, in pool order: the items to judge."""
        return [g[0] for g in self.groups]

    @property
    def merged(self) -> int:
        """How many items the merge removed."""
        return sum(len(g) - 1 for g in self.groups)

    def expand(self, classes: Iterable[int]) -> list[Hashable]:
        """Every id of the given classes (e.g. the best set), in pool order."""
        wanted = set(int(c) for c in classes)
        return [i for k, g in enumerate(self.groups) if k in wanted for i in g]


def merge_duplicates(items: Mapping[Hashable, str] | Sequence[tuple[Hashable, str]]) -> Duplicates:
    """Group the items of a pool whose texts are identical, character for character.

    ``items`` maps an id to its text (or is a sequence of ``(id, text)``). Nothing is
    normalised (case, whitespace): §5.2 is about exact duplicates; near-duplicates are the
    assessors' business, and the algorithms tolerate ties (requirement 2 of §3.1).

    Examples
    --------
    >>> d = merge_duplicates({"p1": "Nicole Jaffe ...", "p2": "Taliesin Jaffe ...",
    ...                       "p3": "Nicole Jaffe ...", "p4": "nicole jaffe ..."})
    >>> d.groups
    (('p1', 'p3'), ('p2',), ('p4',))
    >>> d.representatives, d.merged, d.index["p3"]
    (['p1', 'p2', 'p4'], 1, 0)
    >>> d.expand([0])
    ['p1', 'p3']
    """
    pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
    by_text: dict[str, int] = {}
    groups: list[list[Hashable]] = []
    index: dict[Hashable, int] = {}
    for item_id, text in pairs:
        if item_id in index:
            raise ValueError(f"item id {item_id!r} appears twice in the pool")
        k = by_text.setdefault(str(text), len(groups))
        if k == len(groups):
            groups.append([])
        groups[k].append(item_id)
        index[item_id] = k
    return Duplicates(tuple(tuple(g) for g in groups), index)


@dataclass(frozen=True)
class Quality:
    """One assessor's record on test pairs."""

    correct: int
    answered: int
    passed: bool

    @property
    def rate(self) -> float:
        return self.correct / self.answered if self.answered else float("nan")


def assessor_quality(
    answers: Iterable[tuple[Hashable, bool]], threshold: float = 0.75
) -> dict[Hashable, Quality]:
    """Per assessor: test pairs answered, answered correctly, and whether the rate reaches
    ``threshold`` (§5.1: at least 75 %).

    ``answers`` holds ``(assessor, correct)`` for every test pair judged. An assessor
    passes when ``correct >= threshold * answered`` (exact in integers, so 3 of 4 passes
    at 75 %, 2 of 3 does not).

    Examples
    --------
    >>> q = assessor_quality([("a", True)] * 3 + [("b", True), ("b", True), ("b", False)]
    ...                      + [("c", True)] * 5 + [("c", False)])
    >>> q["a"].passed, q["b"].passed, q["c"].passed      # 3/3, 2/3, 5/6
    (True, False, True)
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    tally: dict[Hashable, list[int]] = {}
    for who, ok in answers:
        t = tally.setdefault(who, [0, 0])
        t[0] += bool(ok)
        t[1] += 1
    out = {}
    for who, (c, n) in tally.items():
        # compare in integers where possible: c / n >= threshold without float rounding
        frac = _fraction(threshold)
        passed = c * frac[1] >= frac[0] * n if frac else c >= threshold * n
        out[who] = Quality(c, n, bool(passed))
    return out


def _fraction(x: float, max_den: int = 1000) -> tuple[int, int] | None:
    for den in range(1, max_den + 1):
        num = round(x * den)
        if math.isclose(num / den, x, abs_tol=1e-12):
            return (num, den)
    return None


def drop_excluded(
    judgments: Iterable[Mapping[str, Any]], quality: Mapping[Hashable, Quality],
    key: str = "assessor",
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """Split judgments into (kept, dropped): dropped are those of assessors who failed.

    Assessors without any test pair yet are kept (they have not been measured).

    Examples
    --------
    >>> q = {"a": Quality(3, 3, True), "b": Quality(1, 3, False)}
    >>> kept, dropped = drop_excluded([{"assessor": "a", "pair": (0, 1)},
    ...                                {"assessor": "b", "pair": (0, 2)}], q)
    >>> [j["pair"] for j in kept], [j["pair"] for j in dropped]
    ([(0, 1)], [(0, 2)])
    """
    kept, dropped = [], []
    for j in judgments:
        q = quality.get(j[key])
        (dropped if q is not None and not q.passed else kept).append(j)
    return kept, dropped
