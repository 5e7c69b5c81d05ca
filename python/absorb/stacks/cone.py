"""Absorbing a ReLU stack layer by layer: index sets, and the image-cone mechanism.

A residual-free stack H = h_L ∘ … ∘ h_1 equals R = f_L ∘ … ∘ f_1 as soon as every h_l equals
f_l on the image K_{l−1} = R_{<l}(ℝ^d) of the layers before it. Two ways to get such an h_l:

* **index set** (index_set_sufficient): W_l[:,S] U_l[S,:] = −A_l; the sign-flip block equals
  f_l everywhere (any odd-part-linear σ, any biases).
* **image cone** (ReLU, no biases, l ≥ 2): K_{l−1} ⊆ K := f_{l−1}(ℝ^d), and f_{l−1} is linear on
  each closed region of its arrangement, so K is the union of the cones f_{l−1}(C) and every
  point of K is a nonnegative combination of the generators g = f_{l−1}(γ), γ a ray of the
  arrangement of U_{l−1} (rank U_{l−1} = d makes the regions pointed; their extreme rays are
  among the γ). A unit j of f_l with u_jᵀg ≥ 0 for every g is linear on K (ReLU(u_jᵀy) = u_jᵀy),
  one with u_jᵀg ≤ 0 for every g vanishes on K; only the units C that take both signs stay
  nonlinear. So on K, f_l(y) = L y + Σ_{j∈C} w_j ReLU(u_jᵀy) with L = A_l + Σ_{j nonneg} w_j u_jᵀ.
  If cone(g) is pointed there is z₀ with z₀ᵀg > 0 for every g; the rows z_k = z₀ + δe_k
  (δ < min_g z₀ᵀg / ‖g‖_∞) are nonnegative on K, Z is invertible for all but one δ, and
  L y = (L Z⁻¹) ReLU(Z y) on K. With |C| + d ≤ n the block h_l with the units C, the d units
  (z_k, column k of L Z⁻¹) and zero units equals f_l on K.

Everything is computed and checked over ℚ (floats enter as the dyadic rationals they store):
the signs u_jᵀg, Z g ≥ 0 and L = (L Z⁻¹) Z are verified exactly, so the construction is proved
by the argument above for the stored numbers, not merely measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import linprog

from absorb import certificates
from absorb.blocks import Block, ObjectArray
from absorb.exact import det, inverse, safe_float
from absorb.rationals import rational_text
from absorb.stacks.arrangement import MAX_RAY_SUBSETS, Vector, arrangement_rays


@dataclass(frozen=True)
class ExactBlock:
    """A bias-free ReLU block over ℚ: y ↦ A y + W ReLU(U y) (A = None: residual-free)."""

    W_up: ObjectArray
    W_down: ObjectArray
    A: ObjectArray | None

    def __call__(self, y: Vector) -> Vector:
        v = np.array(y, dtype=object)
        pre = self.W_up @ v
        out = self.W_down @ np.array([max(p, Fraction(0)) for p in pre], dtype=object)
        if self.A is not None:
            out = out + self.A @ v
        return tuple(out.tolist())


@dataclass(frozen=True)
class LayerMatch:
    """How layer l of the stack is absorbed: ``mechanism`` and the residual-free weights over ℚ
    (``W_up``, ``W_down``, and ``b_up``, ``b_down`` for biased blocks)."""

    layer: int
    mechanism: str
    weights: dict[str, ObjectArray]
    detail: dict[str, object]

    def block(self, like: Block) -> Block:
        """The residual-free float block (``like`` gives the activation; an entry beyond the
        float range is ±inf, as the reader stores it)."""
        f = {k: np.vectorize(safe_float, otypes=[np.float64])(np.asarray(v, dtype=object))
             for k, v in self.weights.items()}
        return Block(like.activation, f["W_up"], f["W_down"], b_up=f.get("b_up"),
                     b_down=f.get("b_down"), residual=False)


def index_set_match(block: Block, layer: int) -> tuple[LayerMatch | None, dict[str, object]]:
    """The sign-flip block of an index set of ``block`` (theory.absorbing_block, over ℚ).

    Rational input is searched exactly; float input with the float search's tolerance.
    """
    U, W, A = block.rational_weights
    exact = block.exact is not None
    result = (certificates.find_index_set(U, W, A) if exact
              else certificates.find_index_set(block.W_up, block.W_down, block.A_skip))
    info = result.to_json()
    if result.status != "found" or result.S is None:
        return None, info
    S = list(result.S)
    D = np.ones(block.n, dtype=int)
    D[S] = -1
    weights = {"W_up": D[:, None] * U, "W_down": W.copy()}
    if block.has_biases:
        q_up, q_down = block.rational_biases
        zero = Fraction(0)
        b_up = np.full(block.n, zero, dtype=object) if q_up is None else q_up
        b_down = np.full(block.d, zero, dtype=object) if q_down is None else q_down
        weights["b_up"] = D * b_up
        weights["b_down"] = b_down + W[:, S] @ b_up[S]
    return LayerMatch(layer, "index_set", weights, info), info


def _interior_dual(gens: list[Vector], d: int) -> tuple[Fraction, ...] | None:
    """A rational z₀ with z₀ᵀg > 0 for every generator g (exactly checked), or None."""
    G = np.array([[float(v) for v in g] for g in gens])
    G = G / np.max(np.abs(G), axis=1, keepdims=True)
    # maximize t subject to G z ≥ t, −1 ≤ z ≤ 1, t ≤ 1
    res = linprog(np.r_[np.zeros(d), -1.0], A_ub=np.c_[-G, np.ones(len(gens))],
                  b_ub=np.zeros(len(gens)), bounds=[(-1, 1)] * d + [(None, 1)], method="highs")
    if res.status != 0 or -res.fun <= 1e-12:
        return None
    for denominator in (8, 64, 1024, 1 << 20):
        z = tuple(Fraction(float(v)).limit_denominator(denominator) for v in res.x[:d])
        if all(sum((a * b for a, b in zip(z, g, strict=True)), Fraction(0)) > 0 for g in gens):
            return z
    return None


def _nonneg_rows(gens: list[Vector], d: int) -> ObjectArray | None:
    """An invertible d×d rational Z whose rows are nonnegative on every generator."""
    if not gens:
        return np.array([[Fraction(int(i == k)) for k in range(d)] for i in range(d)],
                        dtype=object)
    z0 = _interior_dual(gens, d)
    if z0 is None:
        return None
    margin = min(sum((a * b for a, b in zip(z0, g, strict=True)), Fraction(0))
                 / max(abs(v) for v in g) for g in gens)
    delta = Fraction(1)
    while delta >= margin:
        delta /= 2
    for _ in range(4):  # det(1 z₀ᵀ + δI) = δ^{d−1}(δ + Σz₀) vanishes for one δ only
        Z = np.array([[z0[k] + (delta if k == i else 0) for k in range(d)] for i in range(d)],
                     dtype=object)
        if det(Z) != 0:
            return Z
        delta /= 2
    return None


def _generators(prev: Block) -> tuple[list[Vector] | None, str]:
    """The nonzero f_prev(γ) over the rays γ of prev's arrangement (None: not computable)."""
    if math.comb(prev.n, prev.d - 1) > MAX_RAY_SUBSETS:
        return None, (f"the previous layer's arrangement has up to C({prev.n}, {prev.d - 1}) "
                      f"rays, above the limit {MAX_RAY_SUBSETS}")
    U, W, A = prev.rational_weights
    rays = arrangement_rays(U)
    if rays is None:
        return None, ("the previous layer's rows do not span R^d (or too many rays): its "
                      "image is not described by rays")
    f = ExactBlock(U, W, A)
    return [g for g in (f(r) for r in rays) if any(v != 0 for v in g)], ""


