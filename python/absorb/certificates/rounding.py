"""Storage precision: when the index-set condition fails only by rounding.

Checkpoints store weights in float16, bfloat16, float32 or float64. A block that was
absorbable before its weights were rounded (W_down[:,S] W_up[S,:] = −A exactly) keeps, after
rounding each entry with relative error ≤ u (the format's unit roundoff), a residual
E = W_down[:,S] W_up[S,:] + A with, entry by entry,

    |E| ≤ (2u + u²) |W_down[:,S]| |W_up[S,:]| + u |A|,

so an S meeting that bound is "absorbable up to rounding". The smallest change of the stored
W_down[:,S] that makes the condition exact is the least-norm solution of
ΔW B = −A − W_down[:,S] B, B = W_up[S,:]: ΔW = T B⁺ (exact when rank B = d), computed by a
pivoted QR on one BLAS thread (:func:`least_norm_correction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from absorb.blocks import Array
from absorb.budget import FLOAT_BYTES, Cost
from absorb.certificates.devices import factorization_threads

__all__ = ["FLOAT64_TOL", "UNIT_ROUNDOFF", "RoundingRepair", "least_norm_correction", "repair",
           "repair_cost", "search_tolerance", "storage_dtype"]


#: Unit roundoff of each storage format (half the spacing of the numbers near 1).
UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24,
                 "float64": 2.0**-53}
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
    """The coarsest of bfloat16, float16, float32, float64 holding every entry exactly.

    Weights read into float64 keep their stored values, so the format they were stored in is
    recovered from the values themselves (a float64 weight is practically never a float32).
    """
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


def search_tolerance(W_up: Array, W_down: Array, A: Array, u: float) -> float:
    """A relative max-norm tolerance (τ/‖A‖_max) that every S consistent with rounding at
    level u meets: the largest entry of the rounding bound with all n units (one d×n×d
    product, as costly as the relaxation's residual matrix; a Cauchy–Schwarz bound would be
    cheaper but about three times looser, enough to blur generic bfloat16 layers)."""
    a_max = float(np.max(np.abs(A)))
    mag = float(np.max(np.abs(W_down) @ np.abs(W_up) + np.abs(A)))
    return float(1.01 * (2 * u + u * u) * mag / a_max
                 + 4 * (W_up.shape[0] + 2) * 2.0**-52 * mag / a_max)


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


def least_norm_correction(B: Array, E: Array) -> Array:
    """ΔW = −E B⁺: of the ΔW minimizing ‖ΔW B + E‖_F, the one of least Frobenius norm (each
    row x of ΔW is the least-norm least-squares solution of Bᵀxᵀ = −eᵀ, e that row of E).

    LAPACK ``gelsy``: a complete orthogonal factorization of Bᵀ (QR with column pivoting,
    then RZ), on :data:`~absorb.certificates.devices.FACTORIZATION_THREADS` BLAS thread. The
    numerical rank r is where the pivoted R's estimated condition first exceeds 1/rcond,
    rcond = ε·max(d, k), the cutoff ``numpy.linalg.lstsq`` (an SVD, ``gelsd``) puts on the
    singular values; the solution is the least-norm one on that rank, as the SVD's. Both
    factorizations are backward stable, so where the two ranks agree (a clear gap below σ_r)
    they give the same ΔW to about max(d, k)·ε·κ·(‖ΔW‖_F + κ‖ΔW B + E‖_F/σ₁), κ = σ₁/σ_r
    (Wedin's perturbation bound for least squares; tested against lstsq). Non-finite input
    gives a NaN ΔW (no least-squares problem to solve).
    """
    k, d = B.shape
    if k == 0:
        return np.zeros((E.shape[0], 0))
    if not (np.all(np.isfinite(B)) and np.all(np.isfinite(E))):
        return np.full((E.shape[0], k), np.nan)
    with factorization_threads():
        X = sla.lstsq(B.T, -E.T, cond=np.finfo(np.float64).eps * max(d, k),
                      lapack_driver="gelsy", check_finite=False)[0]
    delta: Array = np.ascontiguousarray(X.T, dtype=np.float64)
    return delta


def repair_cost(d: int, k: int) -> Cost:
    """Predicted peak bytes and work of :func:`repair` with |S| = k, in flops at the GEMM rate.

    Memory: B, E, ΔW, the rounding bound and the repaired product (five d×max(d, k)
    floats), plus ``gelsy``'s copy of Bᵀ and of the right-hand sides (two more).
    Work: the products E, the rounding bound and the check after (three d×k×d GEMMs, 6d²k),
    and the pivoted QR with its solve, about 2dk² + 2d²k flops (m = max(d, k), r = min(d, k):
    2mr² − 2r³/3 for the QR, 4mr·d for applying it and the triangular solves to d right-hand
    sides), counted eight times: ``gelsy`` runs on one BLAS thread and its pivoting is
    matrix-vector work (measured here: d = k = 1024 in 0.22 s and 2048 in 1.5 s, 8–13 GEMMs
    of the same size on two threads).
    """
    dd, kk = float(d), float(k)
    m, r = max(dd, kk), min(dd, kk)
    qr = 2.0 * m * r * r - 2.0 * r**3 / 3.0 + 4.0 * m * r * dd
    return Cost(FLOAT_BYTES * 7.0 * dd * m, 6.0 * dd * dd * kk + 8.0 * qr)


def repair(W_up: Array, W_down: Array, A: Array, S: Sequence[int], dtype: str,
           u: float | None = None) -> RoundingRepair:
    """The least-norm correction of W_down[:,S] (``u`` overrides the format's roundoff)."""
    idx = list(S)
    unit = UNIT_ROUNDOFF[dtype] if u is None else u
    B = W_up[idx, :]
    E = W_down[:, idx] @ B + A
    delta = least_norm_correction(B, E)
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
