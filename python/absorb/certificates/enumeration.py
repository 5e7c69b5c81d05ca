"""The complete enumerations behind the index-set search: meet-in-the-middle over subset sums
of a reduced linear system (floats, within a tolerance), the exact meet-in-the-middle over
fingerprints modulo primes (:func:`exact_meet_in_the_middle`), and HiGHS integer programming
(``scipy.optimize.milp``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from absorb.blocks import Array as FloatArray
from absorb.exact import Scaled, index_set_holds, integers, matmul_mod, negated, primes_below

__all__ = ["FINGERPRINT_PRIMES", "MILP_TIME_LIMIT", "Mitm", "bits", "exact_meet_in_the_middle",
           "integer_rows", "meet_in_the_middle", "milp_binary", "subset_sums"]

# Keys of the meet-in-the-middle hash are projections on a fixed random direction: the
# search is complete for any direction, the seed only fixes which (harmless) key collisions
# occur, so results are deterministic.
_PROJECTION_SEED = 20260423
# Pairs of half-sums whose keys collide are confirmed in chunks of this many pairs.
_PAIR_CHUNK = 1 << 20
#: HiGHS wall-clock budget (seconds) of the integer program.
MILP_TIME_LIMIT = 60.0


def subset_sums(cols: NDArray[Any]) -> NDArray[Any]:
    """All 2^h sums of subsets of the rows of ``cols`` (h × r); row k of the result is the sum
    over the set bits of k. Built by doubling: O(2^h·r) work, no 2^h × h indicator matrix."""
    h, r = cols.shape
    sums = np.zeros((1 << h, r), dtype=cols.dtype)
    size = 1
    for j in range(h):
        np.add(sums[:size], cols[j], out=sums[size : 2 * size])
        size *= 2
    return sums


def bits(k: int, offset: int) -> list[int]:
    return [offset + j for j in range(k.bit_length()) if (k >> j) & 1]


@dataclass(frozen=True)
class Mitm:
    status: Literal["found", "none", "limit"]
    S: tuple[int, ...] | None
    detail: str


def meet_in_the_middle(
    E: NDArray[Any],
    t: NDArray[Any],
    delta: float,
    accept: Any,
    max_enumeration: int,
) -> Mitm:
    """Complete search for s ∈ {0,1}ⁿ with ‖E s − t‖₂ ≤ delta (float E, t).

    E is r × n (reduced, independent equations), t ∈ ℝʳ. Split the columns into halves L, R,
    enumerate all subset sums of each half, key them by a projection on a random unit vector
    w (‖u − v‖ ≤ δ ⇒ |w·u − w·v| ≤ δ, so no solution is missed), match keys by sorting and
    binary search, and confirm every key match on the whole r-vector; ``accept(S)`` is the
    final check on the original weights.
    """
    r, n = E.shape
    h1 = n // 2
    h2 = n - h1
    cost = (1 << h1) + (1 << h2)
    if cost > max_enumeration:
        return Mitm(
            "limit",
            None,
            f"meet-in-the-middle would enumerate {cost} subset sums "
            f"(n={n}), above max_enumeration={max_enumeration}",
        )
    rng = np.random.default_rng(_PROJECTION_SEED)
    wf = rng.standard_normal(r)
    w = np.asarray(wf / np.linalg.norm(wf))
    left = subset_sums(E[:, :h1].T)
    right = subset_sums(E[:, h1:].T)
    k_left = left @ w
    k_right = t @ w - right @ w
    order = np.argsort(k_left)  # introsort: deterministic, faster than stable here
    k_sorted = k_left[order]
    # sorted queries: the binary searches walk shared paths (several times faster than
    # unsorted ones at 2^20 keys and more); the results are put back in right-index order
    q_order = np.argsort(k_right)
    q = k_right[q_order]
    lo = np.empty(q.size, dtype=np.int64)
    hi = np.empty(q.size, dtype=np.int64)
    lo[q_order] = np.searchsorted(k_sorted, q - delta, side="left")
    hi[q_order] = np.searchsorted(k_sorted, q + delta, side="right")
    del q, q_order
    counts = hi - lo
    total = int(counts.sum())
    if total > max_enumeration:
        return Mitm(
            "limit",
            None,
            f"{total} key collisions between the half-sums, above "
            f"max_enumeration={max_enumeration}",
        )
    matched = np.nonzero(counts)[0]
    # expand the (right index, left position) pairs in chunks of about _PAIR_CHUNK pairs
    start = 0
    while start < matched.size:
        csum = np.cumsum(counts[matched[start:]])
        stop = start + max(1, int(np.searchsorted(csum, _PAIR_CHUNK, side="right")))
        js = matched[start:stop]
        cj = counts[js]
        rep_j = np.repeat(js, cj)
        within = np.arange(int(cj.sum())) - np.repeat(np.cumsum(cj) - cj, cj)
        rep_i = order[np.repeat(lo[js], cj) + within]
        diff = left[rep_i] + right[rep_j] - t
        ok = np.sum(diff * diff, axis=1) <= delta * delta
        for pos in np.nonzero(ok)[0]:
            S = tuple(bits(int(rep_i[pos]), 0) + bits(int(rep_j[pos]), h1))
            if accept(S):
                return Mitm(
                    "found",
                    S,
                    f"meet-in-the-middle over 2^{h1} + 2^{h2} subset sums "
                    f"of {r} independent equations found |S| = {len(S)}",
                )
        start = stop
    return Mitm(
        "none",
        None,
        f"meet-in-the-middle enumerated all 2^{h1} + 2^{h2} subset sums "
        f"of the {r} independent equations: no 0/1 solution",
    )


#: Moduli of the exact search's fingerprints: the first three of these primes below 2²¹ that do
#: not divide the scale's denominator b, so a key (h₁·p₂ + h₂)·p₃ + h₃ < 2⁶³ fits an int64 and
#: :func:`absorb.exact.matmul_mod` applies.
FINGERPRINT_PRIMES = primes_below(1 << 21, 8)
# Right-half subset sums are formed in blocks of this many (the low bits of the right half).
_RIGHT_BLOCK_BITS = 20


def _subset_sums_mod(f: NDArray[np.int64], p: int) -> NDArray[np.int64]:
    """All 2^h subset sums of f (entries in [0, p)) modulo p, by doubling (index k: the sum
    over the set bits of k)."""
    h = f.shape[0]
    sums = np.zeros(1 << h, dtype=np.int64)
    size = 1
    for j in range(h):
        dst = sums[size : 2 * size]
        np.add(sums[:size], f[j], out=dst)
        dst[dst >= p] -= p
        size *= 2
    return sums


def _fingerprints(su: Scaled, sd: Scaled, st: Scaled, a: int, b: int, p: int,
                  rng: np.random.Generator) -> tuple[NDArray[np.int64], int]:
    """f_i = (uᵀ a_i)(b_iᵀ v) mod p for every unit and g = (a/b)·uᵀ T v mod p, for random u, v
    (a_i, b_i the integer columns of W_down and rows of W_up, T the integer target)."""
    d = sd.shape[0]
    u = rng.integers(0, p, size=(1, d), dtype=np.int64)
    v = rng.integers(0, p, size=(d, 1), dtype=np.int64)
    alpha = matmul_mod(u, sd.residues(p), p)[0]
    beta = matmul_mod(su.residues(p), v, p)[:, 0]
    g = int(matmul_mod(matmul_mod(u, st.residues(p), p), v, p)[0, 0])
    return (alpha * beta) % p, g * a % p * pow(b, -1, p) % p


def exact_meet_in_the_middle(W_up: Any, W_down: Any, A: Any, max_enumeration: int,
                             seed: int = _PROJECTION_SEED) -> Mitm:
    """Complete exact search for S with W_down[:,S] W_up[S,:] = −A on the given values (floats
    as stored dyadics, or rationals), in int64 arithmetic.

    With W_down = N_d·s_d, W_up = N_u·s_u, −A = N_t·s_t (:func:`absorb.exact.integers`) and
    s_t/(s_d s_u) = a/b, the condition is b·Σ_{i∈S} a_i b_iᵀ = a·N_t over ℤ. For random
    u, v mod p, the fingerprint of a set is Σ_{i∈S} (uᵀa_i)(b_iᵀv) mod p; a solution's
    fingerprint equals (a/b)·uᵀN_t v mod p for every u, v and p ∤ b, so keying the 2^⌊n/2⌋ +
    2^⌈n/2⌉ half-sums by three such fingerprints (one int64) and matching them by sorting and
    binary search misses no solution. Every match is confirmed exactly
    (:func:`absorb.exact.index_set_holds`); a false match (probability ≤ 2/p per prime and
    pair, by Schwartz–Zippel) only costs its confirmation. Units with a_i = 0 or b_i = 0
    contribute nothing and are left out. ``none`` is a proof: no index set exists.
    """
    su, sd, st = integers(W_up), integers(W_down), integers(negated(A))
    live = np.flatnonzero(np.any(su.nonzero(), axis=1) & np.any(sd.nonzero(), axis=0))
    n = len(live)
    h1 = n // 2
    h2 = n - h1
    cost = (1 << h1) + (1 << h2)
    if cost > max_enumeration:
        return Mitm("limit", None, f"exact meet-in-the-middle would enumerate {cost} subset "
                    f"sums (n={n} units), above max_enumeration={max_enumeration}")
    rng = np.random.default_rng(seed)
    su_l = integers(np.asarray(W_up)[live, :]) if n < su.shape[0] else su
    sd_l = integers(np.asarray(W_down)[:, live]) if n < su.shape[0] else sd
    q = st.scale / (sd_l.scale * su_l.scale)
    a, b = q.numerator, q.denominator
    primes = [p for p in FINGERPRINT_PRIMES if b % p][:3]  # b must be invertible mod p
    prints = [_fingerprints(su_l, sd_l, st, a, b, p, rng) for p in primes]
    left = np.zeros(1 << h1, dtype=np.int64)
    for (f, _), p in zip(prints, primes, strict=True):
        left *= p
        left += _subset_sums_mod(f[:h1], p)
    # sorted without a permutation (an argsort of 2^24 keys costs four times the sort): the
    # rare matched keys are looked up in the unsorted array afterwards
    keys = np.sort(left)
    inner_bits = min(h2, _RIGHT_BLOCK_BITS)
    inner = [_subset_sums_mod(f[h1 : h1 + inner_bits], p) for (f, _), p in zip(prints, primes,
                                                                             strict=True)]
    outer = [_subset_sums_mod(f[h1 + inner_bits :], p) for (f, _), p in zip(prints, primes,
                                                                          strict=True)]
    confirmed = 0
    for o in range(1 << (h2 - inner_bits)):
        key = np.zeros(1 << inner_bits, dtype=np.int64)
        for (_, g), p, inn, out in zip(prints, primes, inner, outer, strict=True):
            part = (g - out[o] - inn) % p  # the left half-sum this right half-sum needs
            key *= p
            key += part
        # sorted queries make the binary searches walk the same paths (5-10x faster than
        # unsorted ones); the rare hits are located in the block afterwards
        block = np.sort(key)
        found = block[keys[np.minimum(np.searchsorted(keys, block), keys.size - 1)] == block]
        if found.size == 0:
            continue
        hit = np.flatnonzero(np.isin(key, found))
        lefts = np.flatnonzero(np.isin(left, found))
        for j in hit.tolist():
            right_bits = j | (o << inner_bits)
            for i in lefts[left[lefts] == key[j]].tolist():
                confirmed += 1
                if confirmed > max_enumeration:
                    return Mitm("limit", None, f"{confirmed} fingerprint matches, above "
                                f"max_enumeration={max_enumeration}")
                S = tuple(sorted(int(live[u]) for u in bits(i, 0) + bits(right_bits, h1)))
                if index_set_holds(W_up, W_down, S, A):
                    return Mitm("found", S, f"exact meet-in-the-middle (fingerprints modulo "
                                f"{len(primes)} primes, every match confirmed exactly) over "
                                f"2^{h1} + 2^{h2} subset sums found |S| = {len(S)}")
    return Mitm("none", None, f"exact meet-in-the-middle enumerated all 2^{h1} + 2^{h2} subset "
                f"sums of the {n} nonzero units: no index set (exact)")


def integer_rows(
    R: list[list[Fraction]], rhs: list[Fraction]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Scale each rational equation to integers (for HiGHS); int64 when every entry converts to
    float64 exactly (below 2⁵³), else Python integers (scaled per row by the caller)."""
    rows, b = [], []
    for row, v in zip(R, rhs, strict=True):
        m = math.lcm(*(x.denominator for x in [*row, v]))
        rows.append([int(x * m) for x in row])
        b.append(int(v * m))
    peak = max((abs(x) for row, v in zip(rows, b, strict=True) for x in [*row, v]), default=0)
    dtype: Any = np.int64 if peak < (1 << 53) else object
    return np.array(rows, dtype=dtype).reshape(len(rows), -1), np.array(b, dtype=dtype)


def milp_binary(E: FloatArray, t: FloatArray, delta: float,
                time_limit: float = MILP_TIME_LIMIT) -> tuple[str, tuple[int, ...] | None]:
    """HiGHS on: s ∈ {0,1}ⁿ, t − δ ≤ E s ≤ t + δ (a box containing the δ-ball), for at most
    ``time_limit`` seconds."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = E.shape[1]
    res = milp(
        c=np.zeros(n),
        constraints=LinearConstraint(E, t - delta, t + delta),
        integrality=np.ones(n),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": time_limit},
    )
    if res.status == 0 and res.x is not None:
        return "found", tuple(int(i) for i in np.nonzero(np.round(res.x) > 0.5)[0])
    if res.status == 2:
        return "infeasible", None
    return "limit", None
