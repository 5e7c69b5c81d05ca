"""Numerical checks of docs/THEORY.md §12a (stacks at width 2d and depth L), exact over ℚ.

Everything here is written from the theory with ``fractions.Fraction`` and knows nothing of the
package's stack code, so that it checks it: the jump-column formula of Lemma 12a.8 against finite
differences of the network (types A and B and a face of both types, several seeds, d = 2 and 3),
the normal form of Lemma 12a.6 on every 4-row P with entries in {−1, 0, 1} at d = 2, the
injectivity tests of Lemma 12a.2 (the winding-number example, the fold of part (c)), the narrow
layer of Lemma 12a.3, and the positive controls of Theorem C and Example 12a.14: each residual
stack in ``tests/fixtures/stacks`` equals its residual-free H in ``fixtures/stacks/absorbers``
on every cell of the plane.

At d = 2 both R and H are positively homogeneous and piecewise linear. Every breakpoint lies on a
ray of the *candidate* set: the lines of the first block, then each later block's lines pulled
back through the linear map of every sector of the earlier blocks, plus the axes (so that every
sector has angle < π). On a sector between consecutive candidates every layer is linear, so two
such maps that agree on all candidate rays agree on the plane: that is the exact equality check.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from fractions import Fraction
from functools import cmp_to_key
from itertools import combinations, product
from pathlib import Path

import pytest

Q = Fraction
Vec = list[Fraction]
Mat = list[list[Fraction]]
#: One block: (up-projection U, down-projection W, identity skip or not).
Block = tuple[Mat, Mat, bool]

STACKS = Path(__file__).resolve().parent / "fixtures" / "stacks"
CONTROLS = ("image_cone_d2_n4", "folded_single_sector_d2_n4", "folded_two_lines_d2_n4")


# ---------------------------------------------------------------- exact linear algebra, any d

def mat(rows: Sequence[Sequence[object]]) -> Mat:
    return [[Q(str(x)) for x in r] for r in rows]


def matvec(m: Mat, x: Sequence[Fraction]) -> Vec:
    return [sum((a * b for a, b in zip(row, x, strict=True)), Q(0)) for row in m]


def matmul(a: Mat, b: Mat) -> Mat:
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Q(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def transpose(m: Mat) -> Mat:
    return [list(c) for c in zip(*m, strict=True)]


def identity(d: int) -> Mat:
    return [[Q(int(i == j)) for j in range(d)] for i in range(d)]


def det(m: Mat) -> Fraction:
    """Determinant by exact Gaussian elimination."""
    a = [row[:] for row in m]
    n, sign, out = len(a), 1, Q(1)
    for c in range(n):
        piv = next((r for r in range(c, n) if a[r][c] != 0), None)
        if piv is None:
            return Q(0)
        if piv != c:
            a[c], a[piv] = a[piv], a[c]
            sign = -sign
        out *= a[c][c]
        for r in range(c + 1, n):
            f = a[r][c] / a[c][c]
            a[r] = [x - f * y for x, y in zip(a[r], a[c], strict=True)]
    return sign * out


def msub(a: Mat, b: Mat) -> Mat:
    return [[x - y for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]


def madd(a: Mat, b: Mat) -> Mat:
    return [[x + y for x, y in zip(ra, rb, strict=True)] for ra, rb in zip(a, b, strict=True)]


def dot(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return sum((x * y for x, y in zip(a, b, strict=True)), Q(0))


def relu(z: Fraction) -> Fraction:
    return z if z > 0 else Q(0)


def apply_block(block: Block, x: Sequence[Fraction]) -> Vec:
    """skip·x + W ReLU(U x)."""
    u, w, skip = block
    out = matvec(w, [relu(z) for z in matvec(u, x)])
    return [o + xi for o, xi in zip(out, x, strict=True)] if skip else out


def apply_stack(stack: Sequence[Block], x: Sequence[Fraction]) -> Vec:
    y = list(x)
    for block in stack:
        y = apply_block(block, y)
    return y


def pattern_matrix(block: Block, pattern: Sequence[bool]) -> Mat:
    """J(D) = skip·I + W D U for the 0/1 diagonal D of ``pattern``."""
    u, w, skip = block
    d = len(u[0])
    base = identity(d) if skip else [[Q(0)] * d for _ in range(d)]
    return [[base[i][j] + sum((w[i][k] * u[k][j] for k in range(len(u)) if pattern[k]), Q(0))
             for j in range(d)] for i in range(d)]


def strict_pattern(block: Block, y: Sequence[Fraction]) -> list[bool]:
    """The activation pattern at y, which must lie off every hyperplane of a nonzero row."""
    z = matvec(block[0], y)
    assert all(zi != 0 or all(c == 0 for c in row) for zi, row in zip(z, block[0], strict=True))
    return [zi > 0 for zi in z]


def finite_difference_jacobian(stack: Sequence[Block], x: Vec, h: Fraction) -> Mat:
    """Columns (R(x + h e_k) − R(x))/h: exact when R is linear on a ball of radius h about x."""
    d = len(x)
    base = apply_stack(stack, x)
    cols = []
    for k in range(d):
        xk = [xi + (h if i == k else 0) for i, xi in enumerate(x)]
        cols.append([(a - b) / h for a, b in zip(apply_stack(stack, xk), base, strict=True)])
    return transpose(cols)


# ---------------------------------------------------------------- the plane (d = 2)

Ray = tuple[Fraction, Fraction]
AXES: list[Ray] = [(Q(1), Q(0)), (Q(0), Q(1)), (Q(-1), Q(0)), (Q(0), Q(-1))]


def cross(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return a[0] * b[1] - a[1] * b[0]


def _half(v: Ray) -> int:
    return 0 if v[1] > 0 or (v[1] == 0 and v[0] > 0) else 1


def _by_angle(a: Ray, b: Ray) -> int:
    if _half(a) != _half(b):
        return _half(a) - _half(b)
    c = cross(a, b)
    return -1 if c > 0 else (1 if c < 0 else 0)


def ray(v: Sequence[Fraction]) -> Ray:
    """The ray through v ≠ 0, scaled to max |coordinate| = 1 (one representative per ray)."""
    m = max(abs(v[0]), abs(v[1]))
    return (v[0] / m, v[1] / m)


def sort_rays(rays: Sequence[Sequence[Fraction]]) -> list[Ray]:
    return sorted({ray(r) for r in rays}, key=cmp_to_key(_by_angle))


def sectors(rays: list[Ray]) -> list[tuple[Ray, Ray, Vec]]:
    """Consecutive pairs (a, b) of sorted rays with the interior point a + b."""
    out = []
    for k, a in enumerate(rays):
        b = rays[(k + 1) % len(rays)]
        out.append((a, b, [a[0] + b[0], a[1] + b[1]]))
    return out


def sector_matrix(stack: Sequence[Block], mid: Vec) -> Mat:
    """The linear map of the composition on the open sector containing ``mid`` (off every
    breakpoint of ``stack``). A row whose pre-activation vanishes on the whole sector contributes
    nothing whatever its pattern entry says (its pulled-back row is 0)."""
    m, y = identity(2), mid
    for block in stack:
        pattern = [z > 0 for z in matvec(block[0], y)]
        m = matmul(pattern_matrix(block, pattern), m)
        y = apply_block(block, y)
    return m


def candidate_rays(stack: Sequence[Block]) -> list[Ray]:
    """A set of rays containing every breakpoint of the composition, sorted, sectors < π."""
    rays = sort_rays(AXES)
    for depth, block in enumerate(stack):
        found: list[Sequence[Fraction]] = list(rays)
        for a, b, mid in sectors(rays):
            m = sector_matrix(stack[:depth], mid)
            for p in block[0]:
                n = matvec(transpose(m), p)
                if n == [0, 0]:
                    continue
                for r in ((-n[1], n[0]), (n[1], -n[0])):
                    if cross(a, r) > 0 and cross(r, b) > 0:
                        found.append(r)
        rays = sort_rays(found)
    return rays


def equal_on_plane(r: Sequence[Block], h: Sequence[Block]) -> bool:
    rays = sort_rays(candidate_rays(r) + candidate_rays(h))
    return all(apply_stack(r, v) == apply_stack(h, v) for v in rays)


def kink_rays(stack: Sequence[Block]) -> list[Ray]:
    """The candidate rays across which the Jacobian really jumps (adjacent sectors differ)."""
    rays = candidate_rays(stack)
    jac = [sector_matrix(stack, mid) for _, _, mid in sectors(rays)]
    return [rays[k] for k in range(len(rays)) if jac[k - 1] != jac[k]]


def kink_lines(stack: Sequence[Block]) -> set[Ray]:
    """Kink rays up to sign (the lines through 0 they span)."""
    return {max(r, ray([-r[0], -r[1]])) for r in kink_rays(stack)}


# ---------------------------------------------------------------- fixtures (read here, not by
# the package)

def load_residual(name: str) -> list[Block]:
    data = json.loads((STACKS / f"{name}.json").read_text())
    return [(mat(b["W_up"]), mat(b["W_down"]), True) for b in data["layers"]]


def load_absorber(name: str) -> list[Block]:
    data = json.loads((STACKS / "absorbers" / f"{name}.json").read_text())
    return [(mat(b["V_up"]), mat(b["V_down"]), False) for b in data["layers"]]


def has_index_set(block: Block) -> bool:
    u, w, _ = block
    minus_i = [[-x for x in row] for row in identity(len(u[0]))]
    return any(pattern_matrix((u, w, False), [k in s for k in range(len(u))]) == minus_i
               for r in range(len(u) + 1) for s in combinations(range(len(u)), r))


def pairwise_non_collinear(rows: Mat) -> bool:
    return all(cross(a, b) != 0 for a, b in combinations(rows, 2))


def realized_dets(stack: Sequence[Block], depth: int) -> set[Fraction]:
    """det J(D) over the patterns of block ``depth`` realized on its input set: the patterns at
    the images of the open sectors of the earlier blocks' refinement (Definition 12a.1), each
    image asserted to be an open set off block ``depth``'s hyperplanes."""
    rays = candidate_rays(stack[:depth + 1])
    dets = set()
    for _, _, mid in sectors(rays):
        assert det(sector_matrix(stack[:depth], mid)) != 0  # the image of the sector is open
        y = apply_stack(stack[:depth], mid)
        dets.add(det(pattern_matrix(stack[depth], strict_pattern(stack[depth], y))))
    return dets


