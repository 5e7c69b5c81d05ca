"""Validated weights for the certificate code: float64 arrays, or exact ``Fraction`` arrays.

Shared by the producers (relaxation, index-set search, dual LP, rounding); the independent
re-check (:mod:`absorb.certificates.recheck`) parses on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from absorb.blocks import Array as FloatArray
from absorb.errors import AbsorbError
from absorb.exact import as_fractions, identity

__all__ = ["EXACT_FALLBACK_WORK", "SAFE_EXPONENT", "Weights", "float_safe", "prepare"]


@dataclass(frozen=True)
class Weights:
    """Validated weights: float64 arrays, or Fraction object arrays when ``exact``."""

    W_up: Any
    W_down: Any
    A: Any
    exact: bool

    @property
    def d(self) -> int:
        return int(self.W_up.shape[1])

    @property
    def n(self) -> int:
        return int(self.W_up.shape[0])


def prepare(W_up: Any, W_down: Any, A: Any) -> Weights:
    """Shapes and values checked; exact when any input is an object (Fraction) array. Float
    values outside the range float64 work can handle (:func:`float_safe`) are first rebalanced
    (W_up·2^k, W_down·2^-k: every product a_i b_iᵀ unchanged), and decided exactly when that
    does not suffice."""
    arrays = [np.asarray(W_up), np.asarray(W_down)]
    if A is not None:
        arrays.append(np.asarray(A))
    exact = any(a.dtype == object for a in arrays)
    if arrays[0].ndim != 2 or arrays[1].ndim != 2:
        raise AbsorbError("W_up must be (n, d) and W_down (d, n) matrices")
    n, d = arrays[0].shape
    if n < 1 or d < 1:
        raise AbsorbError(f"sizes must be positive, got n={n}, d={d}")
    if arrays[1].shape != (d, n):
        raise AbsorbError(
            f"W_down has shape {arrays[1].shape}, expected {(d, n)} for W_up {(n, d)}"
        )
    if A is not None and arrays[2].shape != (d, d):
        raise AbsorbError(f"skip matrix has shape {arrays[2].shape}, expected {(d, d)}")
    if exact:
        conv = [as_fractions(a) for a in arrays]
        A_e = conv[2] if A is not None else identity(d)
        return Weights(conv[0], conv[1], A_e, True)
    try:
        flo = [np.asarray(a, dtype=np.float64) for a in arrays]
    except (TypeError, ValueError) as exc:
        raise AbsorbError(f"weights must be numeric: {exc}") from None
    if not all(np.isfinite(a).all() for a in flo):
        raise AbsorbError("weights contain NaN or Inf")
    A_f = flo[2] if A is not None else np.eye(d)
    if float_safe(flo[0], flo[1], A_f):
        return Weights(flo[0], flo[1], A_f, False)
    balanced = _balanced(flo[0], flo[1])
    if balanced is not None and float_safe(*balanced, A_f):
        return Weights(*balanced, A_f, False)
    # float64 work would overflow or lose the skip below the products: the stored values are
    # rationals, decided exactly instead (the tolerance does not apply to them)
    if n * n * d > EXACT_FALLBACK_WORK:
        raise AbsorbError(
            f"weights of magnitude outside [2^-{SAFE_EXPONENT}, 2^{SAFE_EXPONENT}] need exact "
            f"arithmetic, which is refused at this size (n={n}, d={d}: n²d > "
            f"{EXACT_FALLBACK_WORK}); rescale the block (the index-set condition is invariant "
            "under W_up → 2^k W_up, W_down → 2^-k W_down)")
    return Weights(as_fractions(flo[0]), as_fractions(flo[1]), as_fractions(A_f), True)


#: Largest |exponent| of a matrix's largest entry for float64 work (Gram entries then stay
#: within 2^(±4·SAFE_EXPONENT)·d², far from overflow and underflow).
SAFE_EXPONENT = 120
#: Largest n²d for which float weights outside that range are decided in exact arithmetic.
EXACT_FALLBACK_WORK = 1 << 22


def _balanced(W_up: FloatArray, W_down: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """(2^k W_up, 2^-k W_down) with the two largest entries' exponents about equal, when that
    scaling is exact (no entry lost to the subnormal range), else None. Every product a_i b_iᵀ,
    hence the index-set condition, the relaxation and every certificate, is unchanged."""
    peaks = [float(np.max(np.abs(M))) if M.size else 0.0 for M in (W_up, W_down)]
    if 0.0 in peaks:
        return None
    k = (int(np.frexp(peaks[1])[1]) - int(np.frexp(peaks[0])[1])) // 2
    up, down = np.ldexp(W_up, k), np.ldexp(W_down, -k)
    exact = (np.array_equal(np.ldexp(up, -k), W_up) and np.array_equal(np.ldexp(down, k), W_down)
             and np.all(np.isfinite(up)) and np.all(np.isfinite(down)))
    return (up, down) if exact else None


def float_safe(W_up: FloatArray, W_down: FloatArray, A: FloatArray) -> bool:
    """Whether the largest entry of each matrix (when nonzero) lies in
    [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT]: then the relaxation's Gram products, residuals and
    certificate checks cannot overflow, and the skip is not lost below the products."""
    lo, hi = 2.0**-SAFE_EXPONENT, 2.0**SAFE_EXPONENT
    for M in (W_up, W_down, A):
        peak = float(np.max(np.abs(M))) if M.size else 0.0
        if peak != 0.0 and not lo <= peak <= hi:
            return False
    return True
