"""Witnesses of the impossibility theorems (degree, linearization), computed from the weights."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from absorb.blocks import Array, Block
from absorb.errors import AbsorbError

LINEARIZATION_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)


def witness_point(A: Array, rng: np.random.Generator) -> Array:
    """A unit vector x with A x ≠ 0 (A ≠ 0): Gaussian, else the largest column's basis vector."""
    x = np.asarray(rng.standard_normal(A.shape[1]), dtype=np.float64)
    if not np.any(A @ x):
        x = np.zeros(A.shape[1])
        x[int(np.argmax(np.linalg.norm(A, axis=0)))] = 1.0
    return x / float(np.linalg.norm(x))


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
    return {
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
