"""Storage precision: when the index-set condition fails only by rounding.

Checkpoints store weights in float16, bfloat16, float32 or float64. A block that was
absorbable before its weights were rounded (W_down[:,S] W_up[S,:] = −A exactly) keeps, after
rounding each entry with relative error ≤ u (the format's unit roundoff), a residual
E = W_down[:,S] W_up[S,:] + A with, entry by entry,

    |E| ≤ (2u + u²) |W_down[:,S]| |W_up[S,:]| + u |A|,

so an S meeting that bound is "absorbable up to rounding". The smallest change of the stored
W_down[:,S] that makes the condition exact is the least-norm solution of
ΔW B = −A − W_down[:,S] B, B = W_up[S,:]: ΔW = T B⁺ (exact when rank B = d), computed by a
Cholesky of the normal equations with one refinement step on one BLAS thread, or a pivoted
QR where B is rank-deficient or ill-conditioned (:func:`least_norm_correction`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from absorb.blocks import Array
from absorb.budget import FLOAT_BYTES, Cost
from absorb.certificates.devices import factorization_threads
from absorb.formats import unit_roundoff

__all__ = ["FLOAT64_TOL", "MAX_SEARCH_TOL", "RoundingRepair", "least_norm_correction", "repair",
           "repair_cost", "search_tolerance", "storage_dtype"]

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


#: The normal equations are trusted when LAPACK's estimate of 1/κ₁ of their matrix is at least
#: this (κ(B) ≤ 10⁵); below it, or when the Cholesky factorization fails, the pivoted QR.
RCOND_NORMAL = 1e-10


def least_norm_correction(B: Array, E: Array) -> Array:
    """ΔW = −E B⁺: of the ΔW minimizing ‖ΔW B + E‖_F, the one of least Frobenius norm (each
    row x of ΔW is the least-norm least-squares solution of Bᵀxᵀ = −eᵀ, e that row of E).

    For B (k×d) of full rank, B⁺ = Bᵀ(BBᵀ)⁻¹ (k ≤ d) or (BᵀB)⁻¹Bᵀ (k > d): the normal
    equations with M = BBᵀ or BᵀB, by Cholesky (``potrf``/``potrs``), then one step of
    refinement (the normal equations' residual solved again with the same factor), all on
    :data:`~absorb.certificates.devices.FACTORIZATION_THREADS` BLAS thread. Used when the
    factorization succeeds and LAPACK's estimate of 1/κ₁(M) is at least
    :data:`RCOND_NORMAL`; then ΔW agrees with the SVD's (``numpy.linalg.lstsq``) to about
    max(d, k)·ε·κ²·(‖ΔW‖_F + ‖ΔW B + E‖_F/σ₁), κ = σ₁/σ_min of B (the normal equations'
    error bound; the refinement step usually brings it to the QR's κ in place of κ²). Else
    LAPACK ``gelsy``, a complete orthogonal factorization of Bᵀ (QR with column pivoting),
    on the numerical rank r where the pivoted R's estimated condition first exceeds 1/rcond,
    rcond = ε·max(d, k) (the cutoff ``numpy.linalg.lstsq`` puts on the singular values), to
    about max(d, k)·ε·κ_r·(‖ΔW‖_F + κ_r‖ΔW B + E‖_F/σ₁), κ_r = σ₁/σ_r, where both see the
    same rank (a clear gap below σ_r). Both tested against lstsq. Measured on one thread at
    d = k = 2048 with other jobs running: Cholesky 1.9–2.3 s, ``gelsy`` 4.4–7.1 s (idle, d =
    1024: 0.16 s and 0.22 s; numpy's threaded SVD took 12.2 s). Non-finite input gives a
    NaN ΔW (no least-squares problem to solve).
    """
    k, d = B.shape
    if k == 0:
        return np.zeros((E.shape[0], 0))
    if not (np.all(np.isfinite(B)) and np.all(np.isfinite(E))):
        return np.full((E.shape[0], k), np.nan)
    with factorization_threads():
        delta = _normal_equations(B, E)
        if delta is None:
            X = sla.lstsq(B.T, -E.T, cond=np.finfo(np.float64).eps * max(d, k),
                          lapack_driver="gelsy", check_finite=False)[0]
            delta = X.T
    out: Array = np.ascontiguousarray(delta, dtype=np.float64)
    return out


def _normal_equations(B: Array, E: Array) -> Array | None:
    """−E B⁺ by Cholesky of BBᵀ (k ≤ d) or BᵀB (k > d) and one refinement step; None when
    that matrix is not numerically positive definite or worse conditioned than
    :data:`RCOND_NORMAL` (the caller then uses the pivoted QR)."""
    k, d = B.shape
    wide = k <= d
    M = B @ B.T if wide else B.T @ B
    factor, info = sla.lapack.dpotrf(M, lower=0, clean=1)
    if info != 0:
        return None
    rcond, info = sla.lapack.dpocon(factor, float(np.linalg.norm(M, 1)))  # upper factor
    if info != 0 or not rcond >= RCOND_NORMAL:
        return None

    def solve(R: Array) -> Array:
        out: Array = sla.lapack.dpotrs(factor, R, lower=0)[0]
        return out

    def correction(R: Array) -> Array:
        """The least-norm δ with δ B = −R (consistent) or least squares (k ≤ d)."""
        if wide:  # δ = −R Bᵀ M⁻¹
            return -solve(B @ R.T).T
        return -(B @ solve(R.T)).T  # δ = −R M⁻¹ Bᵀ

    delta = correction(E)
    delta += correction(delta @ B + E)  # refinement: what the first solve left over
    return delta


def repair_cost(d: int, k: int) -> Cost:
    """Predicted peak bytes and work of :func:`repair` with |S| = k, in flops at the GEMM rate.

    Memory: B, E, ΔW, the rounding bound and the repaired product (five d×max(d, k)
    floats), plus the normal equations' matrix and right-hand sides (two more).
    Work: the products E, the rounding bound and the check after (three d×k×d GEMMs, 6d²k);
    the least squares by the normal equations (m = max(d, k), r = min(d, k)): M (2mr²), its
    Cholesky (r³/3), two solves with refinement (4r²d) and the products with B (6kd²),
    about 12d³ at k = d, on one BLAS thread: measured 8–16d³ at the two-thread GEMM rate
    (d = k = 1024 idle: 0.16 s, 8 GEMMs of d×d×d; 2048 under load: 1.9–2.3 s, 4–4.5).
    """
    dd, kk = float(d), float(k)
    m, r = max(dd, kk), min(dd, kk)
    solve = 2.0 * m * r * r + r**3 / 3.0 + 4.0 * r * r * dd + 6.0 * kk * dd * dd
    return Cost(FLOAT_BYTES * 7.0 * dd * m, 6.0 * dd * dd * kk + solve)


def repair(W_up: Array, W_down: Array, A: Array, S: Sequence[int], dtype: str,
           u: float | None = None) -> RoundingRepair:
    """The least-norm correction of W_down[:,S] (``u`` overrides the format's roundoff)."""
    idx = list(S)
    unit = unit_roundoff(dtype) if u is None else u
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
