"""The kink decisions on bias-free ReLU residual stacks: (Inj), (I), (D′), (D_L), exactly over ℚ.

Theorems (docs/THEORY.md): ``depth_injective`` (Corollary B0: every block injective ⇒ no
residual-free H with some hidden width < 2d equals R), ``depth_two_kinks`` (Theorem A: depth 2,
(I) ∧ (D′) ⇒ R equals no H of depth 2 with first width exactly 2d and second width m),
``depth_kink_rays`` (Theorem B, d = 2: every block injective and more than 2·L·d kink rays ⇒ R
equals no H of depth L with every width 2d).

* (I): det(I + W_l D U_l) ≠ 0 for every realized pattern D of block l — the pattern on a sector
  where R_{<l} has det ≠ 0 (its image there is an open cone inside one open region of U_l;
  conversely an open region meeting the image set with interior meets one such cone openly);
* kink pieces (d = 2: kink rays) with their columns from the adjacent Jacobians
  (:mod:`absorb.stacks.plane`);
* (D′): for every set S of at most d supports with independent normals, the column directions
  (up to sign) of the pieces whose support is outside S number more than m — tested as an
  exhaustive minimum over all such S (:func:`d_prime`), never a greedy choice;
* the regime of a failure of (D′) at depth 2: k, the number of open regions of U_2 that R_1's
  image meets (k = 1: single-sector folded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.exact import rank
from absorb.rationals import rational_text
from absorb.stacks.arrangement import signless
from absorb.stacks.plane import Kink, Layer, Sector, det2, kinks, sectors, subdivide

#: Decisions predicted to cut the plane into more sectors than this are refused.
MAX_SECTORS = 20000
#: The certificate format written by ``absorb stack --certificate-out``.
FORMAT = "absorb-stack-kinks/1"

Direction = tuple[int, ...]


def predicted_sectors(widths: Sequence[int]) -> int:
    """An upper bound on the sectors :func:`absorb.stacks.plane.subdivide` makes (d = 2): the
    four axes and block 1's 2n₁ rays, then at most one new ray per unit and sector."""
    count = 4 + 2 * widths[0]
    for n in widths[1:]:
        count *= 1 + n
    return count


@dataclass(frozen=True)
class DPrime:
    """(D′)'s exhaustive minimum: the fewest column directions left outside any admissible S."""

    count: int
    S: tuple[Direction, ...]
    directions: int
    supports: int

    def holds(self, m: int) -> bool:
        return self.count > m

    def to_json(self) -> dict[str, object]:
        return {"min_directions_outside_S": self.count, "S": [list(s) for s in self.S],
                "directions": self.directions, "supports": self.supports}


def d_prime(pieces: Sequence[tuple[Direction, Direction]], d: int) -> DPrime:
    """Minimum over every set S of ≤ d supports with linearly independent normals of the number
    of column directions carried by pieces (support, direction) whose support is not in S.

    A direction leaves the count iff every support carrying it is in S, so only directions
    carried by at most d supports can leave, and S may be shrunk to the union of the carrier
    sets it contains without changing the count (a subset of an independent set is
    independent): the minimum is over unions of carrier sets, searched exhaustively (depth
    first, pruned by an upper bound on what the remaining room can still remove)."""
    carriers: dict[Direction, set[Direction]] = {}
    for s, c in pieces:
        carriers.setdefault(c, set()).add(s)
    small = [frozenset(v) for v in carriers.values() if len(v) <= d]
    total = len(carriers)
    gain_of: dict[Direction, int] = {}
    for cs in small:
        for s in cs:
            gain_of[s] = gain_of.get(s, 0) + 1
    options = sorted(set(small), key=lambda cs: (-sum(gain_of[s] for s in cs), sorted(cs)))
    best: list[Any] = [0, frozenset()]

    def removed(S: frozenset[Direction]) -> int:
        return sum(1 for cs in small if cs <= S)

    def bound(S: frozenset[Direction]) -> int:
        room = sorted((gain_of[s] for s in gain_of if s not in S), reverse=True)[:d - len(S)]
        return removed(S) + sum(room)

    def search(S: frozenset[Direction], start: int) -> None:
        r = removed(S)
        if r > best[0] and _independent(S):
            best[0], best[1] = r, S
        if len(S) == d or bound(S) <= best[0]:
            return
        for i in range(start, len(options)):
            T = S | options[i]
            if len(T) <= d and T != S and _independent(T):
                search(T, i + 1)

    search(frozenset(), 0)
    return DPrime(total - best[0], tuple(sorted(best[1])), total,
                  len({s for s, _ in pieces}))