def image_cone_match(prev: Block, block: Block, layer: int
                     ) -> tuple[LayerMatch | None, dict[str, object]]:
    """The image-cone construction for ``block`` on K = prev(ℝ^d) (see the module docstring)."""
    d, n = block.d, block.n
    gens, why = _generators(prev)
    if gens is None:
        return None, {"applies": False, "reason": why}
    U, W, A = block.rational_weights
    G = np.array(gens, dtype=object).reshape(len(gens), d)
    S = U @ G.T  # S[j, k] = u_jᵀ g_k
    nonneg = [j for j in range(n) if all(v >= 0 for v in S[j])]
    nonpos = [j for j in range(n) if j not in nonneg and all(v <= 0 for v in S[j])]
    cutting = [j for j in range(n) if j not in nonneg and j not in nonpos]
    info: dict[str, Any] = {"generators": [[rational_text(v) for v in g] for g in gens],
                            "units_linear_on_K": nonneg, "units_zero_on_K": nonpos,
                            "units_cutting_K": cutting}
    if len(cutting) + d > n:
        return None, {**info, "applies": False,
                      "reason": f"{len(cutting)} units cut K, more than n - d = {n - d}"}
    Z = _nonneg_rows(gens, d)
    if Z is None:
        return None, {**info, "applies": False,
                      "reason": "K is not contained in a pointed cone (no d independent rows "
                                "nonnegative on K)"}
    L = A + W[:, nonneg] @ U[nonneg, :]
    Zinv = inverse(Z)
    assert Zinv is not None  # _nonneg_rows returns invertible Z only
    V = L @ Zinv
    checks = {"Z_nonneg_on_generators": bool(np.all(Z @ G.T >= 0)),
              "L_equals_VZ": bool(np.all(V @ Z == L))}
    if not all(checks.values()):
        return None, {**info, **checks, "applies": False, "reason": "exact verification failed"}
    zero = Fraction(0)
    V_up = np.full((n, d), zero, dtype=object)
    V_down = np.full((d, n), zero, dtype=object)
    c = len(cutting)
    V_up[:c], V_down[:, :c] = U[cutting], W[:, cutting]
    V_up[c:c + d], V_down[:, c:c + d] = Z, V
    info.update(checks, applies=True, Z=Z, L=L)
    return LayerMatch(layer, "image_cone", {"W_up": V_up, "W_down": V_down}, info), info


def exact_agreement(blocks: list[Block], matches: list[LayerMatch], points: list[Vector]
                    ) -> bool:
    """R(x) = H(x) exactly over ℚ at every given point (bias-free ReLU stacks)."""
    R = [ExactBlock(*b.rational_weights) for b in blocks]
    H = [ExactBlock(m.weights["W_up"], m.weights["W_down"], None) for m in matches]
    for x in points:
        r, h = x, x
        for fr, fh in zip(R, H, strict=True):
            r, h = fr(r), fh(h)
        if r != h:
            return False
    return True


def rational_grid(d: int, rng: np.random.Generator, count: int = 64) -> list[Vector]:
    """Random rational points p/q (|p| ≤ 20, 1 ≤ q ≤ 7) in ℚ^d, as exact test inputs."""
    num = rng.integers(-20, 21, size=(count, d)).tolist()
    den = rng.integers(1, 8, size=(count, d)).tolist()
    return [tuple(Fraction(a, b) for a, b in zip(r, s, strict=True))
            for r, s in zip(num, den, strict=True)]
