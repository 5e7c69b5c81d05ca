"""Independent checks of certificates, rigorous for the stored numbers.

This module shares no code with the producers (relaxation, LP, index-set search): it recomputes
everything from the stored weights, on the bottom-layer exact arithmetic of
:mod:`absorb.exact` (rational reading, integer forms, products modulo primes), which no
producer's result enters. Every float16/
bfloat16/float32/float64 value is a dyadic rational m·2^e, so the stored weights ARE
rationals and the checks below are statements about exactly those numbers.

Dual certificate (THEORY.md, dual certificate). For Y ∈ ℚ^{d×d} put c_i = a_iᵀ Y b_i (a_i
column i of W_down, b_i row i of W_up). If Σ_{i∈S} a_i b_iᵀ = −A for some S then
−⟨A, Y⟩ = Σ_{i∈S} c_i ∈ [Σ_i min(c_i, 0), Σ_i max(c_i, 0)]; a value outside that interval
proves that no index set exists. The margin is the distance to the interval.

Two ways of deciding it, both O(n d²):

* exact: every matrix is written as an integer matrix times a rational scale (floats as the
  dyadic rationals they are), and the c_i and ⟨A, Y⟩ are computed exactly from residues
  modulo primes on float64 BLAS and the Chinese remainder theorem
  (:func:`absorb.exact.bilinear_rows`; used whenever n·d² ≤ EXACT_OPS, and always for
  non-float input);
* floating point with a proven bound (float weights beyond EXACT_OPS): with P = W_downᵀY
  computed in float64, |fl(xᵀy) − xᵀy| ≤ γ_m |x|ᵀ|y|, γ_m = m·u/(1 − m·u), u = 2⁻⁵³, for any
  summation order (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1),
  so |ĉ_i − c_i| ≤ γ_d Σ_k (|P̂_ik| + (|W_downᵀ||Y|)_ik)|b_ik|; these bounds, inflated for
  their own rounding and an underflow allowance of 2⁻⁹⁰⁰, enclose every c_i, the interval and
  ⟨A, Y⟩, and the certificate is accepted only if the enclosures are separated. Cheap bound
  first: (|W_downᵀ||Y|)_ik ≤ ‖a_i‖₂‖Y_:k‖₂ (Cauchy–Schwarz, O(nd + d²)) decides whenever the
  margin is not tight; only otherwise is |W_downᵀ||Y| formed (a second n×d×d GEMM).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from absorb.errors import AbsorbError
from absorb.exact import bilinear_rows, frobenius_product, index_set_holds, to_fraction

__all__ = ["EXACT_OPS", "DualCheck", "check_dual", "check_index_set", "parse_matrix"]

#: Largest n·d² decided in exact arithmetic when the weights are floats (a few primes, each
#: an n×d×d GEMM; the proven float bound beyond needs one or two).
EXACT_OPS = 1 << 23
EXACT_HOW = "exact rational arithmetic on the stored weights"
FLOAT_HOW = ("float64 arithmetic with a proven rounding-error bound on the stored weights "
             "(|fl(x^T y) - x^T y| <= gamma_m |x|^T |y|, Higham 2002, section 3.1)")
_U = 2.0**-53
_TINY = 2.0**-900

Obj = NDArray[np.object_]


def parse_matrix(M: Any) -> Obj:
    """A 2-D array of exact rationals from floats, integers, Fractions or "p/q" strings."""
    arr = np.asarray(M, dtype=object)
    if arr.ndim != 2:
        raise ValueError(f"expected a matrix, got {arr.ndim} dimensions")
    try:
        out: Obj = np.vectorize(to_fraction, otypes=[object])(arr) if arr.size else arr
    except AbsorbError as exc:  # the checker's callers expect ValueError for bad entries
        raise ValueError(str(exc)) from None
    return out


@dataclass(frozen=True)
class DualCheck:
    """Outcome of checking one Y: ``valid`` iff −⟨A,Y⟩ lies outside [lower, upper].

    Exact checks hold the exact values; float checks hold enclosures (``value`` then is the
    computed −⟨A,Y⟩ and ``margin`` a proven lower bound on the distance to the interval).
    """

    valid: bool
    margin: Fraction | float
    value: Fraction | float
    lower: Fraction | float
    upper: Fraction | float
    side: Literal["above", "below", "inside"]
    how: str


def _decide(value: Any, lower: Any, upper: Any, how: str) -> DualCheck:
    if value > upper:
        return DualCheck(True, value - upper, value, lower, upper, "above", how)
    if value < lower:
        return DualCheck(True, lower - value, value, lower, upper, "below", how)
    return DualCheck(False, 0 if isinstance(value, Fraction) else 0.0, value, lower, upper,
                     "inside", how)


def _check_exact(Wu: Any, Wd: Any, A: Any, Y: Any) -> DualCheck:
    """c_i = a_iᵀ Y b_i and −⟨A, Y⟩ exactly (:func:`absorb.exact.bilinear_rows`: integer forms,
    residues modulo primes on float64 BLAS, Chinese remainder theorem)."""
    c, scale = bilinear_rows(Wd, Y, Wu)
    lower = Fraction(sum(v for v in c if v < 0)) * scale
    upper = Fraction(sum(v for v in c if v > 0)) * scale
    value = -frobenius_product(A, Y)
    return _decide(value, lower, upper, EXACT_HOW)


def _gamma(m: int) -> float:
    return m * _U / (1.0 - m * _U)


def _check_float(Wu: NDArray[np.float64], Wd: NDArray[np.float64], A: NDArray[np.float64],
                 Y: NDArray[np.float64]) -> DualCheck:
    d, n = Wd.shape
    # every bound below is a sum of nonnegative terms computed in float64; a computed sum of
    # m such terms is at most (1 + γ_m) below the true one, hence the 1.01 inflation (d, n ≪ 2⁴⁵)
    P = Wd.T @ Y
    c = np.einsum("ik,ik->i", P, Wu)
    absP_b = np.einsum("ik,ik->i", np.abs(P), np.abs(Wu))
    # cheap bound first: (|W_downᵀ||Y|)_ik ≤ ‖a_i‖₂‖Y_:k‖₂ (Cauchy–Schwarz), so no second GEMM;
    # computed norms are inflated for their rounding and for squares lost to underflow
    grow = 1.0 + 4.0 * (d + 4) * _U
    a_norm = np.sqrt(np.einsum("ki,ki->i", Wd, Wd)) * grow + 2.0**-500
    y_norm = np.sqrt(np.einsum("ki,ki->i", Y, Y)) * grow + 2.0**-500
    cheap = _decide_float(Wu, A, Y, c, absP_b + a_norm * (np.abs(Wu) @ y_norm) * grow, d, n)
    if cheap.valid:
        return cheap
    value = -float(np.sum(A * Y))
    if float(np.sum(np.minimum(c, 0.0))) <= value <= float(np.sum(np.maximum(c, 0.0))):
        return cheap  # inside even without error bounds: no sharper bound can separate it
    Q = np.abs(Wd.T) @ np.abs(Y)  # the sharper bound: one more GEMM
    return _decide_float(Wu, A, Y, c, absP_b + np.einsum("ik,ik->i", Q, np.abs(Wu)), d, n)


def _decide_float(Wu: NDArray[np.float64], A: NDArray[np.float64], Y: NDArray[np.float64],
                  c: NDArray[np.float64], mag: NDArray[np.float64], d: int, n: int) -> DualCheck:
    """The enclosures from ĉ and an upper bound ``mag`` on Σ_k (|P̂_ik| + (|W_downᵀ||Y|)_ik)|b_ik|,
    and the decision."""
    err = 1.01 * _gamma(d + 1) * mag + _TINY
    m = n + 1
    upper = 1.01 * (1.0 + _gamma(m)) * float(np.sum(np.maximum(c, 0.0) + err)) + m * _TINY
    lower = -1.01 * (1.0 + _gamma(m)) * float(np.sum(np.maximum(-c, 0.0) + err)) - m * _TINY
    value = -float(np.sum(A * Y))
    v_err = 1.01 * _gamma(d * d + 1) * float(np.sum(np.abs(A * Y))) + _TINY
    # enclosures: true value ∈ [value − v_err, value + v_err], true interval ⊆ [lower, upper];
    # the two subtractions below round at most twice, each by u times their operands
    slack = 4 * _U * (abs(value) + v_err + abs(upper) + abs(lower)) + _TINY
    above = ((value - v_err) - upper) - slack
    below = (lower - (value + v_err)) - slack
    if above > 0:
        return DualCheck(True, above, value, lower, upper, "above", FLOAT_HOW)
    if below > 0:
        return DualCheck(True, below, value, lower, upper, "below", FLOAT_HOW)
    return DualCheck(False, 0.0, value, lower, upper, "inside", FLOAT_HOW)


def _all_float(*ms: Any) -> bool:
    return all(isinstance(m, np.ndarray) and m.dtype.kind == "f" for m in ms)


def check_dual(W_up: Any, W_down: Any, Y: Any, A: Any = None, *,
               exact: bool | None = None) -> DualCheck:
    """Check the dual certificate Y for (W_up, W_down, A) (A = I when None).

    ``exact=None`` decides exactly when n·d² ≤ EXACT_OPS or any input is not a float array,
    else with the proven float64 bound; ``exact=True`` forces exact arithmetic.
    """
    d = np.shape(W_down)[0]
    A_in = np.eye(d) if A is None else A
    n = np.shape(W_up)[0]
    if np.shape(W_up) != (n, d) or np.shape(W_down) != (d, n) or np.shape(A_in) != (d, d) \
            or np.shape(Y) != (d, d):
        raise ValueError("shapes must be W_up (n, d), W_down (d, n), A and Y (d, d)")
    floats = _all_float(W_up, W_down, A_in, Y)
    if exact is None:
        exact = not floats or n * d * d <= EXACT_OPS
    if not exact:
        arrays = [np.asarray(m, dtype=np.float64) for m in (W_up, W_down, A_in, Y)]
        if not all(np.all(np.isfinite(a)) for a in arrays):
            raise ValueError("entries must be finite")
        return _check_float(*arrays)
    # floats stay floats (read as the dyadic rationals they are); anything else is parsed
    return _check_exact(*(M if _all_float(M) else parse_matrix(M)
                          for M in (W_up, W_down, A_in, Y)))


def check_index_set(W_up: Any, W_down: Any, S: Any, A: Any = None) -> bool:
    """Whether W_down[:,S] W_up[S,:] = −A holds EXACTLY for the stored values (A = I if None).

    Contract: the inputs are read as the rationals they store — float arrays (any dtype) as
    their dyadic values, object arrays of Fractions, integers or "p/q" strings as written; no
    value passes through a float conversion and no tolerance is applied. S = ∅ holds iff
    A = 0. Raises ValueError for bad shapes or an S that is not a set of distinct indices in
    [0, n). Cost: only the columns S of W_down and rows S of W_up are read; the identity is
    decided by integer scaling and products modulo primes on float64 BLAS
    (:func:`absorb.exact.product_equals`, proof there) — a few GEMMs of size d×|S|×d, one
    when the scaled integers are small, and one prime (one GEMM) to reject a wrong S.
    """
    return index_set_holds(W_up, W_down, S, A)
