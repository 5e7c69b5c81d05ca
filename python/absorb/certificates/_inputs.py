"""Validated weights for the certificate code: float64 arrays, or exact ``Fraction`` arrays.

Shared by the producers (relaxation, search, dual LP, rounding); the independent verifier
(:mod:`absorb.certificates.verify`) parses on its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.blocks import Array as FloatArray
from absorb.blocks import ObjectArray as ObjArray
from absorb.errors import AbsorbError

__all__ = ["FloatArray", "ObjArray", "Weights", "as_fractions", "exact_identity", "exact_rank",
           "prepare", "rref", "to_fraction"]


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


def to_fraction(v: object) -> Fraction:
    """A rational from a Fraction, an integer or a finite float (floats are dyadic: exact)."""
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise AbsorbError("weights contain NaN or Inf")
        return Fraction(float(v))
    raise AbsorbError(f"exact weights must be rationals, got {type(v).__name__}")


def as_fractions(M: Any) -> ObjArray:
    """Element-wise :func:`to_fraction` of an array (floats become their exact dyadic value)."""
    out: ObjArray = np.vectorize(to_fraction, otypes=[object])(np.asarray(M))
    return out


def exact_identity(d: int) -> ObjArray:
    eye: ObjArray = np.full((d, d), Fraction(0), dtype=object)
    for i in range(d):
        eye[i, i] = Fraction(1)
    return eye


def prepare(W_up: Any, W_down: Any, A: Any) -> Weights:
    """Shapes and values checked; exact when any input is an object (Fraction) array."""
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
        A_e = conv[2] if A is not None else exact_identity(d)
        return Weights(conv[0], conv[1], A_e, True)
    try:
        flo = [np.asarray(a, dtype=np.float64) for a in arrays]
    except (TypeError, ValueError) as exc:
        raise AbsorbError(f"weights must be numeric: {exc}") from None
    if not all(np.isfinite(a).all() for a in flo):
        raise AbsorbError("weights contain NaN or Inf")
    A_f = flo[2] if A is not None else np.eye(d)
    return Weights(flo[0], flo[1], A_f, False)


def rref(M: list[list[Fraction]]) -> tuple[list[list[Fraction]], list[int]]:
    """Reduced row echelon form over ℚ (in place) and the pivot columns."""
    rows = len(M)
    cols = len(M[0]) if rows else 0
    pivots: list[int] = []
    r = 0
    for col in range(cols):
        if r == rows:
            break
        piv = next((i for i in range(r, rows) if M[i][col] != 0), None)
        if piv is None:
            continue
        M[r], M[piv] = M[piv], M[r]
        inv = 1 / M[r][col]
        M[r] = [v * inv for v in M[r]]
        for i in range(rows):
            if i != r and M[i][col] != 0:
                f = M[i][col]
                M[i] = [vi - f * vr for vi, vr in zip(M[i], M[r], strict=True)]
        pivots.append(col)
        r += 1
    return M, pivots


def exact_rank(A: ObjArray) -> int:
    return len(rref([list(row) for row in A])[1])
