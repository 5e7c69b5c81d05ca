"""Injectivity of one residual block R(y) = A y + W ReLU(U y) (ReLU, no biases), exactly over ℚ.

Two sufficient tests, any d (docs/THEORY.md, ``depth_injective``):

* **monotone**: J + Jᵀ ≻ 0 for J = A + W D U at every realized pattern D (one rational point
  per open region of U's arrangement, :func:`absorb.stacks.arrangement.region_points`); then
  (R(x) − R(y))·(x − y) = ∫₀¹ (x − y)ᵀ J(t) (x − y) dt > 0 for x ≠ y (the segment crosses
  finitely many regions). Positive definiteness by Sylvester's criterion: every leading
  principal minor > 0, each an exact determinant;
* **norm**: identity skip and ‖W‖₂‖U‖₂ < 1, proved by rationals a, b with aI − WWᵀ ≻ 0,
  bI − UᵀU ≻ 0 (Sylvester again) and ab < 1; then ‖W D U‖₂ < 1 for every 0 ≤ D ≤ I, R − I is a
  contraction and R is injective.

In d = 2 injectivity is decided (:func:`winding_test`): a realized det J = 0, or two realized
dets of opposite signs, make R not injective; if all have one sign, R is a local homeomorphism of
ℝ² ∖ {0}, positively homogeneous, and injective iff the image of the unit circle winds ±1 times
around 0. The image of the circle is the closed polygon through the images R(r_i) of the sorted
sector rays (each sector has angle < π and is mapped linearly and invertibly, so each edge turns
by less than π); the winding number is the sum of the edges' turns, measured exactly with the
"diamond angle" (a rational, strictly monotone function of the angle with period 4 in which a
half-turn is exactly 2), so each edge's turn is the representative in (−2, 2) of the difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.blocks import Block
from absorb.exact import det
from absorb.rationals import rational_text
from absorb.stacks.arrangement import active_pattern, region_points
from absorb.stacks.plane import Layer, det2, layers_of, sectors, subdivide


@dataclass(frozen=True)
class Injectivity:
    """Whether a block was proved injective (``injective`` True), proved not injective (False,
    d = 2 only), or neither (None); ``method`` names the test that decided."""

    layer: int
    injective: bool | None
    method: str
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"layer": self.layer, "injective": self.injective, "method": self.method,
                "detail": self.detail}


def positive_definite(M: Sequence[Sequence[Fraction]]) -> bool:
    """Whether the symmetric rational matrix M is positive definite (Sylvester, exact)."""
    size = len(M)
    return all(det(np.array([list(row[:k]) for row in M[:k]], dtype=object)) > 0
               for k in range(1, size + 1))


def _symmetric_part(J: Sequence[Sequence[Fraction]]) -> list[list[Fraction]]:
    return [[J[i][k] + J[k][i] for k in range(len(J))] for i in range(len(J))]


def _gram(rows: Sequence[Sequence[Fraction]], transpose: bool) -> list[list[Fraction]]:
    """WWᵀ (rows of W) or UᵀU (rows of U, ``transpose``)."""
    M = np.array([list(r) for r in rows], dtype=object)
    G = M.T @ M if transpose else M @ M.T
    return [[Fraction(v) for v in row] for row in G]


def _upper_eigen(G: list[list[Fraction]]) -> Fraction | None:
    """A rational a with aI − G ≻ 0 (G symmetric PSD), from the float eigenvalue, checked."""
    top = float(np.max(np.linalg.eigvalsh(np.array(G, dtype=np.float64)), initial=0.0))
    for slack in (1e-12, 1e-9, 1e-6, 1e-3):
        a = Fraction(top * (1 + slack) + slack).limit_denominator(1 << 40) + Fraction(1, 1 << 40)
        shifted = [[(a if i == k else 0) - G[i][k] for k in range(len(G))]
                   for i in range(len(G))]
        if positive_definite(shifted):
            return a
    return None


def norm_test(f: Layer) -> tuple[bool, str]:
    """‖W‖₂‖U‖₂ < 1 proved by rationals a, b (identity skip only)."""
    d = len(f.A)
    if any(f.A[i][k] != int(i == k) for i in range(d) for k in range(d)):
        return False, "the norm test needs the identity skip"
    a = _upper_eigen(_gram(f.W, False))
    b = _upper_eigen(_gram(f.U, True))
    if a is None or b is None or a * b >= 1:
        return False, "no rationals a, b with aI ≻ WWᵀ, bI ≻ UᵀU and ab < 1 were found"
    return True, (f"aI − WWᵀ ≻ 0 and bI − UᵀU ≻ 0 with a = {rational_text(a)}, "
                  f"b = {rational_text(b)}, ab = {float(a * b):.6g} < 1")


def monotone_test(f: Layer, points: Sequence[Sequence[Fraction]]) -> tuple[bool, str]:
    """J + Jᵀ ≻ 0 at the pattern of every given interior point (one per open region)."""
    U = np.array([list(u) for u in f.U], dtype=object)
    for p in points:
        active = active_pattern(U, tuple(p))
        if not positive_definite(_symmetric_part(f.jacobian(active))):
            return False, f"J + Jᵀ is not positive definite on the region of pattern {list(active)}"
    return True, f"J + Jᵀ ≻ 0 on all {len(points)} regions (Sylvester, exact)"


def diamond(v: Sequence[Fraction]) -> Fraction:
    """A rational, strictly increasing function of the angle of v ≠ 0, from 0 to 4 (a half-turn
    adds exactly 2)."""
    x, y = Fraction(v[0]), Fraction(v[1])
    if y >= 0:
        return y / (x + y) if x >= 0 else 1 - x / (-x + y)
    return 2 - y / (-x - y) if x < 0 else 3 + x / (x - y)


def winding(images: Sequence[Sequence[Fraction]]) -> Fraction:
    """The winding number about 0 of the closed polygon through ``images`` (each edge turning by
    less than π, none through 0)."""
    total = Fraction(0)
    for p, q in zip(images, list(images[1:]) + list(images[:1]), strict=True):
        step = diamond(q) - diamond(p)
        step += 4 if step <= -2 else (-4 if step >= 2 else 0)
        total += step
    return total / 4


def winding_test(f: Layer) -> tuple[bool, str]:
    """d = 2: injective iff every open-sector det has one sign and the winding number is ±1."""
    secs = sectors([f], subdivide([f]))
    dets = [det2(f.jacobian(s.active[0])) for s in secs]
    if any(v == 0 for v in dets):
        return False, "a realized pattern has det J = 0"
    if min(dets) < 0 < max(dets):
        return False, "realized dets of both signs (the block folds)"
    turns = winding([f(tuple(map(Fraction, s.a))) for s in secs])
    if abs(turns) != 1:
        return False, f"every realized det has one sign, but the winding number is {turns}"
    return True, (f"all {len(secs)} sector dets {'> 0' if dets[0] > 0 else '< 0'} and the "
                  f"image of the circle winds {turns} times (exact)")


def block_injectivity(block: Block, layer: int) -> Injectivity:
    """The tests of the module docstring on one block (decided in d = 2)."""
    f = layers_of([block])[0]
    ok, why = norm_test(f)
    if ok:
        return Injectivity(layer, True, "norm", why)
    if block.d == 2:
        ok, why = winding_test(f)
        return Injectivity(layer, ok, "winding", why)
    points: Any = region_points(np.array([list(u) for u in f.U], dtype=object)
                                .reshape(len(f.U), block.d))
    if points is None:
        return Injectivity(layer, None, "none", "too many regions to enumerate")
    ok, why = monotone_test(f, points)
    return Injectivity(layer, True if ok else None, "monotone" if ok else "none", why)
