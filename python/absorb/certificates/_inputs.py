"""Validated weights for the certificate code: float64 arrays, or exact ``Fraction`` arrays.

Shared by the producers (relaxation, search, dual LP, rounding); the independent verifier
(:mod:`absorb.certificates.verify`) parses on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from absorb.blocks import Array as FloatArray
from absorb.blocks import ObjectArray as ObjArray
from absorb.errors import AbsorbError
from absorb.exact import as_fractions, identity, rank, rref, to_fraction

__all__ = ["FloatArray", "ObjArray", "Weights", "as_fractions", "prepare", "rank", "rref",
           "to_fraction"]


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
        A_e = conv[2] if A is not None else identity(d)
        return Weights(conv[0], conv[1], A_e, True)
    try:
        flo = [np.asarray(a, dtype=np.float64) for a in arrays]
    except (TypeError, ValueError) as exc:
        raise AbsorbError(f"weights must be numeric: {exc}") from None
    if not all(np.isfinite(a).all() for a in flo):
        raise AbsorbError("weights contain NaN or Inf")
    A_f = flo[2] if A is not None else np.eye(d)
    return Weights(flo[0], flo[1], A_f, False)
