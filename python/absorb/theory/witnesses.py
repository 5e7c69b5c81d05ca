"""Witnesses of the impossibility theorems (degree, linearization, bounded), computed from the
weights."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.blocks import Array, Block
from absorb.errors import AbsorbError
from absorb.exact import as_fractions, json_float
from absorb.rationals import rational_text
from absorb.theory.construction import BEYOND_FLOAT

LINEARIZATION_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
#: Multiples of t* at which the bounded witness evaluates ‖f(tv)‖_max.
BOUNDED_MULTIPLES = (1.0, 10.0, 100.0)
_U = 2.0**-53


def float_witness_missing(theorem: str) -> str:
    """The reason of ``undetermined`` when ``theorem`` applies but its witness, evaluated in
    floating point, cannot be on a ±inf float view."""
    return f"{theorem} applies, but its witness is evaluated in floating point and {BEYOND_FLOAT}"


def witness_point(A: Any, rng: np.random.Generator) -> Array:
    """A unit vector x with A x ≠ 0 (A ≠ 0, as stored): Gaussian for float A, else (and for
    exact A, whose entries may lie beyond float range) the basis vector of A's largest column,
    so that A x is a column of the stored A, exactly."""
    if np.asarray(A).dtype != object:
        x = np.asarray(rng.standard_normal(A.shape[1]), dtype=np.float64)
        if np.any(A @ x):
            return x / float(np.linalg.norm(x))
    return _basis_point(A)


def _basis_point(A: Any) -> Array:
    """e_j for the column j of A with the largest max-norm (exact comparisons)."""
    M = np.asarray(A)
    cols = [max(abs(v) for v in M[:, j]) for j in range(M.shape[1])]
    x = np.zeros(M.shape[1])
    x[max(range(len(cols)), key=cols.__getitem__)] = 1.0
    return x


def degree_witness(block: Block, x: Array, lam: float = 2.0) -> dict[str, object]:
    """f(λx) − λ^k f(x) for a block whose MLP is homogeneous of degree k.

    For the skip block this gap is (λ − λ^k) A x (the MLP terms cancel), while for every
    residual-free h of the kind h(λx) − λ^k h(x) = 0; a nonzero gap refutes f = h.
    """
    k = block.activation.degree
    if k is None or block.has_biases:
        raise AbsorbError(f"{block.activation.name} block with biases={block.has_biases} is "
                          "not homogeneous; no degree witness")
    x = np.asarray(x, dtype=np.float64)
    gap = block(lam * x) - lam**k * block(x)
    expected = (lam - lam**k) * (block.skip_matrix() @ x)
    exact: dict[str, object] = {}
    A_stored = block.stored_weights[2]
    if block.exact is not None and A_stored is not None:
        # exact input: the gap (λ − λ^k) A x over ℚ, which floats may round to 0 (a skip of
        # 10⁻⁴⁰⁰) although A x ≠ 0
        c = Fraction(lam) - Fraction(lam) ** int(k) if float(k).is_integer() else None
        if c is not None:
            exact["expected_gap_exact"] = [rational_text(c * v)
                                           for v in A_stored @ as_fractions(x)]
    return {**exact,
        "x": x.tolist(),
        "lambda": lam,
        "k": k,
        "gap": gap.tolist(),
        "gap_norm": float(np.linalg.norm(gap)),
        "expected_gap": expected.tolist(),
        "discrepancy": float(np.max(np.abs(gap - expected))),
        "statement": f"f(λx) - λ^k f(x) = (λ - λ^k) A x ≠ 0, whereas h(λx) - λ^k h(x) = 0 for "
                     f"every residual-free {block.activation.name} block h (λ = {lam:g}, "
                     f"k = {k:g})",
    }


def linearization_witness(block: Block, x: Array, ts: Sequence[float]) -> dict[str, object]:
    """The small-t behaviour of f(tx)/t for a gated block with g(0) = 0.

    f(tx)/t − A x = W_down (g(t W_gate x) ⊙ W_up x) is the residual-free block with the same
    weights at tx, divided by t. Every residual-free gated h obeys
        ‖h(tx)/t‖ ≤ ‖V_down‖₂ ‖V_up‖₂ ‖x‖ ω(t ‖V_gate‖₂ ‖x‖),   ω(r) = max_{|z| ≤ r} |g(z)|,
    and ω(r) = max(|g(r)|, |g(−r)|) for the catalog gates (ReLU, SiLU, GELU: g(z) = z F(z) with
    F nondecreasing in [0, 1] and F(z) + F(−z) = 1, so |g| grows on [0, ∞) and |g(−r)| ≤ g(r)).
    ``bound`` is that bound for every h whose three operator norms do not exceed the block's;
    it also bounds ``skip_gap``, so ``separation`` = ‖Ax‖ − skip_gap − bound is a lower bound on
    ‖f(tx)/t − h(tx)/t‖ for all such h. For any fixed h the bound → 0 as t → 0⁺.
    """
    act = block.activation
    if not act.gated or act.g0 != 0.0 or block.has_biases:
        raise AbsorbError(f"{act.name} block is not gated with g(0) = 0 and no biases; "
                          "no linearization witness")
    assert block.W_gate is not None  # gated blocks always carry W_gate (Block checks it)
    x = np.asarray(x, dtype=np.float64)
    Ax = block.skip_matrix() @ x
    t = np.asarray(ts, dtype=np.float64)
    gaps = np.linalg.norm(block(t[:, None] * x) / t[:, None] - Ax, axis=1)
    xn = float(np.linalg.norm(x))
    r = t * np.linalg.norm(block.W_gate, 2) * xn
    omega = np.maximum(np.abs(act(r)), np.abs(act(-r)))
    bound = np.linalg.norm(block.W_down, 2) * np.linalg.norm(block.W_up, 2) * xn * omega
    ax_norm = float(np.linalg.norm(Ax))
    return {
        "x": x.tolist(),
        "Ax_norm": ax_norm,
        "steps": [
            {"t": float(ti), "skip_gap": float(g), "gate_modulus": float(w), "bound": float(b),
             "separation": float(ax_norm - g - b)}
            for ti, g, w, b in zip(t, gaps, omega, bound, strict=True)
        ],
        "note": "skip_gap = ‖f(tx)/t - Ax‖ → 0 while ‖Ax‖ stays; bound ≥ ‖h(tx)/t‖ for every "
                "residual-free h with ‖V_up‖₂, ‖V_down‖₂, ‖V_gate‖₂ at most the block's "
                "(‖V_down‖₂‖V_up‖₂‖x‖·max_{|z|≤t‖V_gate‖₂‖x‖}|g(z)|), → 0 for every fixed h; "
                "separation > 0 rules out all such h at that t",
    }


def bounded_witness(block: Block, A: Any) -> dict[str, object]:
    """Unboundedness along a ray, for an ungated block with |σ| ≤ B and A ≠ 0 (as stored).

    With v = e_j (j: A's largest column, so Av is a column of the stored A) and the max-norm,
    ‖W_down σ(·) + b_down‖_max ≤ C = B·max_i Σ_k |W_down[i,k]| + ‖b_down‖_max, so
    ‖f(tv)‖_max ≥ t‖Av‖_max − C, while every residual-free block h whose ‖V_down‖_∞ and
    ‖c_down‖_max do not exceed the block's has ‖h(x)‖_max ≤ C for every x (any width m with
    the same row sums). Beyond t* = 2C/‖Av‖_max, ‖f(tv)‖_max > C ≥ ‖h(tv)‖_max; and for any
    fixed h, f(tv) grows without bound while h stays bounded. C and ‖Av‖_max are computed in
    exact rational arithmetic on the stored values; t* is the exact rational 2C/‖Av‖_max.
    """
    act = block.activation
    if act.bound is None or act.gated:  # not bounded, or a gate (times a linear value)
        raise AbsorbError(f"{act.name} is not a bounded ungated activation; no bounded witness")
    x = _basis_point(A)
    j = int(np.argmax(x))
    b_down = block.stored_biases[1]
    B = Fraction(act.bound)
    float_rows = math.inf  # exact input: the exact row sums below (never through float)
    if block.exact is None:
        with np.errstate(over="ignore"):
            float_rows = float(np.max(np.sum(np.abs(block.W_down), axis=1)))
    if math.isfinite(float_rows):
        # float weights: the row sums rounded upward (a sum of n terms errs by ≤ γ_n)
        row_max = Fraction(float_rows) * (1 + Fraction(2 * (block.n + 1)) * Fraction(_U))
    else:
        row_max = max(sum((abs(v) for v in row), Fraction(0))
                      for row in block.rational_weights[1])
    b_max = Fraction(0) if b_down is None else max(abs(Fraction(v)) for v in
                                                   np.asarray(b_down).tolist())
    C = B * row_max + b_max
    Av_max = max(abs(Fraction(v)) for v in np.asarray(A)[:, j].tolist())
    t_star = 2 * C / Av_max
    steps = []
    t0 = float(t_star) if t_star < Fraction(10) ** 300 else math.inf
    for m in BOUNDED_MULTIPLES:
        t = m * max(t0, 1.0)
        if not math.isfinite(t) or t > 1e300:
            break
        with np.errstate(all="ignore"):
            f_norm = float(np.max(np.abs(block(t * x))))
        steps.append({"t": t, "f_norm": f_norm,
                      "lower_bound": json_float(Fraction(t) * Av_max - C)})
    return {
        "x": x.tolist(),
        "norm": "max",
        "Av_norm": rational_text(Av_max),
        "bound": float(B),
        "residual_free_bound": rational_text(C),
        "t_star": rational_text(t_star),
        "steps": steps,
        "statement": f"|f(tv)| >= t|Av| - C > C for t > t* = 2C/|Av| (max-norms), whereas "
                     f"|h(x)| <= C for every x and every residual-free {act.name} block h with "
                     "row sums of |V_down| and |c_down| at most the block's; and f is "
                     "unbounded along v while every residual-free block is bounded",
    }
