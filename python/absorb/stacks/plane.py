"""A bias-free ReLU residual stack in the plane (d = 2), cut exactly into its linear sectors.

R = R_L ∘ … ∘ R_1, R_l(y) = A_l y + W_l ReLU(U_l y), is positively homogeneous and piecewise
linear; in ℝ² its pieces are sectors between rays. :func:`subdivide` finds, exactly over ℚ, a
cyclically ordered list of primitive integer rays r_0, …, r_{k−1} such that

* every sector (r_i, r_{i+1}) has angle < π (the four axis rays are always included), and
* on every open sector, every block's pattern sign(u·R_{<l}(x)) is constant,

so R (and every R_{<l}) is linear on each closed sector. Construction, block by block: while
R_{<l} is linear on a sector (a, b), u·R_{<l}(αa + βb) = α u·R_{<l}(a) + β u·R_{<l}(b) is linear
in (α, β) ≥ 0, so it changes sign inside the sector iff s_a = u·R_{<l}(a) and s_b = u·R_{<l}(b)
have strictly opposite signs, and then exactly on the ray |s_b| a + |s_a| b. These are block
l's lines pulled back through the earlier blocks, computed exactly. No LP is needed in d = 2.

On the sector (a, b) the Jacobian is M = [R(a) R(b)] [a b]⁻¹; across a ray r the jump ΔDR
satisfies ΔDR·r = 0 (continuity), so ΔDR = c νᵀ with ν = (−r₂, r₁) and c = ΔDR·ν/|ν|² — the
ray's column, read from the two adjacent Jacobians (so coincident jumps add and cancelling
jumps vanish: a ray is a kink ray iff c ≠ 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from absorb.blocks import Block
from absorb.stacks.arrangement import cross, dot, primitive, sort_rays

Vec = tuple[Fraction, ...]
Ray = tuple[int, int]
Mat = tuple[tuple[Fraction, Fraction], tuple[Fraction, Fraction]]

AXES: tuple[Ray, ...] = ((1, 0), (0, 1), (-1, 0), (0, -1))


@dataclass(frozen=True)
class Layer:
    """One block over ℚ: the rows u_j of U, W as rows (d × n), the skip A (d × d)."""

    U: tuple[Vec, ...]
    W: tuple[Vec, ...]
    A: tuple[Vec, ...]

    def pre(self, y: Vec) -> tuple[Fraction, ...]:
        """The pre-activations u_j·y."""
        return tuple(dot(u, y) for u in self.U)

    def __call__(self, y: Vec) -> Vec:
        relu = [max(p, Fraction(0)) for p in self.pre(y)]
        return tuple(dot(a, y) + dot(w, relu) for a, w in zip(self.A, self.W, strict=True))

    def jacobian(self, active: Sequence[int]) -> tuple[Vec, ...]:
        """A + W D U for the pattern D = diag(1 on ``active``)."""
        d = len(self.A)
        return tuple(tuple(self.A[i][k] + sum((self.W[i][j] * self.U[j][k] for j in active),
                                              Fraction(0)) for k in range(d))
                     for i in range(d))


def layers_of(blocks: Sequence[Block]) -> list[Layer]:
    """The blocks' stored weights over ℚ (floats are the dyadic rationals they store)."""
    out = []
    for b in blocks:
        U, W, A = b.rational_weights
        out.append(Layer(*(tuple(tuple(Fraction(v) for v in row) for row in np.asarray(M))
                           for M in (U, W, A))))
    return out


def prefix_image(layers: Sequence[Layer], x: Vec) -> list[Vec]:
    """[x, R_1 x, R_2 R_1 x, …] (L + 1 points)."""
    points = [x]
    for f in layers:
        points.append(f(points[-1]))
    return points