@pytest.mark.parametrize("name", CONTROLS)
def test_positive_control_equals_its_residual_free_stack(name: str) -> None:
    r, h = load_residual(name), load_absorber(name)
    assert [len(b[0]) for b in r] == [len(b[0]) for b in h]  # the same widths
    assert equal_on_plane(r, h)
    grid = [Q(i, 3) for i in range(-6, 7)]
    assert all(apply_stack(r, [a, b]) == apply_stack(h, [a, b]) for a in grid for b in grid)
    spoiled = [(u, [row[:] for row in w], s) for u, w, s in h]
    spoiled[-1][1][0][0] += Q(1, 1024)
    assert not equal_on_plane(r, spoiled)  # the check can fail


@pytest.mark.parametrize("name", CONTROLS[1:])
def test_folded_controls_satisfy_condition_i(name: str) -> None:
    """(I) holds in every block: these controls sit where Theorem A can only fail through (D′)."""
    r = load_residual(name)
    for depth in range(len(r)):
        assert 0 not in realized_dets(r, depth)


def test_image_cone_control_fails_condition_i() -> None:
    """Block 1 of the image-cone control is singular on the realized cells where exactly one of
    its index-set units is active (I + w_0 u_0ᵀ with w_0 = −u_0): it is `undetermined` territory
    for Theorems A and B, absorbed by construction."""
    assert 0 in realized_dets(load_residual("image_cone_d2_n4"), 0)


