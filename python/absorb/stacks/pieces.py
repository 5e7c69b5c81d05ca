"""Kink pieces of a depth-2 stack in any d, by exact region enumeration (no LP).

R = R_2 ∘ R_1, R_l(y) = y + W_l ReLU(U_l y). On a region K of U_1's arrangement R_1 = L_K
(linear); R's cells inside K are the regions of A_K = {u_i} ∪ {L_Kᵀu'_j} lying in K. Pieces:

* **inside K** (type B): for each hyperplane g = L_Kᵀu'_j, one point q in every region of A_K
  restricted to g^⊥ (:func:`absorb.stacks.arrangement.region_points` in the coordinates of a
  basis of g^⊥), kept when q is strictly inside K;
* **on a wall u_i^⊥** (type A): one point f in every region of U_1's arrangement restricted to
  u_i^⊥ (a facet between K at f + εu_i and K′ at f − εu_i), then one point q in every region of
  {u_k} ∪ {L_Kᵀu'} ∪ {L_K′ᵀu'} restricted to u_i^⊥, kept when q is in the facet's relative
  interior (the signs of every u_k not parallel to u_i as at f).

Every kept q lies on no hyperplane of R's complex except those parallel to the support ν, so a
neighbourhood of q is cut by ν^⊥ alone: x± = q ± εν with ε below every |h·q|/|h·ν| (h·q ≠ 0)
lie in the two adjacent open cells, and the column is c = (DR(x₊) − DR(x₋))ν/|ν|² — the jumps
of all units on ν^⊥ added, so cancelling jumps vanish. A piece is kept when c ≠ 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.blocks import Block, ObjectArray
from absorb.exact import det, identity, null_space
from absorb.rationals import rational_text
from absorb.stacks.arrangement import dot, region_bound, region_points, signless
from absorb.stacks.kinks import DPrime, Realized, d_prime

Vec = tuple[Fraction, ...]
#: Measured cost of one candidate point (benchmarks/stack_bench.py: 160–220 µs at d = 3, 4 on
#: the 2-core reference machine), to state a refusal in seconds.
SECONDS_PER_POINT = 2.5e-4
#: Decisions predicted to visit more candidate points than this (about six minutes) are refused.
MAX_POINTS = 1_500_000
#: The certificate format of a depth_two_kinks verdict in any d (``absorb stack --recheck``).
PIECES_FORMAT = "absorb-stack-pieces/1"


def predicted_points(d: int, n1: int, n2: int) -> int:
    """An upper bound on the candidate points :func:`pieces` visits (type B, type A, and the
    realized cells of block 2)."""
    regions = region_bound(n1, d)
    inside = regions * n2 * region_bound(n1 + n2, d - 1)
    walls = n1 * region_bound(n1, d - 1) * region_bound(n1 + 2 * n2, d - 1)
    return inside + walls + regions * region_bound(n1 + n2, d)


@dataclass(frozen=True)
class Piece:
    """A kink piece: witness q on the support ν^⊥, the two side points, the column."""

    normal: Vec
    point: Vec
    before: Vec
    after: Vec
    column: Vec


class _Stack:
    """The two blocks over ℚ, with R's Jacobian at a point off every hyperplane."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        (self.U1, self.W1, _), (self.U2, self.W2, _) = (b.rational_weights for b in blocks)
        self.d = int(self.U1.shape[1])
        self.I = identity(self.d)

    def L(self, x: Vec) -> ObjectArray:
        """R_1's Jacobian on the region of U_1 holding x."""
        act = [j for j, u in enumerate(self.U1) if dot(u, x) > 0]
        out: ObjectArray = self.I + self.W1[:, act] @ self.U1[act, :]
        return out

    def R1(self, x: Vec) -> Vec:
        return tuple((self.L(x) @ np.array(x, dtype=object)).tolist())

    def jacobian(self, x: Vec) -> ObjectArray:
        y = self.R1(x)
        act = [j for j, u in enumerate(self.U2) if dot(u, y) > 0]
        out: ObjectArray = (self.I + self.W2[:, act] @ self.U2[act, :]) @ self.L(x)
        return out


def _restricted(normals: Sequence[Vec], nu: Vec) -> list[Vec]:
    """One point in every region of the arrangement of ``normals`` restricted to ν^⊥."""
    d = len(nu)
    B = null_space(np.array([list(nu)], dtype=object))  # d × (d−1)
    low = np.array([list(B.T @ np.array(g, dtype=object)) for g in normals],
                   dtype=object).reshape(len(normals), d - 1)
    points = region_points(low) if len(normals) else [tuple(Fraction(int(i == 0))
                                                            for i in range(d - 1))]
    assert points is not None  # callers bound the size with predicted_points
    return [tuple((B @ np.array(q, dtype=object)).tolist()) for q in points]


def _piece(S: _Stack, hyperplanes: Sequence[Vec], nu: Vec, q: Vec) -> Piece | None:
    ratios = [abs(dot(h, q)) / abs(dot(h, nu)) for h in hyperplanes
              if dot(h, q) != 0 and dot(h, nu) != 0]
    eps = min(ratios, default=Fraction(1)) / 2
    before = tuple(a - eps * b for a, b in zip(q, nu, strict=True))
    after = tuple(a + eps * b for a, b in zip(q, nu, strict=True))
    delta = S.jacobian(after) - S.jacobian(before)
    c = tuple(Fraction(v) for v in delta @ np.array(nu, dtype=object) / dot(nu, nu))
    if all(v == 0 for v in c):
        return None
    return Piece(nu, q, before, after, c)


