"""The complete enumerations behind the index-set search: meet-in-the-middle over subset sums
of a reduced linear system (floats, within a tolerance), the exact meet-in-the-middle over
fingerprints modulo primes (:func:`exact_meet_in_the_middle`), and HiGHS integer programming
(``scipy.optimize.milp``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from absorb.blocks import Array as FloatArray
from absorb.exact import Scaled, index_set_holds, integers, matmul_mod, negated, primes_below

__all__ = ["MAX_CONFIRMATIONS", "MILP_TIME_LIMIT", "Mitm", "bits", "draw_primes",
           "exact_meet_in_the_middle", "integer_rows", "meet_in_the_middle", "milp_binary",
           "prime_pool", "subset_sums"]

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


#: Fingerprint moduli are drawn, per run, from the primes in [2²⁰, 2²¹) (about 73,000 of
#: them): three of them make a key (h₁·p₂ + h₂)·p₃ + h₃ < 2⁶³ that fits an int64, and
#: :func:`absorb.exact.matmul_mod` applies. Drawn at random (the seed reported), so no input
#: can be built to make every half-sum collide modulo primes known in advance.
PRIME_POOL_RANGE = (1 << 20, 1 << 21)
#: Fingerprint matches confirmed exactly before the search turns to exact keys
#: (:func:`_exact_keyed_search`: no confirmation at all, a bounded cost): an input whose
#: half-sums collide modulo the drawn primes costs at most this many confirmations more.
MAX_CONFIRMATIONS = 64
# Right-half subset sums are formed in blocks of this many (the low bits of the right half).
_RIGHT_BLOCK_BITS = 20


@cache
def prime_pool() -> NDArray[np.int64]:
    """Every prime in PRIME_POOL_RANGE (a sieve, made once on first use)."""
    lo, hi = PRIME_POOL_RANGE
    sieve = np.ones(hi, dtype=bool)
    sieve[:2] = False
    for k in range(2, int(hi**0.5) + 1):
        if sieve[k]:
            sieve[k * k :: k] = False
    return np.flatnonzero(sieve[lo:]).astype(np.int64) + lo


def draw_primes(seed: int, b: int, count: int = 3) -> list[int]:
    """``count`` distinct primes of the pool drawn with ``seed``, none dividing b (b must be
    invertible modulo each)."""
    pool = prime_pool()
    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < count:
        p = int(pool[rng.integers(pool.size)])
        if b % p and p not in out:
            out.append(p)
    return out


def _subset_sums_mod(f: NDArray[np.int64], p: int) -> NDArray[np.int64]:
    """All 2^h subset sums of f (entries in [0, p); h × m, or h alone) modulo p, by doubling
    (index k: the sum over the set bits of k)."""
    h = f.shape[0]
    sums = np.zeros((1 << h, *f.shape[1:]), dtype=np.int64)
    size = 1
    for j in range(h):
        dst = sums[size : 2 * size]
        np.add(sums[:size], f[j], out=dst)
        dst[dst >= p] -= p
        size *= 2
    return sums


def _sorted_unique(keys: NDArray[np.int64]) -> NDArray[np.int64]:
    """The distinct keys, sorted (a sort and one comparison pass: several times faster than
    ``np.unique``'s hashing on 2^20 int64 keys)."""
    k = np.sort(keys)
    if k.size < 2:
        return k
    keep = np.empty(k.size, dtype=bool)
    keep[0] = True
    np.not_equal(k[1:], k[:-1], out=keep[1:])
    out: NDArray[np.int64] = k[keep]
    return out


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


@dataclass(frozen=True)
class _Problem:
    """The exact search's integer form: units ``live`` (a_i ≠ 0 and b_i ≠ 0), W_down = N_d·s_d,
    W_up = N_u·s_u, −A = N_t·s_t on them, and s_t/(s_d·s_u) = a/b."""

    W_up: Any
    W_down: Any
    A: Any
    live: NDArray[np.int64]
    su: Scaled
    sd: Scaled
    st: Scaled
    a: int
    b: int

    @property
    def halves(self) -> tuple[int, int]:
        n = len(self.live)
        return n // 2, n - n // 2

    def found(self, S: tuple[int, ...], how: str) -> Mitm:
        h1, h2 = self.halves
        return Mitm("found", S, f"{how} over 2^{h1} + 2^{h2} subset sums found |S| = {len(S)}")

    def none(self, how: str) -> Mitm:
        h1, h2 = self.halves
        return Mitm("none", None, f"{how} enumerated all 2^{h1} + 2^{h2} subset sums of the "
                    f"{len(self.live)} nonzero units: no index set (exact)")

    def subset(self, left: int, right: int) -> tuple[int, ...]:
        h1 = self.halves[0]
        return tuple(sorted(int(self.live[u]) for u in bits(left, 0) + bits(right, h1)))

    def holds(self, S: tuple[int, ...]) -> bool:
        return index_set_holds(self.W_up, self.W_down, S, self.A)


def _problem(W_up: Any, W_down: Any, A: Any) -> _Problem:
    su, sd, st = integers(W_up), integers(W_down), integers(negated(A))
    live = np.flatnonzero(np.any(su.nonzero(), axis=1) & np.any(sd.nonzero(), axis=0))
    if len(live) < su.shape[0]:
        su, sd = integers(np.asarray(W_up)[live, :]), integers(np.asarray(W_down)[:, live])
    q = st.scale / (sd.scale * su.scale)
    return _Problem(W_up, W_down, A, live, su, sd, st, q.numerator, q.denominator)


def exact_meet_in_the_middle(W_up: Any, W_down: Any, A: Any, max_enumeration: int,
                             seed: int) -> Mitm:
    """Complete exact search for S with W_down[:,S] W_up[S,:] = −A on the given values (floats
    as stored dyadics, or rationals), in int64 arithmetic.

    With W_down = N_d·s_d, W_up = N_u·s_u, −A = N_t·s_t (:func:`absorb.exact.integers`) and
    s_t/(s_d s_u) = a/b, the condition is b·Σ_{i∈S} a_i b_iᵀ = a·N_t over ℤ. For random
    u, v mod p, the fingerprint of a set is Σ_{i∈S} (uᵀa_i)(b_iᵀv) mod p; a solution's
    fingerprint equals (a/b)·uᵀN_t v mod p for every u, v and p ∤ b, so keying the 2^⌊n/2⌋ +
    2^⌈n/2⌉ half-sums by three such fingerprints (one int64) and matching them by sorting and
    binary search misses no solution. The primes are drawn from a pool of about 73,000 with
    ``seed`` (:func:`draw_primes`; reported, so a run can be replayed), equal keys are matched
    once (the left keys deduplicated, each right block too), and every match is confirmed
    exactly (:func:`absorb.exact.index_set_holds`); a false match (probability ≤ 2/p per
    prime and pair, by Schwartz–Zippel) only costs its confirmation. Past MAX_CONFIRMATIONS
    the search is finished by :func:`_exact_keyed_search`, which needs none. Units with
    a_i = 0 or b_i = 0 contribute nothing and are left out. ``none`` is a proof: no index set
    exists.
    """
    pb = _problem(W_up, W_down, A)
    h1, h2 = pb.halves
    cost = (1 << h1) + (1 << h2)
    if cost > max_enumeration:
        return Mitm("limit", None, f"exact meet-in-the-middle would enumerate {cost} subset "
                    f"sums (n={len(pb.live)} units), above max_enumeration={max_enumeration}")
    primes = draw_primes(seed, pb.b)
    how = (f"exact meet-in-the-middle (fingerprints modulo the primes {primes}, drawn with "
           f"seed {seed}; every match confirmed exactly)")
    rng = np.random.default_rng(seed)
    prints = [_fingerprints(pb.su, pb.sd, pb.st, pb.a, pb.b, p, rng) for p in primes]
    left = np.zeros(1 << h1, dtype=np.int64)
    for (f, _), p in zip(prints, primes, strict=True):
        left *= p
        left += _subset_sums_mod(f[:h1], p)
    # sorted without a permutation (an argsort costs four times the sort; the rare matched
    # keys are looked up in the unsorted array afterwards), equal half-sums (coarse weights:
    # many) kept once
    keys = _sorted_unique(left)
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
        block = _sorted_unique(key)
        found = block[keys[np.minimum(np.searchsorted(keys, block), keys.size - 1)] == block]
        if found.size == 0:
            continue
        hit = np.flatnonzero(np.isin(key, found))
        lefts = np.flatnonzero(np.isin(left, found))
        for j in hit.tolist():
            for i in lefts[left[lefts] == key[j]].tolist():
                confirmed += 1
                if confirmed > MAX_CONFIRMATIONS:
                    return _exact_keyed_search(pb, f"{MAX_CONFIRMATIONS} fingerprint "
                                               "matches failed their confirmation")
                S = pb.subset(i, j | (o << inner_bits))
                if pb.holds(S):
                    return pb.found(S, how)
    return pb.none(how)


#: Exact keys of :func:`_exact_keyed_search` held at once, at most (int64 entries, 128 MiB).
MAX_EXACT_KEY_ENTRIES = 1 << 24


def _rows(parts: list[NDArray[np.int64]]) -> NDArray[np.void]:
    """The rows of the residue blocks side by side, each one opaque (void) item: sorting and
    binary search then compare whole rows."""
    M = np.ascontiguousarray(np.concatenate(parts, axis=1))
    return M.view(np.dtype((np.void, M.shape[1] * M.itemsize))).reshape(-1)


def _exact_keyed_search(pb: _Problem, why: str) -> Mitm:
    """The complete exact meet-in-the-middle with exact keys: each half-sum b·Σ a_i b_iᵀ (and
    the target a·N_t minus each right half-sum) as its d² entries modulo primes whose product M
    exceeds twice every entry's bound, so equal keys are equal integer matrices (two integers
    below M/2 in magnitude that agree modulo M are equal) and no match needs a confirmation.
    Its cost is fixed by n and d: 2^⌈n/2⌉·d²·(number of primes) int64 entries per half.
    ``limit`` when that is above MAX_EXACT_KEY_ENTRIES."""
    h1, h2 = pb.halves
    d = pb.sd.shape[0]
    bound = abs(pb.a) * pb.st.max_abs + pb.b * max(1, len(pb.live)) * pb.sd.max_abs \
        * pb.su.max_abs * d
    primes = list(primes_below(1 << 21, (2 * bound + 1).bit_length() // 20 + 1))
    entries = (1 << h2) * d * d * len(primes)
    if entries > MAX_EXACT_KEY_ENTRIES:
        return Mitm("limit", None, f"{why}; the exact keys would take {entries} entries, "
                    f"above {MAX_EXACT_KEY_ENTRIES}")
    lparts, rparts = [], []
    for p in primes:
        U, D, T = pb.su.residues(p), pb.sd.residues(p), pb.st.residues(p)
        units = (D.T[:, :, None] * U[:, None, :]).reshape(len(pb.live), d * d) % p
        units = units * (pb.b % p) % p
        lparts.append(_subset_sums_mod(units[:h1], p))
        rparts.append((T.reshape(-1) * (pb.a % p) - _subset_sums_mod(units[h1:], p)) % p)
    left, right = _rows(lparts), _rows(rparts)
    order = np.argsort(left)  # rows compared as bytes: equal bytes, equal residues
    pos = np.minimum(np.searchsorted(left[order], right), left.size - 1)
    how = f"exact meet-in-the-middle on exact keys (modulo {len(primes)} primes; {why})"
    for j in np.flatnonzero(left[order][pos] == right).tolist():
        S = pb.subset(int(order[pos[j]]), j)
        if pb.holds(S):  # equal keys are equal sums: this confirms, never rejects
            return pb.found(S, how)
        raise AssertionError("exact keys matched on unequal sums")
    return pb.none(how)


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