def single_sector_region(r: Sequence[Block]) -> list[bool]:
    """The one open region of U_2 holding R_1(ℝ²)∖{0} (asserted): its sign pattern."""
    images = [apply_block(r[0], v) for v in candidate_rays(r[:1])]
    patterns = {tuple(strict_pattern(r[1], y)) for y in images}
    assert len(patterns) == 1 and all(y != [0, 0] for y in images)
    return list(patterns.pop())


@pytest.mark.parametrize(("name", "lines", "half_det_zero"),
                         [("folded_single_sector_d2_n4", 4, True),
                          ("folded_two_lines_d2_n4", 2, False)])
def test_folded_controls_are_single_sector(name: str, lines: int, half_det_zero: bool) -> None:
    """Theorem C: R = L'_C ∘ R_1 with R_1's image in one region C; the folded block has both
    determinant signs; Prop C1's det(I + ½W_1U_1) = 0 holds with ≥ 3 kink lines, and fails for
    the two-line example (Example 12a.14), which Prop C1 therefore needs to exclude."""
    r = load_residual(name)
    region = single_sector_region(r)
    l_c = pattern_matrix(r[1], region)
    minus = [[-x for x in row] for row in l_c]
    both = [a + b for a, b in zip(l_c, minus, strict=True)]  # y ↦ L'_C (ReLU(y) − ReLU(−y))
    linear = [(mat([[1, 0], [0, 1], [-1, 0], [0, -1]]), both, False)]
    assert equal_on_plane(r, [r[0], *linear])
    assert {d > 0 for d in realized_dets(r, 0)} == {True, False}
    assert len(kink_lines(r)) == lines
    u1, w1, _ = r[0]
    half = [[identity(2)[i][j] + dot(w1[i], [row[j] for row in u1]) / 2 for j in range(2)]
            for i in range(2)]
    assert (det(half) == 0) is half_det_zero


def test_theorem_c_control_has_no_index_set_and_distinct_rows() -> None:
    r = load_residual("folded_single_sector_d2_n4")
    assert not any(has_index_set(b) for b in r)
    assert all(pairwise_non_collinear(b[0]) for b in r)
    assert all(any(row[k] != 0 for row in b[1]) for b in r for k in range(len(b[0])))


def test_absorbers_first_blocks_are_in_normal_form_with_the_stated_bends() -> None:
    """Lemma 12a.6 on the constructed H: the folded controls' h_1 has exactly one active bend."""
    for name in ("folded_single_sector_d2_n4", "folded_two_lines_d2_n4"):
        h1 = load_absorber(name)[0]
        assert is_paired(h1[0])
        assert len(kink_lines([h1])) == 1


def test_image_cone_control_has_its_stated_index_sets() -> None:
    r = load_residual("image_cone_d2_n4")
    assert has_index_set(r[0]) and not has_index_set(r[1])