def subdivide(layers: Sequence[Layer]) -> list[Ray]:
    """The cyclically ordered rays of the module docstring (exact)."""
    rays: set[Ray] = set(AXES)
    for ell, f in enumerate(layers):
        order = sort_rays(rays)
        images = {r: prefix_image(layers[:ell], tuple(map(Fraction, r)))[-1] for r in order}
        for a, b in zip(order, order[1:] + order[:1], strict=True):
            pa, pb = images[a], images[b]
            for u in f.U:
                sa, sb = dot(u, pa), dot(u, pb)
                if sa * sb < 0:
                    r = primitive([abs(sb) * a[i] + abs(sa) * b[i] for i in range(2)])
                    rays.add((r[0], r[1]))
    return sort_rays(rays)


def sector_matrix(a: Ray, b: Ray, pa: Vec, pb: Vec) -> Mat:
    """The linear map M with M a = pa and M b = pb (a, b independent)."""
    det_ab = cross(a, b)
    # [a b]⁻¹ = [[b₂, −b₁], [−a₂, a₁]] / det
    inv = ((Fraction(b[1]) / det_ab, Fraction(-b[0]) / det_ab),
           (Fraction(-a[1]) / det_ab, Fraction(a[0]) / det_ab))
    return tuple(tuple(pa[i] * inv[0][k] + pb[i] * inv[1][k] for k in range(2))
                 for i in range(2))  # type: ignore[return-value]


def det2(M: Sequence[Sequence[Fraction]]) -> Fraction:
    return M[0][0] * M[1][1] - M[0][1] * M[1][0]


@dataclass(frozen=True)
class Sector:
    """The closed sector from ray ``a`` counter-clockwise to ray ``b``: R_{<l}'s Jacobians
    (l = 0..L, ``prefix[0]`` = I) and each block's active units on its interior."""

    a: Ray
    b: Ray
    prefix: tuple[Mat, ...]
    active: tuple[tuple[int, ...], ...]

    @property
    def midpoint(self) -> Vec:
        """a + b: an interior point (the angle is < π)."""
        return (Fraction(self.a[0] + self.b[0]), Fraction(self.a[1] + self.b[1]))


def sectors(layers: Sequence[Layer], rays: Sequence[Ray]) -> list[Sector]:
    """Every sector of the subdivision with its Jacobians and patterns (exact)."""
    images = {r: prefix_image(layers, tuple(map(Fraction, r))) for r in rays}
    out = []
    for a, b in zip(rays, list(rays[1:]) + list(rays[:1]), strict=True):
        prefix = tuple(sector_matrix(a, b, images[a][ell], images[b][ell])
                       for ell in range(len(layers) + 1))
        mid = prefix_image(layers, (Fraction(a[0] + b[0]), Fraction(a[1] + b[1])))
        active = tuple(tuple(j for j, p in enumerate(f.pre(mid[ell])) if p > 0)
                       for ell, f in enumerate(layers))
        out.append(Sector(a, b, prefix, active))
    return out


@dataclass(frozen=True)
class Kink:
    """A ray across which DR jumps: ΔDR = c νᵀ, ν the ray's primitive normal (−r₂, r₁)."""

    ray: Ray
    normal: Ray
    column: Vec


def kinks(secs: Sequence[Sector]) -> list[Kink]:
    """The kink rays: each subdivision ray whose column c = (M_after − M_before)ν/|ν|² ≠ 0."""
    out = []
    for before, after in zip(list(secs[-1:]) + list(secs[:-1]), secs, strict=True):
        r = after.a
        nu = (-r[1], r[0])
        M0, M1 = before.prefix[-1], after.prefix[-1]
        delta = [[M1[i][k] - M0[i][k] for k in range(2)] for i in range(2)]
        assert all(dot(delta[i], r) == 0 for i in range(2)), "R is continuous across a ray"
        norm2 = nu[0] ** 2 + nu[1] ** 2
        c = tuple(dot(delta[i], nu) / norm2 for i in range(2))
        if any(v != 0 for v in c):
            out.append(Kink(r, primitive(nu), c))  # type: ignore[arg-type]
    return out
