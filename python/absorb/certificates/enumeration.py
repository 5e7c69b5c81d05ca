"""The two complete enumerations behind the index-set search: meet-in-the-middle over subset
sums of a reduced linear system, and HiGHS integer programming (``scipy.optimize.milp``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from absorb.certificates._inputs import FloatArray

__all__ = ["MILP_TIME_LIMIT", "Mitm", "bits", "integer_rows", "meet_in_the_middle", "milp_binary",
           "subset_sums"]

# Keys of the meet-in-the-middle hash are projections on a fixed random direction: the
# search is complete for any direction, the seed only fixes which (harmless) key collisions
# occur, so results are deterministic.
_PROJECTION_SEED = 20260423
# Pairs of half-sums whose keys collide are verified in chunks of this many pairs.
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
    """Complete search for s ∈ {0,1}ⁿ with ‖E s − t‖₂ ≤ delta (delta = 0: exact equality).

    E is r × n (reduced, independent equations), t ∈ ℝʳ. Split the columns into halves L, R,
    enumerate all subset sums of each half, key them by a projection on a random unit vector
    w (‖u − v‖ ≤ δ ⇒ |w·u − w·v| ≤ δ, so no solution is missed), match keys by sorting and
    binary search, and verify every key match on the whole r-vector; ``accept(S)`` is the
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
    exact = delta == 0.0 and E.dtype != np.float64
    rng = np.random.default_rng(_PROJECTION_SEED)
    if exact:
        w: NDArray[Any] = rng.integers(1, 1 << 16, size=r).astype(E.dtype)
    else:
        wf = rng.standard_normal(r)
        w = np.asarray(wf / np.linalg.norm(wf))
    left = subset_sums(E[:, :h1].T)
    right = subset_sums(E[:, h1:].T)
    k_left = left @ w
    k_right = t @ w - right @ w
    order = np.argsort(k_left, kind="stable")
    k_sorted = k_left[order]
    lo = np.searchsorted(k_sorted, k_right - delta if not exact else k_right, side="left")
    hi = np.searchsorted(k_sorted, k_right + delta if not exact else k_right, side="right")
    counts = (hi - lo).astype(np.int64)
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
        ok = np.all(diff == 0, axis=1) if exact else np.sum(diff * diff, axis=1) <= delta * delta
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


def integer_rows(
    R: list[list[Fraction]], rhs: list[Fraction]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Scale each rational equation to integers; int64 when no subset sum or key can overflow."""
    rows, b = [], []
    for row, v in zip(R, rhs, strict=True):
        m = math.lcm(*(x.denominator for x in [*row, v]))
        rows.append([int(x * m) for x in row])
        b.append(int(v * m))
    # |key| ≤ Σ_j |w_j| · Σ_i |E_ji| with |w_j| < 2^16 (see meet_in_the_middle)
    bound = (1 << 16) * sum(
        sum(abs(x) for x in row) + abs(v) for row, v in zip(rows, b, strict=True)
    )
    dtype: Any = np.int64 if bound < (1 << 62) else object
    return np.array(rows, dtype=dtype).reshape(len(rows), -1), np.array(b, dtype=dtype)


def milp_binary(E: FloatArray, t: FloatArray, delta: float) -> tuple[str, tuple[int, ...] | None]:
    """HiGHS on: s ∈ {0,1}ⁿ, t − δ ≤ E s ≤ t + δ (a box containing the δ-ball)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = E.shape[1]
    res = milp(
        c=np.zeros(n),
        constraints=LinearConstraint(E, t - delta, t + delta),
        integrality=np.ones(n),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": MILP_TIME_LIMIT},
    )
    if res.status == 0 and res.x is not None:
        return "found", tuple(int(i) for i in np.nonzero(np.round(res.x) > 0.5)[0])
    if res.status == 2:
        return "infeasible", None
    return "limit", None