# ---------------------------------------------------------------- Lemma 12a.6: the normal form

def collinear(a: Sequence[Fraction], b: Sequence[Fraction]) -> bool:
    return all(a[i] * b[j] == a[j] * b[i] for i, j in combinations(range(len(a)), 2))


def is_paired(rows: Mat) -> bool:
    """Lemma 12a.6's conclusion: 2d nonzero rows q_k, −c_k q_k (c_k > 0), no other collinear
    pair, and Q = (q_k) invertible."""
    d = len(rows[0])
    if len(rows) != 2 * d or any(all(x == 0 for x in r) for r in rows):
        return False
    partners = []
    for i, a in enumerate(rows):
        same = [j for j, b in enumerate(rows) if j != i and collinear(a, b)]
        if len(same) != 1 or dot(a, rows[same[0]]) >= 0:
            return False
        partners.append(same[0])
    q = [rows[i] for i in range(2 * d) if i < partners[i]]
    return det(q) != 0


def full_rank_on_every_cell(rows: Mat) -> bool:
    """Lemma 12a.6's hypothesis at d = 2: on every open cell of the arrangement the active rows
    span ℝ² (the Jacobian V D P can have rank 2 only then; a zero row is never active)."""
    lines = [r for p in rows if p != [0, 0] for r in ((-p[1], p[0]), (p[1], -p[0]))]
    for _, _, mid in sectors(sort_rays(AXES + lines)):
        active = [p for p in rows if dot(p, mid) > 0]
        if not any(cross(a, b) != 0 for a, b in combinations(active, 2)):
            return False
    return True


def test_normal_form_exhaustively_at_d2() -> None:
    """Every P with 4 rows in {−1, 0, 1}²: full rank on every open cell ⇔ paired rows with Q
    invertible (both directions of Lemma 12a.6; 9⁴ = 6561 matrices)."""
    entries = [Q(-1), Q(0), Q(1)]
    vectors = [[a, b] for a in entries for b in entries]
    agree = paired = 0
    for rows in product(vectors, repeat=4):
        p = [list(r) for r in rows]
        assert full_rank_on_every_cell(p) == is_paired(p), p
        agree += 1
        paired += is_paired(p)
    print(f"normal form: {agree} matrices, {paired} paired")
    assert paired > 0 and agree == 9 ** 4


# ---------------------------------------------------------------- Lemma 12a.8: jump columns

def random_block(rng: random.Random, d: int, n: int) -> Block:
    u = [[Q(rng.randint(-3, 3)) for _ in range(d)] for _ in range(n)]
    while any(all(x == 0 for x in r) for r in u):
        u = [[Q(rng.randint(-3, 3)) for _ in range(d)] for _ in range(n)]
    w = [[Q(rng.randint(-4, 4), 4) for _ in range(n)] for _ in range(d)]
    return u, w, True


def with_collinear_pair(block: Block, factor: int) -> Block:
    """Row 1 := factor·row 0, so a face on row 0's hyperplane carries two units."""
    u, w, skip = block
    u = [r[:] for r in u]
    u[1] = [factor * x for x in u[0]]
    return u, w, skip


def point_on(normal: Vec, rng: random.Random) -> Vec:
    v = [Q(rng.randint(-5, 5)) for _ in normal]
    t = dot(normal, v) / dot(normal, normal)
    return [vi - t * ni for vi, ni in zip(v, normal, strict=True)]


def signs(rows: Mat, y: Sequence[Fraction]) -> tuple[int, ...]:
    return tuple((z > 0) - (z < 0) for z in matvec(rows, y))


def one_sided_jacobians(stack: Sequence[Block], x: Vec, nu: Vec) -> tuple[Mat, Mat] | None:
    """J₋, J₊ by finite differences of the network at x ∓ εν, or None when a stencil leaves
    its open cell (every stencil point must show one strict sign vector at every layer: the
    cells are convex, so R is then linear on the stencil and the differences are exact)."""
    eps, h = Q(1, 2 ** 12), Q(1, 2 ** 30)
    out = []
    for s in (-1, 1):
        c = [xi + s * eps * ni for xi, ni in zip(x, nu, strict=True)]
        stencil = [c] + [[ci + (h if i == k else 0) for i, ci in enumerate(c)]
                         for k in range(len(x))]
        seen = set()
        for pt in stencil:
            key, y = [], pt
            for block in stack:
                sg = signs(block[0], y)
                if 0 in sg:
                    return None
                key.append(sg)
                y = apply_block(block, y)
            seen.add(tuple(key))
        if len(seen) != 1:
            return None
        out.append(finite_difference_jacobian(stack, c, h))
    return out[0], out[1]


