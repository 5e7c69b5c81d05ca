"""Producing dual certificates: a d×d matrix Y proving that no index set exists.

With K_i = a_i b_iᵀ and c_i = ⟨K_i, Y⟩, an index set S would give −⟨A, Y⟩ = Σ_{i∈S} c_i ∈
[Σ min(c_i, 0), Σ max(c_i, 0)]. Such a Y exists exactly when −A lies outside the zonotope
Z = {Σ s_i K_i : s ∈ [0,1]ⁿ} (separating hyperplane). Two sources:

* the relaxation residual R = W_down diag(s*) W_up + A when r² > 0: ⟨R, K_i⟩ = 0 (normal
  equations) and −⟨A, R⟩ = −r² < 0;
* a linear program (HiGHS): maximize −⟨A, Y⟩ − Σ_i u_i over ‖Y‖_max ≤ 1, u_i ≥ max(c_i, 0).
  Its optimum is the largest separation; a positive optimum gives a Y (the box is symmetric,
  so the other side of the interval needs no second program). It finds certificates where
  least squares is blind (n ≥ d², r² = 0).

Candidates are scaled to ‖Y‖_max = 1, rounded to a coarse dyadic grid 2⁻ᵏ (short exact
rationals) and handed to the independent checker :func:`absorb.certificates.recheck.check_dual`;
the first that passes is the certificate.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from absorb.blocks import Array as FloatArray
from absorb.certificates.prepared import Weights, prepare
from absorb.certificates.real_relaxation import prepared_relaxation
from absorb.certificates.recheck import DualCheck, check_dual
from absorb.exact import json_float
from absorb.rationals import RationalMatrix, rational_text

__all__ = ["GRIDS", "LP_MAX_ENTRIES", "DualCertificate", "RationalMatrix", "certify",
           "dual_certificate", "lp_certificate", "lp_separator"]

#: Dyadic grids 2⁻ᵏ tried in turn for the rounded certificate (coarse first: short rationals).
GRIDS = (20, 30, 40, 52)
#: The LP's constraint matrix is dense n×d²; above this many entries it is not attempted.
LP_MAX_ENTRIES = 1 << 22
#: HiGHS wall-clock budget (seconds) of the separation LP.
LP_TIME_LIMIT = 60.0


@dataclass(frozen=True)
class DualCertificate:
    """A re-checked Y: −⟨A, Y⟩ lies ``margin`` outside [Σ min(c_i,0), Σ max(c_i,0)]."""

    Y: Any  # d×d: float64 on the dyadic grid 2^-grid (exact values), or Fractions
    check: DualCheck
    source: str
    grid: int | None

    def rational(self) -> RationalMatrix:
        """Y as the exact rationals it holds."""
        return RationalMatrix(self.Y, self.grid)

    def to_json(self) -> dict[str, object]:
        """The certificate's JSON; ``Y`` is a :class:`RationalMatrix` (serialized on output)."""
        chk = self.check
        exact = isinstance(chk.margin, Fraction)
        return {
            "Y": self.rational(),
            "margin": rational_text(chk.margin) if exact else float(chk.margin),
            "margin_float": json_float(chk.margin),
            "value": json_float(chk.value),
            "interval": [json_float(chk.lower), json_float(chk.upper)],
            # the exact values ("p/q"; a float beyond the float range is null above)
            "value_exact": rational_text(chk.value) if exact else None,
            "interval_exact": ([rational_text(chk.lower), rational_text(chk.upper)] if exact
                               else None),
            "side": self.check.side,
            "source": self.source,
            "grid": None if self.grid is None else f"2^-{self.grid}",
            "verified": self.check.how,
        }


