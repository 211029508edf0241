"""Vectorized pairwise interleaving over many comparisons at once, for the estimator.

The same methods as the per-request implementations (:mod:`interleaving.team_draft`,
:mod:`interleaving.probabilistic`, :mod:`interleaving.balanced`, :mod:`interleaving.sosm`)
restricted to two rankers, written over arrays of ``n`` comparisons so that estimating a
136×136 preference matrix from 20,000 comparisons per pair takes minutes in numpy rather
than hours in Python loops. Each comparison is a row: ``A`` and ``B`` are ``(n, k)``
integer document indices (``-1`` pads a list shorter than ``k``, at its end only).

For two rankers the multileaving methods coincide with their pairwise parents:
team-draft multileave is team-draft interleave, probabilistic multileave is
probabilistic interleave (a fair die over two rankers is a fair coin), and SOSM is
team-draft creation with SOSM's sample-only credit; ``ENGINES`` maps every method name to
its engine. The tests check that the vectorized engines and the per-request code agree
in distribution.

Speed comes from three devices: the structure shared by every comparison of the same
two lists (where each document sits in the other list, the list lengths, the identical
prefix) is computed once by :func:`prepare` — the estimator does it per (pair, query),
not per comparison; the documents still available in a list are a bitmask; and the
per-mask choices (lowest available slot, the softmax of probabilistic interleave as
alias tables) are looked up in tables built once per page length.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from interleaving.probabilistic import DEFAULT_TAU

Info = dict[str, Any]


def _rows(n: int) -> np.ndarray:
    return np.arange(n)


#: lists longer than this are not supported (tables over 2^k bitmasks)
MAX_K = 14


def _check_k(k: int) -> None:
    if k > MAX_K:
        raise ValueError(f"the vectorized engines support pages of at most {MAX_K}, got {k}")


def prepare(A: np.ndarray, B: np.ndarray) -> Info:
    """What every comparison of lists ``A`` and ``B`` (row by row) shares.

    ``b_of_a[:, i]``: the slot of ``A[:, i]`` in B (-1 if absent), ``a_of_b`` the reverse;
    ``len_a``/``len_b`` the list lengths; ``prefix`` the length of the identical top
    prefix. Document ids are small per-query indices, so a per-row inverse map built by
    one scatter answers each lookup with one gather.
    """
    n, k = A.shape
    _check_k(k)
    rows = np.arange(n)[:, None]
    n_docs = int(max(A.max(initial=-1), B.max(initial=-1))) + 1
    if n_docs > 4096:  # large ids: compare all slot pairs instead
        eq = (A[:, :, None] == B[:, None, :]) & (A >= 0)[:, :, None]
        b_of_a = np.where(eq.any(axis=2), eq.argmax(axis=2), -1)
        a_of_b = np.where(eq.any(axis=1), eq.argmax(axis=1), -1)
    else:
        slots = np.broadcast_to(np.arange(k, dtype=np.int16), (n, k))
        found = []
        for X, Y in ((A, B), (B, A)):
            inv = np.full((n, n_docs + 1), -1, dtype=np.int16)  # last column: padding
            inv[rows, np.where(Y >= 0, Y, n_docs)] = slots
            inv[:, n_docs] = -1
            found.append(inv[rows, np.where(X >= 0, X, n_docs)].astype(np.intp))
        b_of_a, a_of_b = found
    same = b_of_a == np.arange(k)[None, :]
    return {
        "b_of_a": b_of_a,
        "a_of_b": a_of_b,
        "len_a": (A >= 0).sum(axis=1),
        "len_b": (B >= 0).sum(axis=1),
        "prefix": np.cumprod(same, axis=1).sum(axis=1),
    }


def take_prep(prep: Info, index: np.ndarray) -> Info:
    """The prepared rows ``index`` (used to expand per-(pair, query) preparations)."""
    return {key: value[index] for key, value in prep.items()}


@functools.lru_cache(maxsize=8)
def _lowest_bit_table(k: int) -> np.ndarray:
    """Index of the lowest set bit of every k-bit mask (0 for the empty mask)."""
    bits = ((np.arange(1 << k)[:, None] >> np.arange(k)) & 1).astype(bool)
    return bits.argmax(axis=1)


def _keep_table(k: int) -> np.ndarray:
    """``keep[i]`` clears bit ``i``; ``keep[-1]`` (index -1: absent) clears nothing."""
    return np.append(~(np.int64(1) << np.arange(k, dtype=np.int64)), np.int64(-1))


def _full_mask(length: np.ndarray) -> np.ndarray:
    return (np.int64(1) << length.astype(np.int64)) - 1


# ---------------------------------------------------------------------- team draft
def team_draft_batch(
    A: np.ndarray, B: np.ndarray, rng: np.random.Generator, prep: Info | None = None
) -> tuple[np.ndarray, Info]:
    """Team-draft interleave of each row.

    ``info``: ``team`` (0, 1, or -1 for the shared prefix) and ``ia``/``ib``, the slot
    of each shown document in A and in B (-1 where absent) for SOSM's credit.
    """
    n, k = A.shape
    prep = prepare(A, B) if prep is None else prep
    low = _lowest_bit_table(k)
    keep = _keep_table(k)
    base = _rows(n) * k
    flat_a, flat_b = A.ravel(), B.ravel()
    flat_ba, flat_ab = prep["b_of_a"].ravel(), prep["a_of_b"].ravel()
    prefix = prep["prefix"]
    cols = np.arange(k)[None, :]
    in_prefix = cols < prefix[:, None]
    # the prefix is shown first and taken out of both lists
    ma = _full_mask(prep["len_a"]) & ~_full_mask(prefix)
    mb = _full_mask(prep["len_b"]) & ~_full_mask(prefix)
    shown = np.where(in_prefix, A, -1).astype(A.dtype).T.copy()
    team = np.full((k, n), -1, dtype=np.int8)
    ia_all = np.where(in_prefix, cols, -1).T.copy()
    ib_all = ia_all.copy()
    lead = np.zeros(n, dtype=np.int32)  # |team A| - |team B|
    coins = rng.random((k, n)) < 0.5
    for p in range(k):
        has_a = ma != 0
        has_b = mb != 0
        go = (p >= prefix) & (has_a | has_b)
        pick_a = np.where(lead == 0, coins[p], lead < 0)
        pick_a = has_a & (~has_b | pick_a)
        na = low[ma]
        nb = low[mb]
        at_a = base + na
        at_b = base + nb
        ia = np.where(pick_a, na, flat_ab[at_b])
        ib = np.where(pick_a, flat_ba[at_a], nb)
        ia = np.where(go, ia, -1)
        ib = np.where(go, ib, -1)
        shown[p] = np.where(go, np.where(pick_a, flat_a[at_a], flat_b[at_b]), shown[p])
        team[p] = np.where(go, np.where(pick_a, 0, 1), team[p])
        ia_all[p] = np.where(go, ia, ia_all[p])
        ib_all[p] = np.where(go, ib, ib_all[p])
        ma &= keep[ia]
        mb &= keep[ib]
        lead += np.where(go, np.where(pick_a, 1, -1), 0)
    return shown.T.copy(), {"team": team.T.copy(), "ia": ia_all.T, "ib": ib_all.T}


def team_draft_credit_batch(info: Info, clicks: np.ndarray) -> np.ndarray:
    """Outcome per row from team credit (only meaningful where a click happened)."""
    team = info["team"]
    ca = (clicks & (team == 0)).sum(axis=1)
    cb = (clicks & (team == 1)).sum(axis=1)
    return (ca > cb) + 0.5 * (ca == cb)


# ---------------------------------------------------------------------- probabilistic
@functools.lru_cache(maxsize=8)
def _softmax_tables(k: int, tau: float) -> tuple[np.ndarray, ...]:
    """Per bitmask of remaining slots: normalizer, and Walker alias tables of the softmax.

    ``z[mask]`` is the total weight of the remaining slots (1 for the empty mask, so
    divisions stay finite); ``prob``/``alias`` (flattened ``mask * k + j``) sample a slot
    exactly with one uniform slot, one uniform number and two lookups (Walker 1977;
    Vose 1991).
    """
    w = np.arange(1, k + 1, dtype=float) ** -tau
    n_masks = 1 << k
    bits = ((np.arange(n_masks)[:, None] >> np.arange(k)) & 1).astype(bool)
    weights = np.where(bits, w, 0.0)
    z = weights.sum(axis=1)
    z[0] = 1.0
    prob = np.ones((n_masks, k))
    alias = np.tile(np.arange(k), (n_masks, 1))
    for mask in range(1, n_masks):
        scaled = weights[mask] * k / z[mask]
        small = [j for j in range(k) if scaled[j] < 1.0]
        large = [j for j in range(k) if scaled[j] >= 1.0]
        while small and large:
            s, g = small.pop(), large[-1]
            prob[mask, s] = scaled[s]
            alias[mask, s] = g
            scaled[g] -= 1.0 - scaled[s]
            if scaled[g] < 1.0:
                small.append(large.pop())
        # whatever is left has scaled weight 1 up to rounding: always accepted
    return np.append(w, 0.0), z, prob.ravel(), alias.ravel()


def probabilistic_batch(
    A: np.ndarray,
    B: np.ndarray,
    rng: np.random.Generator,
    prep: Info | None = None,
    tau: float = DEFAULT_TAU,
) -> tuple[np.ndarray, Info]:
    """Probabilistic interleave of each row; ``info["post"]`` = P(slot from A | list)."""
    n, k = A.shape
    prep = prepare(A, B) if prep is None else prep
    wext, z_table, prob, alias = _softmax_tables(k, float(tau))
    keep = _keep_table(k)
    base = _rows(n) * k
    flat_a, flat_b = A.ravel(), B.ravel()
    flat_ba, flat_ab = prep["b_of_a"].ravel(), prep["a_of_b"].ravel()
    ma = _full_mask(prep["len_a"])
    mb = _full_mask(prep["len_b"])
    shown = np.full((k, n), -1, dtype=A.dtype)
    post = np.zeros((k, n))
    coin = rng.random((k, n)) < 0.5
    slot = (rng.random((k, n)) * k).astype(np.intp)
    accept_u = rng.random((k, n))
    for p in range(k):
        has_a = ma != 0
        has_b = mb != 0
        live = has_a | has_b
        use_a = has_a & (~has_b | coin[p])
        j = slot[p]
        cell = np.where(use_a, ma, mb) * k + j
        idx = np.where(accept_u[p] < prob[cell], j, alias[cell])
        at = base + idx
        ia = np.where(use_a, idx, flat_ab[at])
        ib = np.where(use_a, flat_ba[at], idx)
        ia = np.where(live, ia, -1)
        ib = np.where(live, ib, -1)
        # posterior of this slot: P_A(doc) / (P_A(doc) + P_B(doc)); the coin cancels
        pa = wext[ia] / z_table[ma]
        pb = wext[ib] / z_table[mb]
        post[p] = pa / np.maximum(pa + pb, 1e-300)
        shown[p] = np.where(live, np.where(use_a, flat_a[at], flat_b[at]), -1)
        ma &= keep[ia]
        mb &= keep[ib]
    return shown.T.copy(), {"post": post.T.copy()}


def probabilistic_credit_batch(info: Info, clicks: np.ndarray) -> np.ndarray:
    """Exact marginal outcome P(c_A > c_B) + ½ P(c_A = c_B) per row.

    Rows are grouped by their number of clicks ``c``; for each group the distribution
    of ``c_A`` (Poisson-binomial over the clicked slots' posteriors) is built in ``c``
    vectorized steps, and ``c_A > c_B`` is ``c_A > c / 2``.
    """
    post = info["post"]
    n = clicks.shape[0]
    s = np.full(n, 0.5)
    r, col = np.nonzero(clicks)  # row-major: each row's clicks are contiguous
    q = post[r, col]
    n_clicks = np.bincount(r, minlength=n)
    start = np.concatenate([[0], np.cumsum(n_clicks)[:-1]])
    for c in np.unique(n_clicks[n_clicks > 0]):
        rows_c = np.flatnonzero(n_clicks == c)
        qc = q[start[rows_c, None] + np.arange(c)]
        dist = np.zeros((rows_c.size, c + 1))
        dist[:, 0] = 1.0
        for j in range(c):
            qj = qc[:, j : j + 1]
            new = dist * (1.0 - qj)
            new[:, 1:] += dist[:, :-1] * qj
            dist = new
        half = c // 2
        win = dist[:, half + 1 :].sum(axis=1)
        tie = dist[:, half] if c % 2 == 0 else 0.0
        s[rows_c] = win + 0.5 * tie
    return np.clip(s, 0.0, 1.0)


# ---------------------------------------------------------------------- balanced
def balanced_batch(
    A: np.ndarray, B: np.ndarray, rng: np.random.Generator, prep: Info | None = None
) -> tuple[np.ndarray, Info]:
    """Balanced interleave of each row.

    ``info``: ``ra``/``rb``, the 0-based rank in A and B of each shown document (``k``
    where absent). The shown set is always ``A[:ka] ∪ B[:kb]``, so whether A's next
    document is new is whether its match in B lies at or beyond ``kb``.
    """
    n, k = A.shape
    prep = prepare(A, B) if prep is None else prep
    rows = _rows(n)
    base = rows * k
    flat_a, flat_b = A.ravel(), B.ravel()
    flat_ba, flat_ab = prep["b_of_a"].ravel(), prep["a_of_b"].ravel()
    len_a, len_b = prep["len_a"], prep["len_b"]
    a_first = rng.random(n) < 0.5
    ka = np.zeros(n, dtype=np.intp)
    kb = np.zeros(n, dtype=np.intp)
    m = np.zeros(n, dtype=np.intp)
    # one spare column absorbs the writes of rows that add nothing this step
    shown = np.full((n, k + 1), -1, dtype=A.dtype)
    ra = np.full((n, k + 1), k, dtype=np.intp)
    rb = np.full((n, k + 1), k, dtype=np.intp)
    for _ in range(2 * k):
        ex_a = ka >= len_a
        ex_b = kb >= len_b
        active = (m < k) & ~(ex_a & ex_b)
        if not active.any():
            break
        take_a = ~ex_a & (ex_b | (ka < kb) | ((ka == kb) & a_first))
        at_a = base + np.minimum(ka, k - 1)
        at_b = base + np.minimum(kb, k - 1)
        match_b = flat_ba[at_a]
        match_a = flat_ab[at_b]
        new_a = (match_b < 0) | (match_b >= kb)
        new_b = (match_a < 0) | (match_a >= ka)
        new = active & np.where(take_a, new_a, new_b)
        slot = np.where(new, m, k)
        shown[rows, slot] = np.where(take_a, flat_a[at_a], flat_b[at_b])
        ra[rows, slot] = np.where(take_a, ka, np.where(match_a >= 0, match_a, k))
        rb[rows, slot] = np.where(take_a, np.where(match_b >= 0, match_b, k), kb)
        m += new
        ka += active & take_a
        kb += active & ~take_a
    return shown[:, :k].copy(), {"ra": ra[:, :k].copy(), "rb": rb[:, :k].copy()}


def balanced_credit_batch(info: Info, clicks: np.ndarray) -> np.ndarray:
    """Joachims' credit: clicks within both lists' top ``k*`` of the lowest click."""
    ra, rb = info["ra"], info["rb"]
    n, k = clicks.shape
    last = k - 1 - clicks[:, ::-1].argmax(axis=1)
    rows = _rows(n)
    depth = np.minimum(ra[rows, last], rb[rows, last])[:, None]
    ha = (clicks & (ra <= depth)).sum(axis=1)
    hb = (clicks & (rb <= depth)).sum(axis=1)
    return (ha > hb) + 0.5 * (ha == hb)


# ---------------------------------------------------------------------- SOSM
def sosm_batch(
    A: np.ndarray, B: np.ndarray, rng: np.random.Generator, prep: Info | None = None
) -> tuple[np.ndarray, Info]:
    """SOSM of each row: team-draft creation, then each ranker's rank of every shown
    document among the shown documents it retrieved (``sa``/``sb``, 0 = not retrieved).
    """
    shown, td = team_draft_batch(A, B, rng, prep)
    info = {"n_shown": (shown >= 0).sum(axis=1)}
    for name, idx in (("sa", td["ia"]), ("sb", td["ib"])):
        scored = idx >= 0
        rho = 1 + ((idx[:, None, :] < idx[:, :, None]) & scored[:, None, :]).sum(axis=2)
        info[name] = np.where(scored, rho, 0)
    return shown, info


def sosm_credit_batch(info: Info, clicks: np.ndarray, power: float = 1.0) -> np.ndarray:
    """Sample-only scored credit: ``1/ρ`` within the shown list; a shown document the
    ranker did not retrieve earns the mean of ``1/ρ`` over the ranks below its
    retrieved ones (see :mod:`interleaving.sosm`)."""
    n_shown = info["n_shown"]
    k = clicks.shape[1]
    weights = np.arange(1, k + 1, dtype=float) ** -power
    cum = np.concatenate([[0.0], np.cumsum(weights)])
    scores = []
    for name in ("sa", "sb"):
        rho = info[name]
        n_ret = (rho > 0).sum(axis=1)
        gap = n_shown - n_ret
        missing = (cum[n_shown] - cum[n_ret]) / np.maximum(gap, 1)
        credit = np.where(rho > 0, weights[np.maximum(rho, 1) - 1], missing[:, None])
        scores.append(np.where(clicks, credit, 0.0).sum(axis=1))
    sa, sb = scores
    tie = np.isclose(sa, sb, rtol=1e-12, atol=1e-12)
    return np.where(tie, 0.5, (sa > sb).astype(float))


#: method name -> (interleave_batch, credit_batch)
ENGINES = {
    "team_draft": (team_draft_batch, team_draft_credit_batch),
    "team_draft_multileave": (team_draft_batch, team_draft_credit_batch),
    "probabilistic": (probabilistic_batch, probabilistic_credit_batch),
    "probabilistic_multileave": (probabilistic_batch, probabilistic_credit_batch),
    "balanced": (balanced_batch, balanced_credit_batch),
    "sosm": (sosm_batch, sosm_credit_batch),
}
