"""Exact linear algebra over ℚ on numpy object arrays of ``fractions.Fraction`` for the stack
decisions: determinants, inverses and null spaces on top of :mod:`absorb.exact`.

Float weights enter as the dyadic rationals they are (``Fraction(float)`` is exact), so every
computation here is exact for the stored numbers.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.blocks import Block, ObjectArray
from absorb.exact import as_fractions, identity, rank
from absorb.exact import rref as _rref

__all__ = ["as_fractions", "det", "exact_weights", "identity", "inverse", "null_space", "rank",
           "rref"]


def rref(M: ObjectArray) -> tuple[list[list[Fraction]], list[int]]:
    """Reduced row echelon form of M over ℚ and its pivot columns (Gauss–Jordan, on a copy)."""
    return _rref([list(row) for row in M])


def exact_weights(block: Block) -> tuple[ObjectArray, ObjectArray, ObjectArray]:
    """(W_up, W_down, A) of a block as rationals: the file's rationals, else the stored floats."""
    ex = block.exact
    if ex is not None:
        A = identity(block.d) if ex.A_skip is None else ex.A_skip
        return ex.W_up, ex.W_down, A
    A = identity(block.d) if block.A_skip is None else as_fractions(block.A_skip)
    return as_fractions(block.W_up), as_fractions(block.W_down), A


def det(M: ObjectArray) -> Fraction:
    """det M by Gaussian elimination over ℚ."""
    R = [list(row) for row in M]
    size = len(R)
    out = Fraction(1)
    for col in range(size):
        piv = next((i for i in range(col, size) if R[i][col] != 0), None)
        if piv is None:
            return Fraction(0)
        if piv != col:
            R[col], R[piv] = R[piv], R[col]
            out = -out
        out *= R[col][col]
        for i in range(col + 1, size):
            f = R[i][col] / R[col][col]
            if f:
                R[i] = [a - f * b for a, b in zip(R[i], R[col], strict=True)]
    return out


def inverse(M: ObjectArray) -> ObjectArray | None:
    """M⁻¹ over ℚ (None when M is singular), from the reduced row echelon form of [M | I]."""
    size = M.shape[0]
    R, pivots = rref(np.concatenate([M, identity(size)], axis=1))
    if pivots[:size] != list(range(size)):
        return None
    return np.array([row[size:] for row in R], dtype=object)


def null_space(M: ObjectArray) -> ObjectArray:
    """A basis of {x : M x = 0} over ℚ, as the columns of the returned matrix."""
    cols = M.shape[1]
    R, pivots = rref(M)
    free = [c for c in range(cols) if c not in pivots]
    basis: ObjectArray = np.full((cols, len(free)), Fraction(0), dtype=object)
    for k, f in enumerate(free):
        basis[f, k] = Fraction(1)
        for r, p in enumerate(pivots):
            basis[p, k] = -R[r][f]
    return basis