def merged_column(block: Block, normal: Vec) -> Vec:
    """Σ_{u_j = λ_j·normal} |λ_j| w_j: every unit on the hyperplane, either sign."""
    u, w, _ = block
    col = [Q(0)] * len(w)
    for j, row in enumerate(u):
        if collinear(row, normal):
            lam = dot(row, normal) / dot(normal, normal)
            col = [c + abs(lam) * w[i][j] for i, c in enumerate(col)]
    return col


def jump(jm: Mat, jp: Mat, nu: Vec) -> Vec:
    """c = (J₊ − J₋)ν/|ν|², asserting the jump is c νᵀ (rank one, Lemma 12a.8)."""
    diff = msub(jp, jm)
    c = [dot(row, nu) / dot(nu, nu) for row in diff]
    assert diff == [[ci * n for n in nu] for ci in c]
    return c


def type_a_face(stack: list[Block], rng: random.Random) -> tuple[Vec, Vec, Mat, Mat]:
    u0 = stack[0][0][0]
    for _ in range(200):
        x = point_on(u0, rng)
        if any(dot(r, x) == 0 for r in stack[0][0] if not collinear(r, u0)) or x == [0] * len(x):
            continue
        if 0 in signs(stack[1][0], apply_block(stack[0], x)):
            continue
        sides = one_sided_jacobians(stack, x, u0)
        if sides is not None:
            return x, u0, *sides
    raise AssertionError("no type-A face point found")


@pytest.mark.parametrize(("d", "seed"), [(2, 0), (2, 1), (2, 2), (3, 0), (3, 1)])
def test_type_a_jump_column_matches_finite_differences(d: int, seed: int) -> None:
    """Face on u^⊥ whose image lies in one region C of U_2: c = L'_C Σ|λ_j| w_j, with U_1's rows
    0 and 1 collinear of opposite signs (merged); one column per unit would be wrong."""
    rng = random.Random(seed)
    stack = [with_collinear_pair(random_block(rng, d, 2 * d), -2), random_block(rng, d, 2 * d)]
    x, nu, jm, jp = type_a_face(stack, rng)
    l_c = pattern_matrix(stack[1], strict_pattern(stack[1], apply_block(stack[0], x)))
    c = jump(jm, jp, nu)
    assert c == matvec(l_c, merged_column(stack[0], nu))
    per_unit = matvec(l_c, [row[0] for row in stack[0][1]])
    assert c != per_unit


@pytest.mark.parametrize(("d", "seed"), [(2, 3), (2, 4), (2, 5), (3, 2), (3, 3)])
def test_type_b_jump_column_matches_finite_differences(d: int, seed: int) -> None:
    """Face on (L_Kᵀp)^⊥ inside a region K of U_1: c = Σ|μ_l| w'_l over U_2's rows ∥ p (rows 0
    and 1 of U_2 collinear, same sign)."""
    rng = random.Random(seed)
    stack = [random_block(rng, d, 2 * d), with_collinear_pair(random_block(rng, d, 2 * d), 3)]
    p = stack[1][0][0]
    for _ in range(400):
        y = [Q(rng.randint(-6, 6)) for _ in range(d)]
        if y == [0] * d or 0 in signs(stack[0][0], y):
            continue
        l_k = pattern_matrix(stack[0], strict_pattern(stack[0], y))
        nu = matvec(transpose(l_k), p)
        x = [yi - dot(nu, y) / dot(nu, nu) * ni for yi, ni in zip(y, nu, strict=True)]
        image = apply_block(stack[0], x)
        if x == [0] * d or signs(stack[0][0], x) != signs(stack[0][0], y) or any(
                dot(r, image) == 0 for r in stack[1][0] if not collinear(r, p)):
            continue
        sides = one_sided_jacobians(stack, x, nu)
        if sides is not None:
            assert dot(p, image) == 0
            assert jump(*sides, nu) == merged_column(stack[1], p)
            return
    raise AssertionError("no type-B face point found")


@pytest.mark.parametrize(("d", "seed"), [(2, 6), (2, 7), (3, 4)])
def test_face_of_both_types_obeys_the_chain_rule_for_jumps(d: int, seed: int) -> None:
    """U_2's row 0 chosen as L_{K₋}^{−T} u so that u^⊥'s image is a hyperplane of U_2: the jump
    is Δ(DR) = L'_{C₊}·ΔDR_1 + ΔDR_2·L_{K₋}, read from the two adjacent Jacobians."""
    rng = random.Random(seed)
    for _ in range(400):
        first = random_block(rng, d, 2 * d)
        u0 = first[0][0]
        x = point_on(u0, rng)
        if x == [0] * d or any(dot(r, x) == 0 for r in first[0] if not collinear(r, u0)):
            continue
        x_minus = [xi - Q(1, 2 ** 12) * ni for xi, ni in zip(x, u0, strict=True)]
        l_km = pattern_matrix(first, strict_pattern(first, x_minus))
        if det(l_km) == 0:
            continue
        inv_t = transpose(inverse(l_km))
        second = random_block(rng, d, 2 * d)
        second = ([matvec(inv_t, u0), *second[0][1:]], second[1], True)
        image = apply_block(first, x)
        if any(dot(r, image) == 0 for r in second[0][1:]):
            continue
        stack = [first, second]
        sides = one_sided_jacobians(stack, x, u0)
        if sides is None:
            continue
        jm, jp = sides
        x_plus = [xi + Q(1, 2 ** 12) * ni for xi, ni in zip(x, u0, strict=True)]
        l_kp = pattern_matrix(first, strict_pattern(first, x_plus))
        l_cm, l_cp = (pattern_matrix(second, strict_pattern(second, apply_block(first, z)))
                      for z in (x_minus, x_plus))
        d1, d2 = msub(l_kp, l_km), msub(l_cp, l_cm)
        if d2 == [[Q(0)] * d for _ in range(d)]:
            continue  # R_1 folds here: both sides land on one side of p^⊥, a type-A face only
        assert msub(jp, jm) == madd(matmul(l_cp, d1), matmul(d2, l_km))
        jump(jm, jp, u0)  # still rank one
        return
    raise AssertionError("no face of both types found")