def _independent(S: frozenset[Direction]) -> bool:
    """Whether the (pairwise non-parallel, primitive) normals in S are linearly independent."""
    if len(S) <= 2:
        return True  # distinct signless primitive vectors are never parallel
    return rank(np.array([list(s) for s in S], dtype=object)) == len(S)


@dataclass(frozen=True)
class Realized:
    """(I) for one block: the realized patterns (on sectors where R_{<l} is invertible)."""

    layer: int
    patterns: tuple[tuple[int, ...], ...]
    min_abs_det: Fraction | None
    singular: tuple[tuple[int, ...], tuple[Fraction, ...]] | None

    @property
    def holds(self) -> bool:
        return self.singular is None

    def to_json(self) -> dict[str, object]:
        return {"layer": self.layer, "realized_patterns": [list(p) for p in self.patterns],
                "min_abs_det": (None if self.min_abs_det is None
                                else rational_text(self.min_abs_det)),
                "singular": (None if self.singular is None else
                             {"pattern": list(self.singular[0]),
                              "point": [rational_text(v) for v in self.singular[1]]})}


def realized(layers: Sequence[Layer], secs: Sequence[Sector]) -> list[Realized]:
    """(I) block by block (module docstring)."""
    out = []
    for ell, f in enumerate(layers):
        seen: dict[tuple[int, ...], Fraction] = {}
        singular = None
        for s in secs:
            if det2(s.prefix[ell]) == 0 or s.active[ell] in seen:
                continue
            value = det2(f.jacobian(s.active[ell]))
            seen[s.active[ell]] = abs(value)
            if value == 0 and singular is None:
                singular = (s.active[ell], s.midpoint)
        out.append(Realized(ell, tuple(seen), min(seen.values(), default=None), singular))
    return out


@dataclass(frozen=True)
class Plane:
    """Everything the d = 2 decisions read: the sectors, the kink rays, (I), (D′), k."""

    secs: list[Sector]
    kinks: list[Kink]
    realized: list[Realized]
    dprime: DPrime
    regions_met: int | None

    @property
    def kink_lines(self) -> int:
        return len({signless(k.normal) for k in self.kinks})


def analyse(layers: Sequence[Layer]) -> Plane:
    """The exact d = 2 analysis of a stack (callers check :func:`predicted_sectors` first)."""
    secs = sectors(layers, subdivide(layers))
    ks = kinks(secs)
    pieces = [(signless(k.normal), signless(k.column)) for k in ks]
    met = (len({s.active[1] for s in secs if det2(s.prefix[1]) != 0})
           if len(layers) >= 2 else None)
    return Plane(secs, ks, realized(layers, secs), d_prime(pieces, 2), met)


def certificate(layers: Sequence[Layer], plane: Plane, *, theorem: str, against: str,
                m: int | None, injectivity: Sequence[dict[str, object]]) -> dict[str, object]:
    """The re-checkable document of a ``not_absorbed`` verdict (``absorb stack --recheck``)."""
    L = len(layers)
    return {
        "format": FORMAT, "theorem": theorem, "against": against, "d": 2, "depth": L,
        "widths": [len(f.U) for f in layers], "m": m,
        "rays": [list(s.a) for s in plane.secs],
        "kinks": [{"ray": list(k.ray), "normal": list(k.normal),
                   "column": [rational_text(v) for v in k.column],
                   "direction": list(signless(k.column)),
                   "witness_before": [rational_text(v) for v in _side(plane, k, -1)],
                   "witness_after": [rational_text(v) for v in _side(plane, k, 1)]}
                  for k in plane.kinks],
        "realized": [r.to_json() for r in plane.realized],
        "d_prime": plane.dprime.to_json(),
        "kink_rays": len(plane.kinks), "ray_bound": ray_count_bound(L),
        "injectivity": list(injectivity),
    }


def _side(plane: Plane, k: Kink, side: int) -> tuple[Fraction, ...]:
    """The interior point (sector midpoint) of the sector after (side 1) or before the ray."""
    i = next(j for j, s in enumerate(plane.secs) if s.a == k.ray)
    return plane.secs[i if side > 0 else i - 1].midpoint


def ray_count_bound(depth: int, d: int = 2) -> int:
    """Theorem B's bound: H of depth L with widths 2d has at most 2·L·d kink rays (d = 2)."""
    return 2 * depth * d
