"""X·Y = Z decided by one float64 GEMM on row and column grids (float input, the fast path).

Every finite float is a multiple of the power of two of its lowest set bit. Give each row i of
X a grid 2^gx_i dividing all its entries and each column j of Y a grid 2^gy_j; then every
product X_ik·Y_kj, hence P_ij = (X·Y)_ij, is a multiple of U_ij = 2^(gx_i + gy_j). In these
units X and Y are integer matrices of few bits per row or column (a float32 row of moderate
spread: its 24-bit mantissas plus its exponent spread) even when the whole matrix needs many
(the grid of :func:`absorb.exact.integers` is the finest over ALL entries), so one float64
GEMM with its proven error bound is often decisive on its own: if Z_ij is not a multiple of
U_ij, P_ij ≠ Z_ij; if it is, P_ij − Z_ij is a multiple of U_ij, and a computed difference
plus error bound below U_ij proves it zero. :func:`grid_product_equals` returns None where
this does not decide; the caller then runs the general exact check.

Cost: a few passes over the entries (row/column reductions of the IEEE 754 bits, two
power-of-two scalings of Z) and one float64 GEMM of X·Y as given.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from absorb.errors import AbsorbError

__all__ = ["grid_product_equals"]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

_U = 2.0**-53
_FRACTION_BITS = np.uint64((1 << 52) - 1)
_ONE = np.uint64(1)
#: Bits per row of X and per column of Y (|integer| < 2^bits) beyond which the fast path
#: declines: products and k-term sums stay far inside the float64 range.
_MAX_BITS = 480


def _grids(x: F64, axis: int, scratch: F64, count: bool) -> tuple[I64, I64, I64]:
    """(g, top, nnz) of each row (axis = 1) or column (axis = 0) of a finite float64 matrix:
    every entry is a multiple of 2^g, |entries| < 2^top, nnz nonzero entries (g = top = 0 for
    an all-zero line; nnz = the line's length unless ``count``). Raises AbsorbError on NaN or
    Inf.

    Read from the IEEE 754 bits with sign dropped (raw << 1, which orders magnitudes): a
    nonzero entry is m·2^(max(E,1) − 1075) with m = fraction + 2⁵²·[E > 0]. The lowest set bit
    of m is at position ≥ t := min(tz(OR of the line's fractions), 52) (a normal entry with
    fraction 0 has m = 2⁵²), and max(E,1) ≥ the line's least exponent field Emin over nonzero
    entries (the minimum of raw << 1 − 1, where zero wraps to the top), so each entry is a
    multiple of 2^(Emin − 1075 + t) =: 2^g. g is then capped at 0 (a coarser grid divides a
    finer one) so that every scaling 2^-g below enlarges: nothing underflows. An entry with
    field E is below 2^(max(E,1) − 1022); top takes the line's largest field. ``scratch``
    holds the shifted bits (at least x.size float64s).
    """
    mag = np.left_shift(x.view(np.uint64), _ONE,
                        out=scratch[:x.size].view(np.uint64).reshape(x.shape))
    hi = mag.max(axis=axis)
    if int(hi.max()) >> 53 == 0x7FF:
        raise AbsorbError("weights contain NaN or Inf")
    ored = np.bitwise_or.reduce(mag, axis=axis)
    nnz: I64 = np.count_nonzero(mag, axis=axis).astype(np.int64) if count \
        else np.full(x.shape[1 - axis], x.shape[axis], dtype=np.int64)
    mag -= _ONE
    lo = mag.min(axis=axis) + _ONE
    frac = (ored >> _ONE) & _FRACTION_BITS
    low = frac & (~frac + _ONE)  # lowest set bit, a power of two: its exponent field is exact
    tz = np.where(frac != 0, (low.astype(np.float64).view(np.uint64) >> np.uint64(52))
                  .astype(np.int64) - 1023, 52)
    g: I64 = np.maximum((lo >> np.uint64(53)).astype(np.int64), 1) - 1075 + np.minimum(tz, 52)
    np.minimum(g, 0, out=g)
    top: I64 = np.maximum((hi >> np.uint64(53)).astype(np.int64), 1) - 1022
    g[lo == 0] = 0
    top[lo == 0] = 0
    return g, top, nnz


def _finite_or_raise(Z: F64) -> None:
    if not np.isfinite(Z).all():
        raise AbsorbError("weights contain NaN or Inf")


def grid_product_equals(X: F64, Y: F64, Z: F64) -> bool | None:
    """Whether X·Y = Z exactly (float64 arrays X a×k, Y k×b, Z a×b, k ≥ 1), or None when one
    GEMM on the row/column grids (module docstring) does not decide.

    Proof. Let U_ij = 2^(gx_i + gy_j) (:func:`_grids`, both g ≤ 0) and Xs, Ys the integer
    matrices X_ik·2^-gx_i, Y_kj·2^-gy_j, |Xs_ik| < 2^bx_i, |Ys_kj| < 2^by_j (b = top − g).
    The path runs only when every g ≥ −1023 (2^-g is a float), gx_i + gy_j ≥ −1022, all
    b ≤ 480 and max top_x + max top_y + bitlen(k) ≤ 1020.

    1. T = Z·2^-gx_i·2^-gy_j is computed exactly (both factors ≥ 1: no underflow; an overflow
       gives ±inf only where |Z_ij/U_ij| ≥ 2^1024 > k·2^(bx+by) > |P_ij/U_ij|, a difference
       the steps below find). P_ij/U_ij = (Xs·Ys)_ij is an integer, so a non-integer T_ij
       proves P_ij ≠ Z_ij.
    2. P̂ = fl(X·Y) is computed on X and Y as given. The same operations on Xs and Ys would
       give P̂_ij/U_ij: every intermediate of that computation is an integer (products and
       sums of integers, rounded at magnitudes where floats are integers), so 0 or at least
       1 in magnitude, and scaled by U_ij ≥ 2^-1022 it stays in the normal range, where
       rounding commutes with powers of two; no overflow by the top bound. Row i of X has
       m_i nonzero entries, so each entry of P̂ is a sum of at most m_i nonzero products; an
       operation with an exact zero operand is exact, so along any summation order (blocked,
       FMA, several accumulators) each product meets at most m_i roundings:
       |P̂_ij − P_ij|/U_ij ≤ γ(m_i)·Σ_k |Xs_ik||Ys_kj| ≤ γ(m_i)·m_i·2^bx_i·2^by_j =: β_ij,
       γ(m) = m·u/(1 − m·u), u = 2⁻⁵³ (Higham §3.1). The computed β is enlarged by 1.01
       for its own few roundings.
    3. D = fl(P̂ − Z)·2^-gy_j·2^-gx_i: after step 1 both terms are multiples of U_ij ≥ 2^-1022,
       so the subtraction rounds (relative error ≤ u) and never underflows; the scalings
       enlarge (an overflow to inf marks a difference beyond any β). With |P_ij − Z_ij|/U_ij
       ≤ |D_ij|/(1 − u) + β_ij < 1 for all i, j every integer (P_ij − Z_ij)/U_ij is 0:
       equal (tested as fl(max|D|·(1 + 4u)) + max cx·2^(max by) < 1, each rounding upward
       covered: fl(a(1 + 4u)) ≥ a(1 + 4u)(1 − u) ≥ a/(1 − u), and rounding is monotone with
       1 a float). If fl(|D_ij|(1 − 4u)) > β_ij somewhere, P_ij ≠ Z_ij there (|P̂ − Z|/U ≥
       |D|/(1 + u) ≥ |D|(1 − 4u)(1 + u) ≥ the computed left side, and |P − Z| ≥ |P̂ − Z| − β).
    """
    k = X.shape[1]
    # two buffers for every d×d pass: fresh large arrays would each cost page faults
    scratch = np.empty((2, max(X.size, Y.size, Z.size)))
    gx, tx, nx = _grids(X, 1, scratch[0], count=True)
    gy, ty, _ = _grids(Y, 0, scratch[0], count=False)
    bx, by = tx - gx, ty - gy
    if int(gx.min()) < -1023 or int(gy.min()) < -1023 \
            or int(gx.min()) + int(gy.min()) < -1022 \
            or max(int(bx.max()), int(by.max())) > _MAX_BITS \
            or int(tx.max()) + int(ty.max()) + k.bit_length() > 1020:
        return None
    # an overflow is an inf that proves a difference; inf − inf a NaN that fails a test
    with np.errstate(over="ignore", invalid="ignore"):
        return _decide(X, Y, Z, (gx, bx, nx), (gy, by), scratch)


def _decide(X: F64, Y: F64, Z: F64, row: tuple[I64, I64, I64], col: tuple[I64, I64],
            scratch: F64) -> bool | None:
    """Steps 1–3 of :func:`grid_product_equals` on the grids it checked."""
    (gx, bx, nx), (gy, by) = row, col
    sx = np.ldexp(1.0, -gx)[:, None]
    sy = np.ldexp(1.0, -gy)[None, :]
    T = np.multiply(Z, sx, out=scratch[0, :Z.size].reshape(Z.shape))
    T *= sy
    R = np.rint(T, out=scratch[1, :Z.size].reshape(Z.shape))
    R -= T
    if R.any():  # a NaN is nonzero too: raise, not False
        _finite_or_raise(Z)
        return False
    m = nx.astype(np.float64)
    cx = 1.01 * (m * _U / (1.0 - m * _U)) * m * np.ldexp(1.0, bx)  # β_ij = cx_i·2^by_j
    top_y = float(np.ldexp(1.0, int(by.max())))
    if float(np.max(cx)) * top_y >= 1.0:  # no GEMM can prove equality here: leave it to
        return None  # the general path (whose float pass finds differences beyond rounding)
    D = np.matmul(X, Y, out=R)
    D -= Z
    D *= sy
    dmax = float(np.max(np.maximum(D.max(axis=1), -D.min(axis=1)) * sx[:, 0]))
    if dmax * (1 + 4 * _U) + float(np.max(cx)) * top_y < 1.0:
        return True
    _finite_or_raise(Z)
    np.abs(D, out=D)
    D *= sx  # now |D_ij| in units U_ij: integers or inf, then against β_ij = cx_i·2^by_j
    D *= np.ldexp(1.0, -by)[None, :]
    if np.any(D.max(axis=1) * (1 - 4 * _U) > cx):
        return False
    return None
