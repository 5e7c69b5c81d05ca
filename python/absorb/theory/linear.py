"""Linear blocks (σ = identity): decided by the exact rank of L = A + W_down W_up over ℚ.

Every residual-free linear block of width n is x ↦ V_down V_up x + c, of rank ≤ n; the skip
block is x ↦ L x + c'. So it is absorbable iff rank L ≤ n, and then a rank factorization
L = C R (R: the nonzero rows of rref(L), C: L's pivot columns) padded with zero units is an
absorbing block. The rank is decided on the stored values in exact arithmetic (a float is a
dyadic rational), never at a floating-point tolerance: a matrix of exact rank 2 with a
singular value 2⁻⁵² has rank 2.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.blocks import Block
from absorb.exact import rref
from absorb.theory.construction import check_construction
from absorb.verdicts import (
    Absorbed,
    NotAbsorbed,
    Subject,
    Undetermined,
    Verdict,
    exact_linear_absorption,
    exact_linear_rank,
)

#: The exact rank is computed when d²·n + d³ rational operations stay below this (≈ 10 s).
LINEAR_EXACT_OPS = 1 << 23


def decide_linear(block: Block, rng: np.random.Generator, subject: Subject) -> Verdict:
    """σ = id: f(x) = L x + c with L = A + W_down W_up; residual-free blocks give rank ≤ n."""
    d, n = block.d, block.n
    if d * d * n + d**3 > LINEAR_EXACT_OPS:
        return Undetermined(subject=subject, reason=(
            f"the exact rank of the {d}x{d} matrix A + W_down W_up (d^2 n + d^3 = "
            f"{d * d * n + d**3} rational operations) is beyond the budget "
            f"{LINEAR_EXACT_OPS}; a floating-point rank is not a proof"))
    W_up, W_down, A = block.rational_weights
    L = A + W_down @ W_up
    rank = exact_linear_rank(L, n)
    if rank is not None and rank > n:
        return NotAbsorbed(subject=subject, reason=(
            f"the block is linear with rank {rank} > n = {n} (exact, over Q); every "
            "residual-free linear block of width n has rank <= n"),
            certificate={"rank": rank, "exact": True,
                         "proof": f"rank(A + W_down W_up) = {rank} > n = {n}, computed over Q "
                                  "on the stored values"})
    weights = _exact_linear_weights(block, L)
    proof = exact_linear_absorption(L, n, weights["W_down"], weights["W_up"])
    if proof is None:  # the factorization is exact by construction; checked anyway
        return Undetermined(subject=subject, reason="the factorization over Q did not "
                            "reproduce A + W_down W_up exactly")
    h = Block(block.activation, np.asarray(weights["W_up"], dtype=np.float64),
              np.asarray(weights["W_down"], dtype=np.float64),
              b_up=None if "b_up" not in weights else np.zeros(n),
              b_down=(None if "b_down" not in weights
                      else np.asarray(weights["b_down"], dtype=np.float64)),
              residual=False)
    how = f"rank {rank} <= n = {n}" if rank is not None else f"d = {d} <= n = {n}"
    return Absorbed(subject=subject, proof=proof, reason=(
        f"the block is linear with {how} (exact, over Q); a factorization "
        "V_down V_up = A + W_down W_up over Q absorbs it"),
        construction={"absorbing_block": weights,
                      "certificate": ({"rank": rank, "exact": True} if rank is not None
                                      else {"rank_at_most": d, "exact": True})},
        check=check_construction(block, h, rng))


def _exact_linear_weights(block: Block, L: np.ndarray) -> dict[str, object]:
    """V_down V_up = L over ℚ at width n: for d ≤ n, V_up = [I; 0] and V_down = [L, 0]; else
    L = C R (R: the nonzero rows of rref(L), C: L's pivot columns) padded with zero units.
    c_down = b_down + W_down b_up."""
    zero = Fraction(0)
    V_up = np.full((block.n, block.d), zero, dtype=object)
    V_down = np.full((block.d, block.n), zero, dtype=object)
    if block.d <= block.n:
        for i in range(block.d):
            V_up[i, i] = Fraction(1)
        V_down[:, :block.d] = L
    else:
        red, pivots = rref([list(row) for row in L])
        r = len(pivots)
        if r:
            V_up[:r] = np.array(red[:r], dtype=object)
            V_down[:, :r] = L[:, pivots]
    out: dict[str, object] = {"W_up": V_up, "W_down": V_down}
    if block.has_biases:
        b_up, b_down = block.rational_biases
        c_down = np.full(block.d, zero, dtype=object) if b_down is None else b_down
        if b_up is not None:
            c_down = c_down + block.rational_weights[1] @ b_up
        out["b_up"] = np.full(block.n, zero, dtype=object)
        out["b_down"] = c_down
    return out
