"""The central hyperplane arrangement {y : u_jᵀy = 0} of a block's units, exactly over ℚ.

A bias-free ReLU block f(y) = A y + W ReLU(U y) is linear on every closed region of the
arrangement of the rows u_j of U: on the region with sign vector s, f(y) = (A + W D U) y with
D = diag(s_j > 0). Two exact enumerations are needed:

* one interior point per open region (:func:`region_points`), by deletion–restriction: the
  regions of {H_1..H_k} are the regions of {H_1..H_{k−1}} that H_k misses, plus two for each
  region it cuts; the cut regions correspond one-to-one to the regions of the arrangement
  restricted to H_k (one dimension lower), and a point q of such a restricted region gives
  the points q ± εu_k of the two halves for ε below min |u_jᵀq| / |u_jᵀu_k|;
* the rays of the arrangement (:func:`arrangement_rays`): both half-lines of every 1-dimensional
  intersection of hyperplanes. When the u_j span ℝ^d every closed region is a pointed cone and
  its extreme rays are among these, so a function linear on each region is determined on all
  of ℝ^d by its values on the rays (Minkowski).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from absorb.blocks import ObjectArray
from absorb.exact import null_space, rank

Vector = tuple[Fraction, ...]

#: Enumerations above this many regions (resp. (d−1)-subsets for the rays) are not attempted.
MAX_REGIONS = 20000
MAX_RAY_SUBSETS = 20000


def region_bound(n: int, d: int) -> int:
    """The largest number of regions of n central hyperplanes in ℝ^d: 2 Σ_{i<d} C(n−1, i)."""
    if n == 0:
        return 1
    return 2 * sum(math.comb(n - 1, i) for i in range(d))


def _dot(u: Vector, y: Vector) -> Fraction:
    return sum((a * b for a, b in zip(u, y, strict=True)), Fraction(0))


def _distinct(normals: ObjectArray) -> list[Vector]:
    """The nonzero rows, one per hyperplane (rows that are nonzero multiples of each other
    define the same hyperplane; the first one met represents it)."""
    seen: dict[Vector, Vector] = {}
    for row in normals:
        nz = [v for v in row if v != 0]
        if nz:
            key = tuple(v / abs(nz[0]) for v in row)
            seen.setdefault(key if nz[0] > 0 else tuple(-v for v in key), tuple(row))
    return list(seen.values())


def _points(normals: list[Vector], d: int) -> list[Vector]:
    """One point in each open region of the arrangement of the (nonzero) ``normals`` in ℚ^d."""
    if not normals:
        return [tuple(Fraction(int(i == 0)) for i in range(d))]
    if d == 1:
        return [(Fraction(1),), (Fraction(-1),)]
    *rest, u = normals
    kept = [p for p in _points(rest, d) if _dot(u, p) != 0]
    basis = null_space(np.array([list(u)], dtype=object))  # d × (d−1), columns span H = u^⊥
    restricted = [tuple(np.dot(basis.T, np.array(v, dtype=object)).tolist()) for v in rest]
    lower = [v for v in restricted if any(x != 0 for x in v)]
    for q_low in _points(_distinct(np.array(lower, dtype=object).reshape(len(lower), d - 1))
                         if lower else [], d - 1):
        q = tuple(np.dot(basis, np.array(q_low, dtype=object)).tolist())
        ratios = [abs(_dot(v, q)) / abs(_dot(v, u)) for v in rest
                  if _dot(v, u) != 0 and _dot(v, q) != 0]
        eps = min(ratios) / 2 if ratios else Fraction(1)
        kept += [tuple(a + eps * b for a, b in zip(q, u, strict=True)),
                 tuple(a - eps * b for a, b in zip(q, u, strict=True))]
    unique: dict[tuple[bool, ...], Vector] = {}
    for p in kept:
        unique.setdefault(tuple(_dot(v, p) > 0 for v in normals), p)
    return list(unique.values())


def region_points(U: ObjectArray) -> list[Vector] | None:
    """One rational interior point of every open region of the arrangement of U's rows
    (zero rows are never active and are left out); None above :data:`MAX_REGIONS`."""
    d = int(U.shape[1])
    normals = _distinct(U)
    if region_bound(len(normals), d) > MAX_REGIONS:
        return None
    return _points(normals, d)


def active_pattern(U: ObjectArray, y: Vector) -> tuple[int, ...]:
    """The units j with u_jᵀy > 0 (the diagonal of D at y)."""
    return tuple(j for j, row in enumerate(U) if _dot(tuple(row), y) > 0)


def arrangement_rays(U: ObjectArray) -> list[Vector] | None:
    """Both half-lines of every 1-dimensional flat of the arrangement of U's rows.

    Requires rank U = d (then these include every extreme ray of every closed region); None
    when rank U < d or the number of (d−1)-subsets exceeds :data:`MAX_RAY_SUBSETS`.
    """
    d = int(U.shape[1])
    normals = _distinct(U)
    if rank(U) < d or math.comb(len(normals), d - 1) > MAX_RAY_SUBSETS:
        return None
    rays: dict[Vector, Vector] = {}
    for subset in itertools.combinations(normals, d - 1):
        M = np.array([list(v) for v in subset], dtype=object).reshape(d - 1, d)
        basis = null_space(M)
        if basis.shape[1] != 1:
            continue
        r = tuple(basis[:, 0].tolist())
        scale = max(abs(x) for x in r)
        for sign in (1, -1):
            ray = tuple(sign * x / scale for x in r)
            rays.setdefault(ray, ray)
    return list(rays.values())
