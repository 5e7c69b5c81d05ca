"""The central hyperplane arrangement {y : u_jᵀy = 0} of a block's units, exactly over ℚ.

A bias-free ReLU block f(y) = A y + W ReLU(U y) is linear on every closed region of the
arrangement of the rows u_j of U: on the region with sign vector s, f(y) = (A + W D U) y with
D = diag(s_j > 0). Two exact enumerations are needed:

* one interior point per open region (:func:`region_points`): in the plane, a point between
  each two consecutive rays of the lines in exact angular order (:func:`sort_rays`); above it
  by deletion–restriction: the
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
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cmp_to_key
from typing import TypeVar

import numpy as np

from absorb.blocks import ObjectArray
from absorb.exact import null_space, rank

Vector = tuple[Fraction, ...]
R = TypeVar("R", bound=Sequence[Fraction | int])

#: Enumerations above this many regions (resp. (d−1)-subsets for the rays) are not attempted.
MAX_REGIONS = 20000
MAX_RAY_SUBSETS = 20000


def region_bound(n: int, d: int) -> int:
    """The largest number of regions of n central hyperplanes in ℝ^d: 2 Σ_{i<d} C(n−1, i)."""
    if n == 0:
        return 1
    return 2 * sum(math.comb(n - 1, i) for i in range(d))


def dot(u: Sequence[Fraction | int], y: Sequence[Fraction | int]) -> Fraction:
    """uᵀy over ℚ."""
    return Fraction(sum((a * b for a, b in zip(u, y, strict=True)), Fraction(0)))


def _distinct(normals: ObjectArray) -> list[Vector]:
    """The nonzero rows, one per hyperplane (rows that are nonzero multiples of each other
    define the same hyperplane; the first one met represents it)."""
    seen: dict[tuple[int, ...], Vector] = {}
    for row in normals:
        if any(v != 0 for v in row):
            seen.setdefault(signless(row), tuple(row))
    return list(seen.values())


def cross(a: Sequence[Fraction | int], b: Sequence[Fraction | int]) -> Fraction:
    """a₁b₂ − a₂b₁ (> 0 iff b lies counter-clockwise of a within angle π)."""
    return Fraction(a[0] * b[1] - a[1] * b[0])


def _half(r: Sequence[Fraction | int]) -> int:
    return 0 if r[1] > 0 or (r[1] == 0 and r[0] > 0) else 1


def _angle_cmp(a: Sequence[Fraction | int], b: Sequence[Fraction | int]) -> int:
    ha, hb = _half(a), _half(b)
    if ha != hb:
        return ha - hb
    c = cross(a, b)
    return -1 if c > 0 else (1 if c < 0 else 0)


def sort_rays(rays: Iterable[R]) -> list[R]:
    """Plane vectors ≠ 0 in counter-clockwise order from the positive x-axis (exact)."""
    return sorted(rays, key=cmp_to_key(_angle_cmp))


def primitive(v: Sequence[Fraction | int]) -> tuple[int, ...]:
    """The primitive integer vector on the ray of v ≠ 0 (same direction)."""
    q = [Fraction(x) for x in v]
    scale = math.lcm(*(x.denominator for x in q))
    ints = [int(x * scale) for x in q]
    g = math.gcd(*ints)
    return tuple(x // g for x in ints)


def signless(v: Sequence[Fraction | int]) -> tuple[int, ...]:
    """The primitive integer vector of the line of v ≠ 0, first nonzero entry positive (so
    also the normal of the hyperplane v^⊥, one per hyperplane)."""
    p = primitive(v)
    return p if next(x for x in p if x != 0) > 0 else tuple(-x for x in p)


def _idot(u: Sequence[int], y: Sequence[int]) -> int:
    return sum(a * b for a, b in zip(u, y, strict=True))


def _sectors(normals: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """d = 2: one point in each open sector between the lines u^⊥ (angular order, exact)."""
    rays = sort_rays([r for u in normals for r in ((-u[1], u[0]), (u[1], -u[0]))])
    out: list[tuple[int, ...]] = []
    for a, b in zip(rays, rays[1:] + rays[:1], strict=True):
        out.append((a[0] + b[0], a[1] + b[1]) if cross(a, b) > 0 else (-a[1], a[0]))
    return out


def _points(normals: list[tuple[int, ...]], d: int) -> list[tuple[int, ...]]:
    """One integer point in each open region of the arrangement of the distinct primitive
    integer ``normals`` in ℚ^d (deletion–restriction; module docstring)."""
    if not normals:
        return [tuple(int(i == 0) for i in range(d))]
    if d == 1:
        return [(1,), (-1,)]
    if d == 2:
        return _sectors(normals)
    *rest, u = normals
    kept = [p for p in _points(rest, d) if _idot(u, p) != 0]
    null = null_space(np.array([list(u)], dtype=object))  # columns span H = u^⊥
    B = [primitive(list(null[:, k])) for k in range(d - 1)]
    lower = sorted({signless(w) for w in ([_idot(b, v) for b in B] for v in rest) if any(w)})
    for q_low in _points(lower, d - 1):
        q = [sum(c * b[i] for c, b in zip(q_low, B, strict=True)) for i in range(d)]
        ratios = [Fraction(abs(_idot(v, q)), abs(_idot(v, u))) for v in rest
                  if _idot(v, u) != 0 and _idot(v, q) != 0]
        eps = min(ratios) / 2 if ratios else Fraction(1)
        kept += [tuple(a * eps.denominator + s * eps.numerator * b
                       for a, b in zip(q, u, strict=True)) for s in (1, -1)]
    unique: dict[tuple[bool, ...], tuple[int, ...]] = {}
    for p in kept:
        unique.setdefault(tuple(_idot(v, p) > 0 for v in normals), p)
    return list(unique.values())


def region_points(U: ObjectArray) -> list[Vector] | None:
    """One rational interior point of every open region of the arrangement of U's rows
    (zero rows are never active and are left out); None above :data:`MAX_REGIONS`."""
    d = int(U.shape[1])
    normals = sorted({signless(row) for row in U if any(v != 0 for v in row)})
    if region_bound(len(normals), d) > MAX_REGIONS:
        return None
    return [tuple(Fraction(x) for x in p) for p in _points(normals, d)]


def active_pattern(U: ObjectArray, y: Vector) -> tuple[int, ...]:
    """The units j with u_jᵀy > 0 (the diagonal of D at y)."""
    return tuple(j for j, row in enumerate(U) if dot(tuple(row), y) > 0)


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
