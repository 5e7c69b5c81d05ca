"""Storage precision: when the index-set condition fails only by rounding.

Checkpoints store weights in float16, bfloat16, float32 or float64. A block that was
absorbable before its weights were rounded (W_down[:,S] W_up[S,:] = −A exactly) keeps, after
rounding each entry with relative error ≤ u (the format's unit roundoff), a residual
E = W_down[:,S] W_up[S,:] + A with, entry by entry,

    |E| ≤ (2u + u²) |W_down[:,S]| |W_up[S,:]| + u |A|,

so an S meeting that bound is "absorbable up to rounding". The smallest change of the stored
W_down[:,S] that makes the condition exact is the least-norm solution of
ΔW B = −A − W_down[:,S] B, B = W_up[S,:]: ΔW = T B⁺ (exact when rank B = d).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from absorb.blocks import Array
from absorb.formats import unit_roundoff

__all__ = ["FLOAT64_TOL", "MAX_SEARCH_TOL", "RoundingRepair", "repair", "search_tolerance",
           "storage_dtype"]

#: For float64 weights the condition is accepted to this relative accuracy (float64 work on
#: O(1) weights loses ~1e-15; 1e-9 leaves room for conditioning) and called exact.
FLOAT64_TOL = 1e-9


def _fits_float16(x: Array) -> bool:
    with np.errstate(over="ignore"):
        return bool(np.all(x.astype(np.float16).astype(np.float64) == x))


def _fits_bfloat16(x: Array) -> bool:
    with np.errstate(over="ignore"):  # beyond the float32 range: inf, which does not fit
        f32 = x.astype(np.float32)
    if not np.all(f32.astype(np.float64) == x):
        return False
    return bool(np.all((f32.view(np.uint32) & np.uint32(0xFFFF)) == 0))


def storage_dtype(*arrays: Array) -> str:
    """The coarsest of bfloat16, float16, float32, float64 holding every entry exactly: the
    format of a block built in memory from float64 arrays. A block read from a file carries
    the format the file names (``Block.dtype``), never this guess."""
    flats = [np.asarray(a, dtype=np.float64) for a in arrays]  # no copy for float64 input
    if all(_fits_bfloat16(x) for x in flats):
        return "bfloat16"
    if all(_fits_float16(x) for x in flats):
        return "float16"
    with np.errstate(over="ignore"):
        if all(np.array_equal(x.astype(np.float32), x) for x in flats):
            return "float32"
    return "float64"


def rounding_bound(W_up: Array, W_down: Array, A: Array, S: Sequence[int], u: float) -> Array:
    """(2u + u²)|W_down[:,S]||W_up[S,:]| + u|A|, plus the float64 error of evaluating E."""
    idx = list(S)
    mag = np.abs(W_down[:, idx]) @ np.abs(W_up[idx, :]) + np.abs(A)
    eval_err = (len(idx) + 2) * 2.0**-52 * mag
    bound: Array = (2 * u + u * u) * (mag - np.abs(A)) + u * np.abs(A) + eval_err
    return bound


#: The largest relative search tolerance: beyond it the rounding of the products would hide
#: A itself (a subnormal skip beside O(1) weights), and S = ∅ (residual ‖A‖_max) must never
#: pass as within rounding; the exact answer decides such blocks.
MAX_SEARCH_TOL = 0.5


def search_tolerance(W_up: Array, W_down: Array, A: Array, u: float) -> float:
    """A relative max-norm tolerance (τ/‖A‖_max) that every S consistent with rounding at
    level u meets: the largest entry of the rounding bound with all n units (one d×n×d
    product, as costly as the relaxation's residual matrix; a Cauchy–Schwarz bound would be
    cheaper but about three times looser, enough to blur generic bfloat16 layers), at most
    MAX_SEARCH_TOL (also where the quotient overflows: a subnormal ‖A‖_max)."""
    a_max = float(np.max(np.abs(A)))
    with np.errstate(over="ignore"):
        mag = float(np.max(np.abs(W_down) @ np.abs(W_up) + np.abs(A)))
        rel = (1.01 * (2 * u + u * u) + 4 * (W_up.shape[0] + 2) * 2.0**-52) * (mag / a_max)
    return float(min(rel, MAX_SEARCH_TOL)) if math.isfinite(rel) else MAX_SEARCH_TOL


@dataclass(frozen=True)
class RoundingRepair:
    """The least-norm ΔW_down[:,S] making W_down[:,S] W_up[S,:] = −A, and its size."""

    S: tuple[int, ...]
    dtype: str
    unit_roundoff: float
    delta: Array
    residual_before: float
    residual_after: float
    within_rounding: bool
    relative_change: float

    @property
    def in_roundoffs(self) -> float:
        """‖ΔW‖_F / ‖W_down‖_F in units of the format's unit roundoff."""
        return self.relative_change / self.unit_roundoff

    def to_json(self) -> dict[str, object]:
        return {
            "S": list(self.S),
            "storage_dtype": self.dtype,
            "unit_roundoff": self.unit_roundoff,
            "delta_W_down_S": self.delta.tolist(),
            "delta_norm_relative_to_W_down": self.relative_change,
            "delta_norm_in_unit_roundoffs": self.in_roundoffs,
            "residual_before": self.residual_before,
            "residual_after": self.residual_after,
            "within_rounding_bound": self.within_rounding,
        }


def repair(W_up: Array, W_down: Array, A: Array, S: Sequence[int], dtype: str,
           u: float | None = None) -> RoundingRepair:
    """The least-norm correction of W_down[:,S] (``u`` overrides the format's roundoff)."""
    idx = list(S)
    unit = unit_roundoff(dtype) if u is None else u
    B = W_up[idx, :]
    E = W_down[:, idx] @ B + A
    # ΔW B = −E, least norm: Bᵀ ΔWᵀ = −Eᵀ solved by lstsq (minimum-norm for every column)
    delta: Array = np.asarray(np.linalg.lstsq(B.T, -E.T, rcond=None)[0].T, dtype=np.float64)
    after = (W_down[:, idx] + delta) @ B + A
    within = bool(np.all(np.abs(E) <= rounding_bound(W_up, W_down, A, idx, unit)))
    rel = float(np.linalg.norm(delta) / max(float(np.linalg.norm(W_down)), 1e-300))
    return RoundingRepair(tuple(idx), dtype, unit, delta, float(np.max(np.abs(E))),
                          float(np.max(np.abs(after))), within, rel)


def corrected(W_down: Array, rep: RoundingRepair) -> Array:
    """W_down with the correction applied to the columns S."""
    out: Array = W_down.copy()
    out[:, list(rep.S)] += rep.delta
    return out