def inverse(m: Mat) -> Mat:
    """Exact inverse by Gauss–Jordan."""
    n = len(m)
    a = [row[:] + identity(n)[i] for i, row in enumerate(m)]
    for c in range(n):
        piv = next(r for r in range(c, n) if a[r][c] != 0)
        a[c], a[piv] = a[piv], a[c]
        a[c] = [x / a[c][c] for x in a[c]]
        for r in range(n):
            if r != c and a[r][c] != 0:
                f = a[r][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c], strict=True)]
    return [row[n:] for row in a]


# ---------------------------------------------------------------- Lemma 12a.2: injectivity

def cell_matrices(block: Block) -> list[tuple[Ray, Ray, Mat]]:
    """(a, b, J) for every sector of the block's lines and the axes (each inside one open cell)."""
    return [(a, b, pattern_matrix(block, strict_pattern(block, mid)))
            for a, b, mid in sectors(candidate_rays([block]))]


def winding_number(block: Block) -> int:
    """Signed crossings of the ray through (1, 0) by the image of the circle: each sector (angle
    < π) maps linearly onto the cone between the images of its two boundary rays, swept
    counterclockwise when det > 0; a crossing counts when (1, 0) lies in the half-open sweep."""
    rho = (Q(1), Q(0))
    rays = candidate_rays([block])
    images = [apply_block(block, r) for r in rays]
    count = 0
    for k, (_, _, j) in enumerate(cell_matrices(block)):
        a, b = images[k], images[(k + 1) % len(images)]
        if det(j) > 0 and cross(a, rho) > 0 and cross(rho, b) >= 0:
            count += 1
        if det(j) < 0 and cross(rho, a) > 0 and cross(b, rho) >= 0:
            count -= 1
    return count


WINDING_TWO: Block = (mat([[-1, 3], [2, 1], [2, -2], [-1, 1]]),
                      mat([[-2, 1, 2, 3], [3, -3, 3, -1]]), True)


def test_winding_number_two_block_is_not_injective() -> None:
    """Lemma 12a.2(d)'s example: every open cell has det < 0, the winding number is −2, and two
    points map to (1, 0) exactly."""
    assert all(det(j) < 0 for _, _, j in cell_matrices(WINDING_TWO))
    assert winding_number(WINDING_TWO) == -2
    x, y = [Q(-3, 2), Q(-1, 3)], [Q(1, 7), Q(0)]
    assert apply_block(WINDING_TWO, x) == apply_block(WINDING_TWO, y) == [Q(1), Q(0)]


def positive_definite_2x2(m: Mat) -> bool:
    """m + mᵀ ≻ 0 (Sylvester)."""
    s = [[m[i][j] + m[j][i] for j in range(2)] for i in range(2)]
    return s[0][0] > 0 and det(s) > 0


def test_sufficient_injectivity_tests_agree_with_the_winding_criterion() -> None:
    """Lemma 12a.2 (a) and (b) against (d) on random d = 2 blocks: J + Jᵀ ≻ 0 on every cell, or
    rationals a, b with aI − WWᵀ ≻ 0, bI − UᵀU ≻ 0, ab < 1, each imply winding number 1."""
    rng = random.Random(11)
    monotone = normed = 0
    for _ in range(150):
        u, w, _ = random_block(rng, 2, 4)
        w = [[x / rng.choice([1, 4, 64]) for x in row] for row in w]
        block = (u, w, True)
        mono = all(positive_definite_2x2(j) for _, _, j in cell_matrices(block))
        a = sum((x * x for row in w for x in row), Q(0)) + Q(1, 1000)  # ‖W‖₂² ≤ ‖W‖_F² < a
        b = sum((x * x for row in u for x in row), Q(0)) + Q(1, 1000)
        small = a * b < 1
        if mono or small:
            assert winding_number(block) == 1
            assert all(det(j) > 0 for _, _, j in cell_matrices(block))
        monotone += mono
        normed += small
    print(f"injectivity tests: {monotone} monotone, {normed} norm-bounded of 150")
    assert monotone > 0 and normed > 0


