"""Best-item evaluation (Yan 2022, §5.4): rank runs by how high they place the best items.

Once judging has found the probably best items of each query, a ranker is measured by
the reciprocal rank of the first best item it returns, averaged over queries (MRR): "If
we employ preference judgments to identify the probably best items for each query, we can
measure rankers by their ability to place these items as high as possible" (abstract).

Formats (TREC):

* qrels: ``qid iter docid rel`` (``qid docid rel`` also accepted); an item with ``rel > 0``
  is a best item. A judging campaign exports exactly its best sets this way.
* run: ``qid Q0 docid rank score tag``. As trec_eval does, the rank column is ignored:
  documents are ordered by decreasing score, ties by decreasing docid.

MRR averages over every query of the qrels that has a best item; a query the run does
not answer, or answers without any best item (within ``depth``, if given), scores 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

Qrels = dict[str, set[str]]
Run = dict[str, list[str]]


def parse_qrels(lines: Iterable[str]) -> Qrels:
    """Best items per query from qrels lines (``rel > 0``).

    Examples
    --------
    >>> parse_qrels(["q1 0 d3 1", "q1 0 d4 0", "q2 d9 2", ""])
    {'q1': {'d3'}, 'q2': {'d9'}}
    """
    best: Qrels = {}
    for n, line in enumerate(lines, 1):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if len(f) == 4:
            qid, _, doc, rel = f
        elif len(f) == 3:
            qid, doc, rel = f
        else:
            raise ValueError(f"qrels line {n}: expected 3 or 4 fields, got {len(f)}")
        try:
            grade = float(rel)
        except ValueError:
            raise ValueError(f"qrels line {n}: relevance {rel!r} is not a number") from None
        if grade > 0:
            best.setdefault(qid, set()).add(doc)
    return best


def parse_run(lines: Iterable[str]) -> Run:
    """Ranked documents per query from TREC run lines (trec_eval's order).

    Examples
    --------
    >>> parse_run(["q1 Q0 a 1 0.5 r", "q1 Q0 b 2 0.9 r", "q1 Q0 c 3 0.5 r"])
    {'q1': ['b', 'c', 'a']}
    """
    rows: dict[str, list[tuple[float, str]]] = {}
    for n, line in enumerate(lines, 1):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if len(f) != 6:
            raise ValueError(f"run line {n}: expected 6 fields, got {len(f)}")
        qid, _, doc, _, score, _ = f
        try:
            s = float(score)
        except ValueError:
            raise ValueError(f"run line {n}: score {score!r} is not a number") from None
        rows.setdefault(qid, []).append((s, doc))
    return {q: [d for _, d in sorted(r, reverse=True)] for q, r in rows.items()}


def read_qrels(path: str | Path) -> Qrels:
    with open(path) as fh:
        return parse_qrels(fh)


def read_run(path: str | Path) -> Run:
    with open(path) as fh:
        return parse_run(fh)


def reciprocal_rank(ranking: list[str], best: set[str], depth: int | None = None) -> float:
    """``1 / rank`` of the first best item in ``ranking`` (0 if none within ``depth``).

    Examples
    --------
    >>> reciprocal_rank(["x", "y", "b"], {"b"}), reciprocal_rank(["x", "y", "b"], {"b"}, 2)
    (0.3333333333333333, 0.0)
    """
    for r, doc in enumerate(ranking if depth is None else ranking[:depth], 1):
        if doc in best:
            return 1.0 / r
    return 0.0


def mrr(run: Run, qrels: Qrels, depth: int | None = None) -> float:
    """Mean reciprocal rank of the best items over the queries of ``qrels``.

    Examples
    --------
    >>> q = {"1": {"a"}, "2": {"b", "c"}, "3": {"z"}}
    >>> mrr({"1": ["a"], "2": ["x", "c", "b"]}, q)      # (1 + 1/2 + 0) / 3
    0.5
    """
    queries = [q for q, b in qrels.items() if b]
    if not queries:
        raise ValueError("the qrels name no best item")
    return sum(reciprocal_rank(run.get(q, []), qrels[q], depth) for q in queries) / len(queries)


@dataclass(frozen=True)
class RunScore:
    name: str
    mrr: float
    answered: int  # queries of the qrels the run answers
    queries: int  # queries of the qrels with a best item


def evaluate(runs: Mapping[str, Run], qrels: Qrels, depth: int | None = None) -> list[RunScore]:
    """MRR of every run, best first (ties by name): the ordering of runs of §5.4.

    Examples
    --------
    >>> q = {"1": {"a"}, "2": {"b"}}
    >>> [(s.name, s.mrr) for s in evaluate({"r1": {"1": ["x", "a"]}, "r2": {"1": ["a"]}}, q)]
    [('r2', 0.5), ('r1', 0.25)]
    """
    queries = [q for q, b in qrels.items() if b]
    scores = [
        RunScore(name, mrr(run, qrels, depth), sum(q in run for q in queries), len(queries))
        for name, run in runs.items()
    ]
    return sorted(scores, key=lambda s: (-s.mrr, s.name))


def kendall_tau(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Kendall's tau-b between two scorings of the same runs (§5.4 compares orderings).

    Examples
    --------
    >>> kendall_tau({"x": 3, "y": 2, "z": 1}, {"x": 30, "y": 20, "z": 10})
    1.0
    >>> kendall_tau({"x": 3, "y": 2, "z": 1}, {"x": 10, "y": 20, "z": 30})
    -1.0
    """
    names = sorted(set(a) & set(b))
    conc = disc = ta = tb = 0
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            da, db = a[x] - a[y], b[x] - b[y]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    den = ((conc + disc + ta) * (conc + disc + tb)) ** 0.5
    return (conc - disc) / den if den else 0.0
