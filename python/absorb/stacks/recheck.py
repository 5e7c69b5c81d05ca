"""Re-check a stack's kink certificate (``absorb stack --recheck``) from the weights alone.

Shares no code with the producers (:mod:`.plane`, :mod:`.kinks`, :mod:`.pieces`,
:mod:`.injective`); it uses only exact arithmetic (:mod:`absorb.exact`) and the region
enumeration of :mod:`absorb.stacks.arrangement`. For d = 2 (``absorb-stack-kinks/1``) it reads
the certificate's ray list and verifies, in exact rational arithmetic on the stored weights,

1. the rays go once around the origin counter-clockwise, each step turning by less than π:
   every cross(r_i, r_{i+1}) > 0 and the quadrant index q ∈ {0, 1, 2, 3} (angle in
   [qπ/2, (q+1)π/2)) advances by 4 in total — a turn θ ∈ (0, π) from angle α advances it by
   ⌊(α + θ)/(π/2)⌋ − ⌊α/(π/2)⌋, so the advances sum to (total angle)/(π/2);
2. R is linear on every sector (a, b): for every block l and unit u, u·R_{<l}(a) and
   u·R_{<l}(b) are not of strictly opposite signs. By induction on l, R_{<l} is linear on the
   sector, so u·R_{<l} is linear in the sector's coordinates (α, β) ≥ 0 and keeps one sign (or
   vanishes) inside; block l's pattern is constant there and R_{<l+1} is linear too;
3. the kink rays and their columns: the Jacobian on (a, b) solves M [a b] = [R(a) R(b)];
   the certificate's list must be exactly the rays where M jumps, with the same columns;
4. ``depth_two_kinks``: (I) — det(I + W_l D U_l) ≠ 0 for the pattern D of every sector where
   R_{<l} has det ≠ 0 — and (D′): the fewest column directions (up to sign) outside any set of
   at most two distinct support lines, by trying every such set, exceeds m;
5. ``depth_kink_rays``: every block injective (each block's own sectors: one det sign, and its
   image of the circle winds once — the quadrant advance of the images, in the direction the
   sign gives, is 4) and more than 2·L·d kink rays.

In any d (``absorb-stack-pieces/1``, ``depth_two_kinks``) every claimed piece is verified
locally (:func:`_local_piece`), (I) is re-enumerated, and (D′) is confirmed on the verified
pieces — more pieces could only add directions, so a verified subset suffices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.exact import det, identity, rank, to_fraction
from absorb.stacks.arrangement import region_points

P = tuple[Fraction, Fraction]


def _quadrant(v: Sequence[Fraction]) -> int:
    x, y = v
    if x > 0 and y >= 0:
        return 0
    if x <= 0 and y > 0:
        return 1
    return 2 if x < 0 else 3


def _cross(a: Sequence[Fraction], b: Sequence[Fraction]) -> Fraction:
    return Fraction(a[0]) * b[1] - Fraction(a[1]) * b[0]


def _once_around(points: Sequence[Sequence[Fraction]], sign: int = 1) -> bool:
    """Whether the closed polygon through ``points`` turns (counter-clockwise for sign 1)
    by less than π at each edge and winds exactly once."""
    seq = list(points) if sign > 0 else list(points)[::-1]
    pairs = list(zip(seq, seq[1:] + seq[:1], strict=True))
    if not all(_cross(a, b) > 0 for a, b in pairs):
        return False
    return sum((_quadrant(b) - _quadrant(a)) % 4 for a, b in pairs) == 4


def _forward(mats: Sequence[tuple[Any, Any]], x: P) -> list[Any]:
    """[x, R_1 x, …] with R_l(y) = y + W ReLU(U y), over ℚ."""
    out = [np.array(x, dtype=object)]
    for U, W in mats:
        y = out[-1]
        out.append(y + W @ np.array([max(v, Fraction(0)) for v in U @ y], dtype=object))
    return out


def _solve(a: P, b: P, pa: Any, pb: Any) -> list[list[Fraction]]:
    """M with M a = pa, M b = pb."""
    det = _cross(a, b)
    return [[(pa[i] * b[1] - pb[i] * a[1]) / det, (pb[i] * a[0] - pa[i] * b[0]) / det]
            for i in range(2)]


def _fail(why: str) -> dict[str, object]:
    return {"valid": False, "reason": why}


def _stack_sectors(mats: Sequence[tuple[Any, Any]], rays: list[P]) -> list[dict[str, Any]] | str:
    """Per sector: the prefix Jacobians and patterns (step 2 verified), or why it fails."""
    images = {r: _forward(mats, r) for r in rays}
    out = []
    for a, b in zip(rays, rays[1:] + rays[:1], strict=True):
        for ell, (U, _) in enumerate(mats):
            sa, sb = U @ images[a][ell], U @ images[b][ell]
            if any(x * y < 0 for x, y in zip(sa, sb, strict=True)):
                return f"block {ell} changes pattern inside the sector {a}..{b}"
        mid = _forward(mats, (a[0] + b[0], a[1] + b[1]))
        out.append({"a": a, "b": b,
                    "jac": [_solve(a, b, images[a][ell], images[b][ell])
                            for ell in range(len(mats) + 1)],
                    "active": [[j for j, v in enumerate(U @ mid[ell]) if v > 0]
                               for ell, (U, _) in enumerate(mats)]})
    return out


def _det(M: Sequence[Sequence[Fraction]]) -> Fraction:
    return Fraction(M[0][0]) * M[1][1] - Fraction(M[0][1]) * M[1][0]


def _block_jac(U: Any, W: Any, active: Sequence[int]) -> Any:
    return identity(2) + W[:, list(active)] @ U[list(active), :]


def _injective(U: Any, W: Any) -> bool:
    """Step 5 for one block: its own sectors (axes and the lines of its rows)."""
    rays = {(Fraction(1), Fraction(0)), (Fraction(0), Fraction(1)),
            (Fraction(-1), Fraction(0)), (Fraction(0), Fraction(-1))}
    for u in U:
        if u[0] != 0 or u[1] != 0:
            for s in (1, -1):
                rays.add((Fraction(-s * u[1]), Fraction(s * u[0])))
    unique = {(r[0] / max(abs(r[0]), abs(r[1])), r[1] / max(abs(r[0]), abs(r[1])))
              for r in rays}  # one representative per direction
    order = _ccw(sorted(unique))
    secs = _stack_sectors([(U, W)], order)
    if isinstance(secs, str):
        return False
    dets = [_det(_block_jac(U, W, s["active"][0])) for s in secs]
    if any(v == 0 for v in dets) or min(dets) < 0 < max(dets):
        return False
    images = [_forward([(U, W)], r)[-1] for r in order]
    return _once_around(images, 1 if dets[0] > 0 else -1)


def _ccw(rays: list[P]) -> list[P]:
    """The rays in counter-clockwise order (insertion by quadrant, then by cross product)."""
    out: list[P] = []
    for r in rays:
        i = 0
        while i < len(out) and (_quadrant(out[i]) < _quadrant(r) or (
                _quadrant(out[i]) == _quadrant(r) and _cross(out[i], r) > 0)):
            i += 1
        out.insert(i, r)
    return out


def recheck(blocks: Sequence[Block], doc: Any) -> dict[str, object]:
    """Steps 1–5 of the module docstring; ``valid`` with the re-computed figures."""
    if isinstance(doc, dict) and doc.get("format") == "absorb-stack-pieces/1":
        return _recheck_pieces(blocks, doc)
    if isinstance(doc, dict) and doc.get("format") == "absorb-stack-injective/1":
        return _recheck_injective(blocks, doc)
    if not isinstance(doc, dict) or doc.get("format") != "absorb-stack-kinks/1":
        raise AbsorbError("not a stack certificate (format absorb-stack-kinks/1, "
                          "absorb-stack-pieces/1 or absorb-stack-injective/1)")
    if blocks[0].d != 2 or any(b.has_biases or b.A_skip is not None for b in blocks):
        return _fail("the certificate speaks of bias-free d = 2 stacks with identity skips")
    if doc.get("depth") != len(blocks) or doc.get("widths") != [b.n for b in blocks]:
        return _fail("the certificate's depth or widths differ from the stack's")
    mats = [b.rational_weights[:2] for b in blocks]
    try:
        rays = [(to_fraction(r[0]), to_fraction(r[1])) for r in doc["rays"]]
        claimed = {(to_fraction(k["ray"][0]), to_fraction(k["ray"][1])):
                   tuple(to_fraction(v) for v in k["column"]) for k in doc["kinks"]}
    except (KeyError, TypeError, IndexError, AbsorbError) as exc:
        raise AbsorbError(f"malformed stack certificate: {exc}") from None
    if len(rays) < 3 or not _once_around(rays):
        return _fail("the rays do not go once around the origin in steps below π")
    secs = _stack_sectors(mats, rays)
    if isinstance(secs, str):
        return _fail(secs)
    found: dict[P, tuple[Fraction, Fraction]] = {}
    for before, after in zip(secs[-1:] + secs[:-1], secs, strict=True):
        r = after["a"]
        M0, M1 = before["jac"][-1], after["jac"][-1]
        nu = (-r[1], r[0])
        norm2 = nu[0] ** 2 + nu[1] ** 2
        c = tuple(sum((M1[i][k] - M0[i][k]) * nu[k] for k in range(2)) / norm2
                  for i in range(2))
        if c != (0, 0):
            found[r] = (Fraction(c[0]), Fraction(c[1]))
    if found != claimed:
        return _fail("the kink rays or their columns differ from the re-computed ones")
    L = len(blocks)
    out: dict[str, object] = {"valid": True, "kink_rays": len(found), "sectors": len(secs)}
    if doc.get("theorem") == "depth_two_kinks":
        return _recheck_two(mats, secs, found, doc, out)
    if doc.get("theorem") == "depth_kink_rays":
        if not all(_injective(U, W) for U, W in mats):
            return _fail("a block is not injective (winding-number decision)")
        if len(found) <= 4 * L:
            return _fail(f"{len(found)} kink rays, not more than 2·L·d = {4 * L}")
        return out
    return _fail(f"unknown theorem {doc.get('theorem')!r}")


def _recheck_two(mats: Sequence[tuple[Any, Any]], secs: list[dict[str, Any]],
                 found: dict[P, tuple[Fraction, Fraction]], doc: dict[str, Any],
                 out: dict[str, object]) -> dict[str, object]:
    if len(mats) != 2 or mats[0][0].shape[0] != 4:
        return _fail("depth_two_kinks speaks of depth-2 stacks with first width 2d = 4")
    for ell, (U, W) in enumerate(mats):
        for s in secs:
            if _det(s["jac"][ell]) != 0 and _det(_block_jac(U, W, s["active"][ell])) == 0:
                return _fail(f"(I) fails: block {ell}, pattern {s['active'][ell]}")
    pieces = [(_line((-r[1], r[0])), _line(c)) for r, c in found.items()]
    lines = sorted({s for s, _ in pieces})
    best = min(len({c for s, c in pieces if s not in S})
               for k in range(3) for S in itertools.combinations(lines, k))
    m = int(mats[1][0].shape[0])
    if doc.get("m") != m or best <= m:
        return _fail(f"(D′) fails: {best} column directions outside some S, m = {m}")
    claimed = doc.get("d_prime", {}).get("min_directions_outside_S")
    if claimed != best:
        return _fail(f"the certificate claims a minimum of {claimed}, re-computed {best}")
    out["d_prime_min"] = best
    return out


# ------------------------------------------------------------------------------------------
# depth_two_kinks in any d (format absorb-stack-pieces/1)


def _vec(v: Any) -> tuple[Fraction, ...]:
    return tuple(to_fraction(x) for x in v)


def _parallel(u: Sequence[Fraction], v: Sequence[Fraction]) -> bool:
    return all(u[i] * v[k] == u[k] * v[i] for i in range(len(u)) for k in range(len(u)))


def _sign(x: Fraction) -> int:
    return (x > 0) - (x < 0)


def _local_piece(mats: Sequence[tuple[Any, Any]], p: dict[str, Any]) -> tuple[Fraction, ...] | str:
    """The column of one claimed piece, verified locally: before/after = q ∓ εν (ε > 0); every
    hyperplane of R's complex through q is parallel to ν (block 1's rows, block 2's rows pulled
    back on either side); no hyperplane changes sign between q and either side point. Then a
    ball around q is cut by ν^⊥ alone, DR is constant on each half, and its jump is c νᵀ."""
    (U1, W1), (U2, W2) = mats
    nu, q, lo, hi = (_vec(p[k]) for k in ("normal", "point", "before", "after"))
    step = [h - x for h, x in zip(hi, q, strict=True)]
    if any(x - lo_ != s for x, lo_, s in zip(q, lo, step, strict=True)) or not (
            _parallel(step, nu) and sum(s * v for s, v in zip(step, nu, strict=True)) > 0):
        return "the side points are not q ∓ εν"
    d = len(q)
    eye = identity(d)
    jac = []
    for x in (lo, hi):
        for u in U1:
            a, b = _sign(_dot_q(u, q)), _sign(_dot_q(u, x))
            if (a == 0 and any(u) and not _parallel(tuple(u), nu)) or (a != 0 and a != b):
                return "a row of block 1 meets the piece off its support"
        act = [j for j, u in enumerate(U1) if _dot_q(u, x) > 0]
        L = eye + W1[:, act] @ U1[act, :]
        y0 = L @ np.array(q, dtype=object)
        y = L @ np.array(x, dtype=object)
        for u in U2:
            g = tuple(Fraction(v) for v in np.array(u, dtype=object) @ L)
            a, b = _sign(_dot_q(u, y0)), _sign(_dot_q(u, y))
            if a == 0 and any(g) and not _parallel(g, nu):
                return "a row of block 2 meets the piece off its support"
            if a != 0 and a != b:
                return "a row of block 2 changes sign between q and a side point"
        act2 = [j for j, u in enumerate(U2) if _dot_q(u, y) > 0]
        jac.append((eye + W2[:, act2] @ U2[act2, :]) @ L)
    c = (jac[1] - jac[0]) @ np.array(nu, dtype=object) / sum(v * v for v in nu)
    return tuple(Fraction(v) for v in c)


def _dot_q(u: Any, x: Sequence[Fraction]) -> Fraction:
    return Fraction(sum((Fraction(a) * b for a, b in zip(u, x, strict=True)), Fraction(0)))


def _independent(S: Sequence[tuple[int, ...]]) -> bool:
    """Whether the normals in S are linearly independent (exact rank)."""
    return rank(np.array([list(s) for s in S], dtype=object)) == len(S)


def _min_outside(pairs: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], d: int,
                 m: int) -> tuple[bool, int | None]:
    """Whether (D′)'s minimum exceeds m, and the minimum when it was computed. First the bound
    removed(S) ≤ the d largest per-support counts of removable directions; then, if needed,
    exhaustion over every independent set of ≤ d supports that can remove a direction (a
    direction is removable iff its carriers number ≤ d; a set can be cut down to such supports
    without changing the count)."""
    carriers: dict[tuple[int, ...], frozenset[tuple[int, ...]]] = {}
    for s, c in pairs:
        carriers[c] = carriers.get(c, frozenset()) | {s}
    small = [cs for cs in carriers.values() if len(cs) <= d]
    gain: dict[tuple[int, ...], int] = {}
    for cs in small:
        for s in cs:
            gain[s] = gain.get(s, 0) + 1
    if len(carriers) - sum(sorted(gain.values(), reverse=True)[:d]) > m:
        return True, None
    if d > 3:
        return False, None  # the exhaustion below (Σ_k≤d C(supports, k) sets) only to d = 3
    best = 0
    for k in range(1, min(d, len(gain)) + 1):
        for S in itertools.combinations(sorted(gain), k):
            if _independent(S):
                best = max(best, sum(1 for cs in small if cs <= set(S)))
    return len(carriers) - best > m, len(carriers) - best


def _recheck_pieces(blocks: Sequence[Block], doc: dict[str, Any]) -> dict[str, object]:
    """depth_two_kinks in any d: every claimed piece verified locally (:func:`_local_piece`),
    (I) re-enumerated, and (D′) from the verified pieces (more pieces only add directions)."""
    if len(blocks) != 2 or any(b.has_biases or b.A_skip is not None for b in blocks):
        return _fail("the certificate speaks of bias-free depth-2 stacks with identity skips")
    d, n1, m = blocks[0].d, blocks[0].n, blocks[1].n
    if n1 != 2 * d or doc.get("m") != m or doc.get("widths") != [n1, m]:
        return _fail("depth_two_kinks speaks of first width 2d and second width m = n₂")
    mats = [b.rational_weights[:2] for b in blocks]
    pairs = []
    try:
        for p in doc["pieces"]:
            column = _local_piece(mats, p)
            if isinstance(column, str):
                return _fail(column)
            if column != _vec(p["column"]) or all(v == 0 for v in column):
                return _fail("a piece's column differs from the re-computed jump")
            pairs.append((_line(p["normal"]), _line(column)))
    except (KeyError, TypeError, ValueError, AbsorbError) as exc:
        raise AbsorbError(f"malformed stack certificate: {exc}") from None
    (U1, W1), (U2, W2) = mats
    eye = identity(d)
    for p in region_points(U1) or []:
        act = [j for j, u in enumerate(U1) if _dot_q(u, p) > 0]
        L = eye + W1[:, act] @ U1[act, :]
        if det(L) == 0:
            return _fail(f"(I) fails: block 0, pattern {act}")
        inside = [(u, _dot_q(u, p) > 0) for u in U1 if any(u)]
        A = np.concatenate([U1, U2 @ L]).reshape(-1, d)
        for x in region_points(A) or []:
            if all((_dot_q(u, x) > 0) == s for u, s in inside):
                y = L @ np.array(x, dtype=object)
                act2 = [j for j, u in enumerate(U2) if _dot_q(u, y) > 0]
                if det(eye + W2[:, act2] @ U2[act2, :]) == 0:
                    return _fail(f"(I) fails: block 1, pattern {act2}")
    holds, minimum = _min_outside(pairs, d, m)
    if not holds:
        return _fail(f"(D′) not confirmed: minimum {minimum} ≤ m = {m} (or not decided)")
    return {"valid": True, "kink_pieces": len(pairs), "d_prime_min": minimum}


def _line(v: Sequence[Any]) -> tuple[int, ...]:
    """The primitive integer vector of the line of v ≠ 0, first nonzero entry positive."""
    q = [to_fraction(x) for x in v]
    scale = math.lcm(*(x.denominator for x in q))
    g = math.gcd(*(int(x * scale) for x in q))
    ints = [int(x * scale) // g for x in q]
    return tuple(ints) if next(k for k in ints if k != 0) > 0 else tuple(-k for k in ints)


# ------------------------------------------------------------------------------------------
# depth_injective (format absorb-stack-injective/1)


def _monotone(U: Any, W: Any) -> bool:
    """J + Jᵀ ≻ 0 (every leading principal minor > 0) at the pattern of every open region of
    U's arrangement: then (R(x) − R(y))·(x − y) > 0 for x ≠ y, so R is injective."""
    d = int(U.shape[1])
    eye = identity(d)
    points = region_points(U)
    if points is None:
        return False
    for p in points:
        act = [j for j, u in enumerate(U) if _dot_q(u, p) > 0]
        J = eye + W[:, act] @ U[act, :]
        S = J + J.T
        if not all(det(S[:k, :k]) > 0 for k in range(1, d + 1)):
            return False
    return True


def _recheck_injective(blocks: Sequence[Block], doc: dict[str, Any]) -> dict[str, object]:
    """Some width below 2d, and every block injective: in d = 2 by the winding-number decision
    (:func:`_injective`), in any d by J + Jᵀ ≻ 0 on every region (:func:`_monotone`; the norm
    test ‖W‖₂‖U‖₂ < 1 implies it, since then ‖W D U‖₂ < 1)."""
    if any(b.has_biases or b.A_skip is not None for b in blocks):
        return _fail("the certificate speaks of bias-free stacks with identity skips")
    d = blocks[0].d
    if doc.get("widths") != [b.n for b in blocks] or all(b.n >= 2 * d for b in blocks):
        return _fail("the stack's widths differ from the certificate's, or none is below 2d")
    for ell, b in enumerate(blocks):
        U, W = b.rational_weights[:2]
        if not (_injective(U, W) if d == 2 else _monotone(U, W)):
            return _fail(f"block {ell} is not proved injective by the re-check")
    return {"valid": True, "blocks": len(blocks)}