def test_opposite_determinants_on_adjacent_cells_fold() -> None:
    """Lemma 12a.2(c): across a wall between cells with det J₋·det J₊ < 0, the points
    p + z₊ and p + J₋⁻¹J₊z₊ are distinct and have one image."""
    rng = random.Random(5)
    folds = 0
    for _ in range(200):
        block = random_block(rng, 2, 4)
        cells = cell_matrices(block)
        for k, (a, r, jm) in enumerate(cells):
            _, b, jp = cells[(k + 1) % len(cells)]
            if det(jm) * det(jp) >= 0:
                continue
            z_plus = [Q(1, 2 ** 20) * bi for bi in b]
            z_minus = matvec(inverse(jm), matvec(jp, z_plus))
            p_plus = [ri + zi for ri, zi in zip(r, z_plus, strict=True)]
            p_minus = [ri + zi for ri, zi in zip(r, z_minus, strict=True)]
            assert cross(a, p_minus) > 0 and cross(p_minus, r) > 0  # on J₋'s side
            assert p_plus != p_minus
            assert apply_block(block, p_plus) == apply_block(block, p_minus)
            folds += 1
    assert folds > 0


# ---------------------------------------------------------------- Lemma 12a.3: narrow layers

def kernel_vector(rows: Mat, d: int) -> Vec:
    """A nonzero v with rows·v = 0 (fewer than d rows), by exact elimination."""
    a = [r[:] for r in rows]
    pivots: list[int] = []
    for c in range(d):
        piv = next((i for i in range(len(pivots), len(a)) if a[i][c] != 0), None)
        if piv is None:
            continue
        row = len(pivots)
        a[row], a[piv] = a[piv], a[row]
        a[row] = [x / a[row][c] for x in a[row]]
        for i in range(len(a)):
            if i != row and a[i][c] != 0:
                f = a[i][c]
                a[i] = [x - f * y for x, y in zip(a[i], a[row], strict=True)]
        pivots.append(c)
    free = next(c for c in range(d) if c not in pivots)
    v = [Q(0)] * d
    v[free] = Q(1)
    for i, c in enumerate(pivots):
        v[c] = -a[i][free]
    return v


@pytest.mark.parametrize(("d", "m"), [(2, 3), (3, 4), (3, 5), (4, 7)])
def test_relu_layer_with_fewer_than_2d_rows_is_not_injective(d: int, m: int) -> None:
    """Lemma 12a.3: at x or −x fewer than d rows are active; along a kernel vector of the active
    rows the layer x ↦ ReLU(Px) is constant near that point."""
    rng = random.Random(d * 100 + m)
    for _ in range(20):
        p = random_block(rng, d, m)[0]
        x = [Q(rng.randint(-9, 9)) for _ in range(d)]
        if 0 in signs(p, x):
            continue
        if sum(z > 0 for z in matvec(p, x)) >= d:
            x = [-xi for xi in x]
        active = [row for row in p if dot(row, x) > 0]
        assert len(active) < d
        v = kernel_vector(active, d) if active else [Q(1)] + [Q(0)] * (d - 1)
        t = min((abs(dot(row, x)) / (1 + abs(dot(row, v))) for row in p), default=Q(1)) / 2
        moved = [xi + t * vi for xi, vi in zip(x, v, strict=True)]
        assert moved != x
        assert [relu(z) for z in matvec(p, moved)] == [relu(z) for z in matvec(p, x)]


# ---------------------------------------------------------------- Theorem B: the ray count

def injective(block: Block) -> bool:
    """Lemma 12a.2(c), (d) at d = 2: one nonzero determinant sign on every cell, winding ±1."""
    dets = {det(j) for _, _, j in cell_matrices(block)}
    return 0 not in dets and len({x > 0 for x in dets}) == 1 and abs(winding_number(block)) == 1


def normal_form_block(rng: random.Random) -> Block:
    """An injective h(x) = A ReLU(Qx) + B ReLU(−Qx) (Lemma 12a.6): the images a_1, a_2, b_1,
    b_2 of e_1, e_2, −e_1, −e_2 lie within 37° of e_1, e_2, −e_1, −e_2, so x ↦ h(Q⁻¹x) maps each
    quadrant onto the cone between consecutive images, all turning counterclockwise: it winds
    once; Q is a random invertible matrix."""
    q = [[Q(rng.randint(-3, 3)) for _ in range(2)] for _ in range(2)]
    while det(q) == 0:
        q = [[Q(rng.randint(-3, 3)) for _ in range(2)] for _ in range(2)]

    def tilt() -> Fraction:
        return Q(rng.randint(-3, 3), 4)

    def scale() -> Fraction:
        return Q(rng.randint(1, 4), 2)

    cols = [(Q(1), tilt()), (tilt(), Q(1)), (Q(-1), tilt()), (tilt(), Q(-1))]
    scales = [scale() for _ in range(4)]
    v = [[c[i] * k for c, k in zip(cols, scales, strict=True)] for i in range(2)]
    return [*q, *[[-x for x in r] for r in q]], v, False


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_injective_residual_free_stacks_have_at_most_2Ld_kink_rays(depth: int) -> None:
    """Theorem B's bound on H: a composition of injective width-4 blocks (normal form) is linear
    off L·d pulled-back lines, so it has at most 2·L·d = 4L kink rays."""
    rng = random.Random(depth)
    counts: list[int] = []
    while len(counts) < 5:
        stack = [normal_form_block(rng) for _ in range(depth)]
        assert all(injective(b) for b in stack)
        counts.append(len(kink_rays(stack)))
    print(f"H of depth {depth}: kink rays {counts} (bound {4 * depth})")
    assert max(counts) <= 4 * depth


