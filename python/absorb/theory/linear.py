"""Linear blocks (σ = identity): decided by the rank of A + W_down W_up."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.blocks import Block
from absorb.certificates import as_fractions
from absorb.certificates._inputs import rref
from absorb.theory.common import (
    theorem_fields,
    verify_construction,
    weights_json,
)
from absorb.weights import rational_rank


def decide_linear(block: Block, rng: np.random.Generator,
                   base: dict[str, object]) -> dict[str, object]:
    """σ = id: f(x) = L x + c with L = A + W_down W_up; residual-free blocks give rank ≤ n."""
    L = block.skip_matrix() + block.W_down @ block.W_up
    U, s, Vt = np.linalg.svd(L)
    if block.exact is not None:
        ex = block.exact
        A_ex = ex.A_skip if ex.A_skip is not None else np.eye(block.d, dtype=int).astype(object)
        rank = rational_rank(A_ex + ex.W_down @ ex.W_up)
    else:
        rank = int(np.sum(s > max(L.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)))
    facts = {"rank": rank, "singular_values": s.tolist(), "exact": block.exact is not None}
    if rank > block.n:
        return {**base, "verdict": "not_absorbed", **theorem_fields(None),
                "reason": f"the block is linear with rank {rank} > n = {block.n}; every "
                          "residual-free linear block of width n has rank <= n",
                "certificate": facts}
    r = rank
    root = np.sqrt(s[:r])
    V_up = np.zeros((block.n, block.d))
    V_down = np.zeros((block.d, block.n))
    V_up[:r] = root[:, None] * Vt[:r]
    V_down[:, :r] = U[:, :r] * root
    c_down = None
    if block.has_biases:
        c_down = block.b_down if block.b_down is not None else np.zeros(block.d)
        if block.b_up is not None:
            c_down = c_down + block.W_down @ block.b_up
    h = Block(block.activation, V_up, V_down,
              b_up=np.zeros(block.n) if block.has_biases else None, b_down=c_down,
              residual=False)
    weights = weights_json(h) if block.exact is None else _exact_linear_weights(block)
    return {**base, "verdict": "absorbed", **theorem_fields(None),
            "reason": f"the block is linear with rank {rank} <= n = {block.n}; a rank "
                      "factorization of A + W_down W_up absorbs it"
                      + (" (over Q, exact)" if block.exact is not None else " (SVD)"),
            "certificate": facts, "S": None, "absorbing_block": weights,
            **verify_construction(block, h, rng)}


def _exact_linear_weights(block: Block) -> dict[str, object]:
    """L = A + W_down W_up = C R over ℚ (R: the nonzero rows of rref(L), C: L's pivot
    columns), padded with zero units to width n; c_down = b_down + W_down b_up."""
    ex = block.exact
    assert ex is not None  # only for exact blocks
    A_q = ex.A_skip if ex.A_skip is not None else as_fractions(block.skip_matrix())
    L = A_q + ex.W_down @ ex.W_up
    red, pivots = rref([list(row) for row in L])
    r = len(pivots)
    zero = Fraction(0)
    V_up = np.full((block.n, block.d), zero, dtype=object)
    V_down = np.full((block.d, block.n), zero, dtype=object)
    if r:
        V_up[:r] = np.array(red[:r], dtype=object)
        V_down[:, :r] = L[:, pivots]
    out: dict[str, object] = {"W_up": V_up, "W_down": V_down}
    if block.has_biases:
        b_up = ex.b_up if ex.b_up is not None else (
            None if block.b_up is None else as_fractions(block.b_up))
        b_down = ex.b_down if ex.b_down is not None else (
            None if block.b_down is None else as_fractions(block.b_down))
        c_down = np.full(block.d, zero, dtype=object) if b_down is None else b_down
        if b_up is not None:
            c_down = c_down + ex.W_down @ b_up
        out["b_up"] = np.full(block.n, zero, dtype=object)
        out["b_down"] = c_down
    return out