def _rows(M: ObjectArray) -> list[Vec]:
    return [tuple(Fraction(v) for v in r) for r in M if any(v != 0 for v in r)]


def _second(S: _Stack, x: Vec) -> list[Vec]:
    """The hyperplanes L_Kᵀu'_j of block 2 pulled back on the region K of x."""
    return _rows(S.U2 @ S.L(x))


def pieces(S: _Stack) -> list[Piece]:
    """Every kink piece (one witness per face; module docstring)."""
    out: list[Piece] = []
    U1 = _rows(S.U1)
    regions = region_points(S.U1) or []
    for p in regions:  # inside K
        inner = _second(S, p)
        A = U1 + inner
        sign = [dot(u, p) > 0 for u in U1]
        for g in {signless(h): h for h in inner}.values():
            for q in _restricted(A, g):
                if all(dot(u, q) != 0 and (dot(u, q) > 0) == s
                       for u, s in zip(U1, sign, strict=True)):
                    piece = _piece(S, A, g, q)
                    if piece is not None:
                        out.append(piece)
    for u in {signless(v): v for v in U1}.values():  # on the walls
        for f in _restricted(U1, u):
            ratios = [abs(dot(v, f)) / abs(dot(v, u)) for v in U1
                      if dot(v, f) != 0 and dot(v, u) != 0]
            eps = min(ratios, default=Fraction(1)) / 2
            sides = [tuple(a + s * eps * b for a, b in zip(f, u, strict=True)) for s in (1, -1)]
            A = U1 + _second(S, sides[0]) + _second(S, sides[1])
            off = [(v, dot(v, f) > 0) for v in U1 if dot(v, f) != 0]
            for q in _restricted(A, u):
                if all(dot(v, q) != 0 and (dot(v, q) > 0) == s for v, s in off):
                    piece = _piece(S, A, u, q)
                    if piece is not None:
                        out.append(piece)
    return out


def realized(S: _Stack) -> tuple[list[Realized], int]:
    """(I) for both blocks, and k: the open regions of U_2 that R_1's image meets."""
    first: dict[tuple[int, ...], Fraction] = {}
    second: dict[tuple[int, ...], Fraction] = {}
    sing: list[tuple[tuple[int, ...], Vec] | None] = [None, None]
    for p in region_points(S.U1) or []:
        act = tuple(j for j, u in enumerate(S.U1) if dot(u, p) > 0)
        value = det(S.L(p))
        first[act] = abs(value)
        if value == 0:
            sing[0] = sing[0] or (act, p)
            continue
        U1 = _rows(S.U1)
        sign = [dot(u, p) > 0 for u in U1]
        A = np.array(U1 + _second(S, p), dtype=object).reshape(-1, S.d)
        for x in region_points(A) or []:
            if all((dot(u, x) > 0) == s for u, s in zip(U1, sign, strict=True)):
                y = S.R1(x)
                act2 = tuple(j for j, u in enumerate(S.U2) if dot(u, y) > 0)
                J2 = S.I + S.W2[:, list(act2)] @ S.U2[list(act2), :]
                second[act2] = abs(det(J2))
                if second[act2] == 0:
                    sing[1] = sing[1] or (act2, x)
    out = [Realized(ell, tuple(seen), min(seen.values(), default=None), sing[ell])
           for ell, seen in enumerate((first, second))]
    return out, len(second)


@dataclass(frozen=True)
class DepthTwo:
    """The depth-2 analysis in any d: (I), the kink pieces, (D′) and k."""

    realized: list[Realized]
    pieces: list[Piece]
    dprime: DPrime
    regions_met: int


def certificate(blocks: Sequence[Block], res: DepthTwo, *, against: str
                ) -> dict[str, object]:
    """The re-checkable document of a ``depth_two_kinks`` verdict in any d."""
    def text(v: Vec) -> list[str]:
        return [rational_text(x) for x in v]

    return {"format": PIECES_FORMAT, "theorem": "depth_two_kinks", "against": against,
            "d": blocks[0].d, "depth": 2, "widths": [b.n for b in blocks], "m": blocks[1].n,
            "pieces": [{"normal": text(p.normal), "point": text(p.point),
                        "before": text(p.before), "after": text(p.after),
                        "column": text(p.column), "direction": list(signless(p.column))}
                       for p in res.pieces],
            "realized": [r.to_json() for r in res.realized], "d_prime": res.dprime.to_json()}


def analyse_depth_two(blocks: Sequence[Block]) -> DepthTwo:
    """(I), the pieces and (D′) of a depth-2 stack (callers check :func:`predicted_points`)."""
    S = _Stack(blocks)
    found = pieces(S)
    reals, k = realized(S)
    pairs = [(signless(p.normal), signless(p.column)) for p in found]
    return DepthTwo(reals, found, d_prime(pairs, S.d), k)

