"""A seeded synthetic search world: queries, graded documents, rankers of graded quality.

It stands in for a learning-to-rank collection (MSLR, Yahoo!) and its feature rankers,
which the papers use to build their dueling-bandit problems (Li et al. 2020, §5.2–5.3;
Brost et al. 2016, §4.1: "for a given feature, we construct a ranker which ranks documents only
according to the score of that feature ... many of the features perform similarly").

Construction, all from one ``numpy`` generator seeded with ``seed``:

* each query ``q`` has between ``docs_per_query[0]`` and ``docs_per_query[1]``
  documents ``"q{q}-d{i}"`` with relevance grades 0–4 drawn from ``grade_probs``
  (skewed towards 0, like the LTR collections; every query has at least one relevant
  document) and a latent relevance ``ρ = grade + N(0, 0.5²)``;
* ranker ``r`` scores a document ``β_r · ρ + ε_r`` and ranks by score. The quality
  ``β_r`` is spread uniformly over ``quality_range``; a fraction ``uninformative`` of
  the rankers has ``β = 0`` (they rank at random); the noise ``ε_r`` (unit variance)
  is half shared within a *family* of rankers (like BM25 on body, title and anchor
  text), so rankers of a family are correlated; a fraction ``near_tied`` of the
  rankers are near-copies of another ranker (same ``β``, 90% shared noise), which
  interleaving can barely tell apart;
* with ``clear_best=True`` one ranker gets ``β = clear_best_quality`` (default 2.5,
  far above the rest) and its own noise: a clear Condorcet winner.

``true_best`` is the ranker with the highest mean NDCG@10.

Examples
--------
>>> w = World(seed=3, n_rankers=6, n_queries=20, clear_best=True)
>>> w.kinds[w.true_best]
'clear best'
>>> docs = w.ranking(w.true_best, 0, k=5)
>>> len(docs), docs[0].startswith("q0-d")
(5, True)
>>> w.query_id(w.query_text(7))
7
>>> bool(w.ndcg(w.true_best) > max(w.ndcg(r) for r in range(6) if r != w.true_best))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

_ADJECTIVE_TEXT = (
    "alpine ancient autumn blue bright calm cheap classic coastal cold cosy crisp dark "
    "desert easy electric fast fresh golden green hidden historic hot local lunar modern "
    "northern old open quiet rapid red rural silver simple small smart solar spicy "
    "urban vintage warm wild winter"
)
_NOUN_TEXT = (
    "bakery bicycle bridge cabin camera castle coffee concert forest garden guitar "
    "harbour island jacket kayak lake lantern library market meadow museum noodles "
    "orchard piano pizza railway recipe river runner sailboat school soup stadium "
    "telescope theatre tower trail valley village volcano"
)
_ADJECTIVES = _ADJECTIVE_TEXT.split()
_NOUNS = _NOUN_TEXT.split()


def _dcg_discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


class World:
    """A synthetic learning-to-rank world with ``n_rankers`` rankers.

    Parameters
    ----------
    seed
        Everything is a function of this seed (and the other parameters).
    n_rankers
        Number of rankers K.
    n_queries
        Number of queries.
    docs_per_query
        Inclusive range of the number of documents per query.
    clear_best
        Make one ranker clearly better than all others.
    grade_probs
        Probabilities of grades 0..4.
    quality_range
        Range of the informative rankers' quality ``β``.
    uninformative, near_tied
        Fractions of rankers that rank at random / nearly copy another ranker.
    family_size
        Rankers per noise family.
    clear_best_quality
        ``β`` of the clear best ranker.
    """

    def __init__(
        self,
        seed: int,
        n_rankers: int,
        n_queries: int = 200,
        docs_per_query: tuple[int, int] = (10, 40),
        *,
        clear_best: bool = False,
        grade_probs: tuple[float, ...] = (0.45, 0.28, 0.16, 0.08, 0.03),
        quality_range: tuple[float, float] = (0.1, 1.0),
        uninformative: float = 0.1,
        near_tied: float = 0.2,
        family_size: int = 4,
        clear_best_quality: float = 2.5,
    ) -> None:
        if int(n_rankers) < 1:
            raise ValueError(f"n_rankers must be at least 1, got {n_rankers}")
        if int(n_queries) < 1:
            raise ValueError(f"n_queries must be at least 1, got {n_queries}")
        lo, hi = (int(x) for x in docs_per_query)
        if not 1 <= lo <= hi:
            raise ValueError(f"docs_per_query must be 1 <= lo <= hi, got {docs_per_query}")
        if len(grade_probs) != 5 or abs(sum(grade_probs) - 1.0) > 1e-9:
            raise ValueError("grade_probs must be 5 probabilities summing to 1")
        self.seed = int(seed)
        self.n_rankers = R = int(n_rankers)
        self.n_queries = Q = int(n_queries)
        self.clear_best = bool(clear_best)
        rng = np.random.default_rng(self.seed)

        # ---- queries and documents
        self.n_docs = rng.integers(lo, hi + 1, size=Q)
        D = int(self.n_docs.max())
        valid = np.arange(D)[None, :] < self.n_docs[:, None]
        grades = rng.choice(5, size=(Q, D), p=np.asarray(grade_probs, dtype=float))
        grades = np.where(valid, grades, -1)
        for q in np.flatnonzero(grades.max(axis=1) <= 0):  # at least one relevant doc
            grades[q, rng.integers(self.n_docs[q])] = 1
        self.grade_table = grades.astype(np.int8)  # (Q, D), -1 = no such document
        latent = grades + rng.normal(0.0, 0.5, size=(Q, D))
        self._latent = latent

        # ---- rankers
        beta = rng.uniform(*quality_range, size=R)
        kinds = ["informative"] * R
        order = rng.permutation(R)
        n_uninf = round(uninformative * R)
        n_tied = round(near_tied * R)
        best = int(order[0]) if self.clear_best else -1
        rest = [int(r) for r in order if r != best]
        uninf, tied = rest[:n_uninf], rest[n_uninf : n_uninf + n_tied]
        others = rest[n_uninf + n_tied :] or rest
        family = rng.integers(0, max(1, R // max(1, family_size)), size=R)
        shared_frac = np.full(R, 0.5)
        copy_of = np.full(R, -1)
        for r in uninf:
            beta[r] = 0.0
            kinds[r] = "uninformative"
        for r in tied:
            src = int(others[rng.integers(len(others))])
            if src == r:
                continue
            beta[r], family[r], shared_frac[r], copy_of[r] = beta[src], family[src], 0.9, src
            kinds[r] = f"near-tie of {src}"
        if best >= 0:
            beta[best] = clear_best_quality
            shared_frac[best] = 0.0
            kinds[best] = "clear best"
        family_noise = rng.normal(size=(int(family.max()) + 1, Q, D))
        own_noise = rng.normal(size=(R, Q, D))
        mix = np.sqrt(shared_frac)[:, None, None]
        noise = mix * family_noise[family] + np.sqrt(1.0 - mix**2) * own_noise
        # a near-copy shares 90% of its source's whole noise, not only the family part
        for r in np.flatnonzero(copy_of >= 0):
            noise[r] = mix[r] * noise[copy_of[r]] + np.sqrt(1.0 - mix[r] ** 2) * own_noise[r]
        scores = beta[:, None, None] * latent[None] + noise
        scores = np.where(valid[None], scores, -np.inf)
        self.beta = beta
        self.kinds = kinds
        #: (R, Q, D) document indices in rank order; entries past n_docs[q] are padding
        self.order = np.argsort(-scores, axis=2, kind="stable").astype(np.int16)
        self._ndcg_cache: dict[int, np.ndarray] = {}
        #: with :meth:`add_purchases`: per document its purchase probability after a
        #: click, its price, and whether it is bait (attractive, never bought)
        self.buy_p: np.ndarray | None = None
        self.price: np.ndarray | None = None
        self.bait: np.ndarray | None = None
        self.buyers: int | None = None

        # ---- query texts
        combos = [f"{a} {n}" for a in _ADJECTIVES for n in _NOUNS]
        picks = rng.permutation(len(combos))
        self._texts = [
            combos[picks[q % len(combos)]] + ("" if q < len(combos) else f" {q // len(combos)}")
            for q in range(Q)
        ]
        self._ids = {t: q for q, t in enumerate(self._texts)}

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> World:
        """A world from ``"SEED:K"`` (the ``--world`` argument of the CLI).

        Examples
        --------
        >>> World.from_spec("7:5", n_queries=3).n_rankers
        5
        """
        try:
            seed_s, k_s = spec.split(":")
            seed, k = int(seed_s), int(k_s)
        except ValueError:
            raise ValueError(f"world spec must be SEED:K (two integers), got {spec!r}") from None
        return cls(seed, k, **kwargs)

    # ------------------------------------------------------------------ purchases
    def add_purchases(self, bait: float = 0.5, buy_per_grade: float = 0.15,
                      buyers: int | None = None) -> int:
        """Give the documents a purchase model distinct from their click attractiveness,
        and make one ranker the *buyers'* ranker; returns it.

        A share ``bait`` of the attractive documents (grade 2 or more) is *bait*: clicked
        as its grade says, never bought. Any other document is bought after a click with
        probability ``buy_per_grade × grade`` at its price (log-normal, median about 33).
        The clear best ranker ranks by relevance alone, bait included: it wins the clicks
        and loses the purchases. The buyers' ranker (``buyers``, default the
        informative ranker of the highest NDCG@10 after the best) becomes as good at
        relevance as the clear best, with its own noise, but ranks bait documents last:
        it loses clicks to the best and wins purchases. Every other ranker, and the
        grades, are unchanged; the purchase model draws from its own generator.

        >>> w = World(seed=3, n_rankers=6, n_queries=20, clear_best=True)
        >>> b = w.add_purchases()
        >>> b != w.true_best and w.kinds[b] == "buyers'"
        True
        >>> float(w.buy_p[w.bait].max())
        0.0
        """
        rng = np.random.default_rng([self.seed, 41])
        g = self.grade_table.astype(float)
        valid = self.grade_table >= 0
        self.bait = valid & (g >= 2) & (rng.random(g.shape) < bait)
        self.buy_p = np.where(valid & ~self.bait, buy_per_grade * np.maximum(g, 0), 0.0)
        self.price = np.round(rng.lognormal(3.5, 0.5, size=g.shape), 2)
        best = self.true_best
        if buyers is None:
            nd = self.ndcg_all(10)
            pick = [int(r) for r in np.argsort(-nd, kind="stable")
                    if r != best and self.kinds[r] == "informative"]
            buyers = pick[0] if pick else next(r for r in range(self.n_rankers) if r != best)
        buyers = self._check_ranker(buyers)
        quality = float(self.beta[best]) if self.clear_best else float(self.beta.max())
        scores = (quality * self._latent - 100.0 * self.bait
                  + rng.normal(size=self._latent.shape))
        scores = np.where(valid, scores, -np.inf)
        self.order[buyers] = np.argsort(-scores, axis=1, kind="stable").astype(np.int16)
        self.beta[buyers] = quality
        self.kinds[buyers] = "buyers'"
        self._ndcg_cache.clear()
        self.buyers = buyers
        return buyers

    def purchases(self, query: int, doc_ids: list[str], clicked: Any,
                  rng: np.random.Generator) -> list[tuple[str, float]]:
        """The purchases ``(doc id, price)`` a user makes after clicking the positions
        ``clicked`` (0-based) of ``doc_ids``, each bought with its probability
        (:meth:`add_purchases`; none without a purchase model)."""
        if self.buy_p is None or self.price is None:
            return []
        q = self._check_query(query)
        out = []
        for p in clicked:
            j = int(doc_ids[int(p)].rsplit("-d", 1)[1])
            if rng.random() < self.buy_p[q, j]:
                out.append((doc_ids[int(p)], float(self.price[q, j])))
        return out

    # ------------------------------------------------------------------ queries
    def query_text(self, q: int) -> str:
        """The text of query ``q``."""
        return self._texts[self._check_query(q)]

    def query_id(self, text: str) -> int | None:
        """The query whose text is ``text`` (case and surrounding space ignored), or None."""
        return self._ids.get(" ".join(str(text).lower().split()))

    def sample_query(self, rng: np.random.Generator) -> int:
        """A query drawn uniformly at random, as the papers' simulations do."""
        return int(rng.integers(self.n_queries))

    # ------------------------------------------------------------------ rankings, grades
    def ranking(self, ranker: int, query: int, k: int = 10) -> list[str]:
        """The top ``k`` document ids of ``ranker`` for ``query`` (fewer if it has fewer)."""
        r = self._check_ranker(ranker)
        q = self._check_query(query)
        n = min(int(k), int(self.n_docs[q]))
        return [f"q{q}-d{int(i)}" for i in self.order[r, q, :n]]

    def grades(self, query: int, doc_ids: list[str]) -> np.ndarray:
        """Relevance grades (0–4) of ``doc_ids``, which must belong to ``query``."""
        q = self._check_query(query)
        out = np.empty(len(doc_ids), dtype=np.int64)
        prefix = f"q{q}-d"
        for i, d in enumerate(doc_ids):
            if not d.startswith(prefix) or not d[len(prefix) :].isdigit():
                raise ValueError(f"document {d!r} does not belong to query {q}")
            j = int(d[len(prefix) :])
            if j >= self.n_docs[q]:
                raise ValueError(f"query {q} has no document {d!r}")
            out[i] = self.grade_table[q, j]
        return out

    def top_k(self, k: int = 10) -> np.ndarray:
        """(R, Q, k) document indices of every ranker's top ``k``; ``-1`` pads short lists."""
        k = int(k)
        top = np.full((self.n_rankers, self.n_queries, k), -1, dtype=np.int16)
        m = min(k, self.order.shape[2])
        top[:, :, :m] = self.order[:, :, :m]
        top[:, np.arange(k)[None, :] >= self.n_docs[:, None]] = -1
        return top

    # ------------------------------------------------------------------ quality
    def ndcg_all(self, k: int = 10) -> np.ndarray:
        """Mean NDCG@k over queries of every ranker (gain 2^g - 1, log2 discount)."""
        if k not in self._ndcg_cache:
            disc = _dcg_discounts(k)
            top = self.top_k(k).astype(np.intp)
            g = np.where(top >= 0, self.grade_table[np.arange(self.n_queries)[None, :, None],
                                                    np.maximum(top, 0)], 0)
            dcg = ((2.0 ** np.maximum(g, 0) - 1.0) * disc).sum(axis=2)
            ideal = -np.sort(-np.maximum(self.grade_table, 0), axis=1)[:, :k]
            idcg = ((2.0 ** ideal - 1.0) * disc[: ideal.shape[1]]).sum(axis=1)
            self._ndcg_cache[k] = (dcg / idcg[None, :]).mean(axis=1)
        return self._ndcg_cache[k]

    def ndcg(self, ranker: int, k: int = 10) -> float:
        """Mean NDCG@k of ``ranker`` over all queries."""
        return float(self.ndcg_all(k)[self._check_ranker(ranker)])

    @property
    def true_best(self) -> int:
        """The ranker with the highest mean NDCG@10."""
        return int(np.argmax(self.ndcg_all(10)))

    def preference_matrix(
        self,
        method: str = "probabilistic",
        click_model: str = "navigational",
        comparisons: int = 1000,
        seed: int = 0,
        k: int = 10,
        **kwargs: Any,
    ) -> np.ndarray:
        """Estimate the K×K preference matrix by simulated interleaved comparisons.

        See :func:`interleaving.estimate.estimate_matrix`.
        """
        from interleaving.estimate import estimate_matrix

        return estimate_matrix(
            self, method, click_model, comparisons, np.random.default_rng(seed), k=k, **kwargs
        )

    # ------------------------------------------------------------------ helpers
    def _check_ranker(self, r: int) -> int:
        r = int(r)
        if not 0 <= r < self.n_rankers:
            raise ValueError(f"ranker {r} out of range 0..{self.n_rankers - 1}")
        return r

    def _check_query(self, q: int) -> int:
        q = int(q)
        if not 0 <= q < self.n_queries:
            raise ValueError(f"query {q} out of range 0..{self.n_queries - 1}")
        return q

    def __repr__(self) -> str:
        nd = self.ndcg_all(10)
        lines = [
            f"World(seed={self.seed}, rankers={self.n_rankers}, queries={self.n_queries}, "
            f"docs/query={int(self.n_docs.min())}..{int(self.n_docs.max())}, "
            f"best={self.true_best})",
            "  ranker  NDCG@10  quality  kind",
        ]
        for r in np.argsort(-nd, kind="stable")[:10]:
            lines.append(f"  {r:>6}  {nd[r]:.4f}   {self.beta[r]:.3f}   {self.kinds[r]}")
        if self.n_rankers > 10:
            lines.append(f"  ... {self.n_rankers - 10} more rankers")
        return "\n".join(lines)