def lp_separator(w: Weights) -> tuple[FloatArray | None, float]:
    """HiGHS's best separating Y (‖Y‖_max ≤ 1) and the separation it claims (≤ 0: none).

    Returns (None, 0.0) when the program is too large (n·d² > LP_MAX_ENTRIES) or HiGHS fails.
    """
    d, n = w.d, w.n
    if n * d * d > LP_MAX_ENTRIES:
        return None, 0.0
    Wu = np.asarray(w.W_up, dtype=np.float64)
    Wd = np.asarray(w.W_down, dtype=np.float64)
    A = np.asarray(w.A, dtype=np.float64)
    K = np.einsum("ji,ik->ijk", Wd, Wu).reshape(n, d * d)  # row i = vec(a_i b_iᵀ)
    scale = max(float(np.max(np.abs(K))), 1e-300)
    # variables (vec Y, u); rows: K_i·y − u_i ≤ 0; objective min ⟨A, Y⟩ + Σ u
    A_ub = sp.hstack([sp.csr_matrix(K / scale), -sp.identity(n, format="csr")], format="csr")
    cost = np.concatenate([A.ravel() / scale, np.ones(n)])
    bounds = [(-1.0, 1.0)] * (d * d) + [(0.0, None)] * n
    res = linprog(cost, A_ub=A_ub, b_ub=np.zeros(n), bounds=bounds, method="highs",
                  options={"time_limit": LP_TIME_LIMIT})
    if res.status != 0 or res.x is None:
        return None, 0.0
    return np.asarray(res.x[: d * d]).reshape(d, d), -float(res.fun) * scale


def _rounded(Y: FloatArray, k: int) -> FloatArray:
    """Y / ‖Y‖_max rounded to the grid 2⁻ᵏ (exactly representable in float64 for k ≤ 52)."""
    peak = float(np.max(np.abs(Y)))
    if peak == 0.0 or not np.isfinite(peak):
        return np.zeros_like(Y)
    out: FloatArray = np.round(Y / peak * 2.0**k) / 2.0**k
    return out


def certify(w: Weights, candidates: Iterable[tuple[Any, str]]) -> DualCertificate | None:
    """The first candidate Y (float, rounded to each grid in turn; or exact Fractions) that the
    independent checker accepts for the stored weights."""
    for Y, source in candidates:
        Y_arr = np.asarray(Y)
        if Y_arr.dtype == object:
            tries: list[tuple[Any, int | None]] = [(Y_arr, None)]
        else:
            tries = [(_rounded(np.asarray(Y_arr, dtype=np.float64), k), k) for k in GRIDS]
        for Yk, k in tries:
            if not np.any(Yk != 0):
                continue
            chk = check_dual(w.W_up, w.W_down, Yk, w.A)
            if chk.valid:
                return DualCertificate(Yk, chk, source, k)
    return None


def residual_candidates(R: Any) -> list[tuple[Any, str]]:
    """The relaxation residual as a candidate: rounded (float) first, then exact if rational."""
    src = "relaxation residual R = W_down diag(s*) W_up + A"
    R_arr = np.asarray(R)
    if R_arr.dtype == object:
        return [(R_arr.astype(np.float64), src), (R_arr, src + " (exact)")]
    return [(R_arr, src)]


def lp_certificate(w: Weights) -> tuple[DualCertificate | None, str]:
    """The separation LP's certificate (re-checked independently), or None, and a note on
    the outcome."""
    Y, sep = lp_separator(w)
    if Y is None:
        return None, (f"separation LP not run or failed (n·d² = {w.n * w.d * w.d})")
    if sep <= 0:
        return None, f"separation LP: -A lies inside the zonotope (optimum {sep:.3g})"
    cert = certify(w, [(Y, "separation LP (HiGHS)")])
    if cert is None:
        return None, (f"separation LP claims {sep:.3g} but no rounding of its Y passed the "
                      "exact check")
    return cert, "separation LP certificate, checked independently"


def dual_certificate(W_up: Any, W_down: Any, A: Any = None, *,
                     tol: float = 1e-9) -> DualCertificate | None:
    """A re-checked certificate that no index set exists, or None when none was found.

    The relaxation residual when r² > 0 (floats: r² above its tolerance), else the
    separation LP; None means −A lies in the zonotope (or the LP was too large or failed).
    """
    w = prepare(W_up, W_down, A)
    rel = prepared_relaxation(w, tol)
    if not rel.is_zero:
        cert = certify(w, residual_candidates(rel.R))
        if cert is not None:
            return cert
    return lp_certificate(w)[0]