@pytest.mark.parametrize("depth", [2, 3])
def test_generic_injective_residual_stacks_exceed_the_ray_bound(depth: int) -> None:
    """Theorem B decides generic injective width-4 stacks: more than 4L kink rays (each block's
    four lines give eight rays, pulled back through the earlier blocks). Rows with integer
    entries in [−3, 3] pairwise non-collinear, W scaled by ¼ so that most blocks are injective."""
    rng = random.Random(20 + depth)
    counts: list[int] = []
    while len(counts) < 4:
        stack = [random_block(rng, 2, 4) for _ in range(depth)]
        stack = [(u, [[x / 4 for x in row] for row in w], True) for u, w, _ in stack]
        if all(pairwise_non_collinear(b[0]) and injective(b) for b in stack):
            counts.append(len(kink_rays(stack)))
    print(f"R of depth {depth}: kink rays {counts} (H's bound {4 * depth})")
    assert min(counts) > 4 * depth


def test_pattern_read_on_a_hyperplane_is_not_a_realized_pattern() -> None:
    """Definition 12a.1(b)'s warning: rows ±e_1, ±e_2; every open cell has det J = 1 and the
    block is injective, yet the pattern read at (0, 1) (active iff > 0) has det 0."""
    block = (mat([[1, 0], [0, 1], [-1, 0], [0, -1]]), mat([[0, 1, 0, 0], [-1, -1, 1, 0]]), True)
    assert {det(j) for _, _, j in cell_matrices(block)} == {1}
    assert injective(block)
    assert det(pattern_matrix(block, [z > 0 for z in matvec(block[0], [Q(0), Q(1)])])) == 0


# ---------------------------------------------------------------- (D′) at d = 2, exhaustively

def kink_columns(stack: Sequence[Block]) -> list[tuple[Ray, Ray]]:
    """(support line, column direction) of every kink ray, the column read from the two adjacent
    sector Jacobians (Lemma 12a.8(b)), both up to sign."""
    rays = candidate_rays(stack)
    jac = [sector_matrix(stack, mid) for _, _, mid in sectors(rays)]
    out = []
    for k, r in enumerate(rays):
        if jac[k - 1] == jac[k]:
            continue
        nu = [-r[1], r[0]]  # νᵀx > 0 on the counterclockwise side, the sector after r
        c = jump(jac[k - 1], jac[k], nu)
        line = max(r, ray([-r[0], -r[1]]))
        out.append((line, max(ray(c), ray([-c[0], -c[1]]))))
    return out


def d_prime_holds(stack: Sequence[Block], m: int) -> bool:
    """(D′) at d = 2: for every set S of at most two support lines (distinct lines are
    independent), more than m column directions on pieces whose support is not in S."""
    pieces = kink_columns(stack)
    lines = sorted({line for line, _ in pieces})
    choices = [set(s) for r in range(3) for s in combinations(lines, r)]
    return all(len({c for line, c in pieces if line not in s}) > m for s in choices)


@pytest.mark.parametrize("name", CONTROLS)
def test_d_prime_fails_on_every_absorbed_control(name: str) -> None:
    """Theorem A's contrapositive on the controls: each equals an H of first width 4 and second
    width 4, so (D′) with m = 4 must fail (for the folded ones (I) holds, so it is (D′) that
    fails)."""
    assert not d_prime_holds(load_residual(name), 4)


def test_d_prime_holds_for_most_random_stacks_with_condition_i() -> None:
    """The exhaustive (D′) is not vacuous: random d = 2 width-4 stacks with (I) mostly satisfy it
    (Theorem A then decides them)."""
    rng = random.Random(8)
    held = tried = 0
    while tried < 12:
        stack = [random_block(rng, 2, 4), random_block(rng, 2, 4)]
        if any(0 in realized_dets(stack, depth) for depth in range(2)):
            continue
        tried += 1
        held += d_prime_holds(stack, 4)
    print(f"(D') with m = 4 held for {held}/{tried} random stacks with (I)")
    assert held > tried // 2
