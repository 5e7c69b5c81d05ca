"""The real relaxation of the index-set condition, in Gram form (THEORY.md, relaxation_certificate).

With a_i column i of ``W_down``, b_i row i of ``W_up`` and the (never formed) d²×n matrix K
whose columns are vec(a_i b_iᵀ),

    r² = min_{s ∈ ℝⁿ} ‖W_down diag(s) W_up + A‖_F²,
    G = KᵀK = (W_downᵀW_down) ⊙ (W_up W_upᵀ),    c = Kᵀ vec(A),  c_i = a_iᵀ A b_i,
    G s = −c,

O(n²d + n³) work and O(n² + nd) memory. r² > 0 proves that no index set exists; the residual
matrix R = W_down diag(s) W_up + A is then a dual certificate (:mod:`.dual`).

The two n×n Gram factors are computed in row blocks of the upper triangle (mirrored): one
16384×4096 product segfaults numpy's bundled OpenBLAS, row blocks of it do not, and the
symmetric half halves the work. G is built once per block: the factorizations overwrite one
triangle and the diagonal and leave the other triangle as it is, from which G is restored
(:func:`float_relaxation`), and the index-set search reuses G and its eigenpairs
(:class:`FloatSystem`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.linalg as sla

from absorb.blocks import Array as FloatArray
from absorb.budget import FLOAT_BYTES, Cost, human_seconds
from absorb.certificates import devices
from absorb.certificates.prepared import Weights, prepare
from absorb.errors import AbsorbError
from absorb.exact import json_float, rref, rref_seconds, safe_float

__all__ = ["EXACT_RELAXATION_MAX_SECONDS", "GRAM_BLOCK_BYTES", "Relaxation",
           "exact_relaxation_refusal", "exact_relaxation_seconds", "gram", "relaxation",
           "relaxation_cost"]

#: Temporaries of one row block of the Gram products stay below this many bytes.
GRAM_BLOCK_BYTES = 64 << 20
#: Rows of a tile of :func:`mirror_lower`: small transposed copies stay in cache (the diagonal
#: blocks of an n = 4096 Gram matrix took 6 ms, against 40 ms as one fancy-indexed copy each).
MIRROR_TILE = 64
#: The exact relaxation is refused up front beyond this predicted time (as long as the exact
#: meet-in-the-middle may run): its elimination grows like n⁵·bits², from 6 s at n = 64 to
#: about half an hour at n = 192 for 260-bit Gram entries.
EXACT_RELAXATION_MAX_SECONDS = 120.0
#: Measured time of one Fraction multiply-add on small numerators and denominators (the Gram
#: products and the residual matrix over ℚ).
_FRACTION_OP_SECONDS = 3e-6


@dataclass(frozen=True)
class Relaxation:
    """r² = min_s ‖W_down diag(s) W_up + A‖_F² and its minimum-norm minimizer s.

    ``rank`` is the rank of G: exact for rational input; for floats n when G is numerically
    positive definite (Cholesky succeeds and the estimated 1/κ₁(G) exceeds n·ε), else the rank
    of a diagonally pivoted Cholesky factorization stopped when the largest remaining pivot
    falls below n·ε·max_i G_ii (LAPACK ``pstrf``'s default rule). ``tolerance`` (floats only) is the
    threshold under which r² counts as zero: (d·tol·‖A‖_max)², since an S with
    ‖W_down[:,S]W_up[S,:] + A‖_max ≤ tol·‖A‖_max has Frobenius residual at most d times that.
    ``R`` is the d×d residual matrix at s (Fractions for rational input).
    """

    residual: float
    residual_exact: Fraction | None
    s: FloatArray
    rank: int
    unique: bool
    tolerance: float | None
    R: Any = None

    @property
    def is_zero(self) -> bool:
        """Whether r² counts as zero (exactly zero for rational input)."""
        if self.residual_exact is not None:
            return self.residual_exact == 0
        return self.residual <= (self.tolerance or 0.0)

    def to_json(self) -> dict[str, object]:
        return {
            "residual": json_float(self.residual),  # null beyond the float range
            "residual_exact": None if self.residual_exact is None else str(self.residual_exact),
            "s": [float(v) for v in self.s],
            "rank": self.rank,
            "unique": self.unique,
            "tolerance": self.tolerance,
        }


def _block_rows(n: int) -> int:
    """Rows per Gram block: three b×n float64 temporaries within GRAM_BLOCK_BYTES."""
    return max(1, min(n, GRAM_BLOCK_BYTES // (3 * FLOAT_BYTES * n)))


def relaxation_cost(d: int, n: int) -> Cost:
    """Predicted peak bytes and flops of the float relaxation of one (d, n) layer.

    Memory: G (n² floats, factorized in place), the float64 weights and the transposed
    W_down (3nd), the Gram row-block temporaries (3·b·n); when n > d², G is rank-deficient
    and the minimum-norm solution needs its eigendecomposition (G and V: 2n² more). The
    certificate check that follows (:mod:`.recheck`) needs the weights and five n×d floats
    (W_downᵀY, |W_downᵀ||Y| and their temporaries), and the certificate Y is reported as d²
    exact "p/q" strings (about 128 bytes each). The phases are added, not maximized: buffers of
    one phase can still be alive in the next (measured: a d = 4096, n = 16384 layer peaked at
    twice the larger phase), and the prediction must bound the peak, not estimate it.
    Work: the two symmetric Gram products (2n²d), c and the residual matrix (2nd² + 2nd²; c is
    O(nd) for the identity skip, but the bound keeps the general case),
    Cholesky (n³/3 flops, counted as n³: LAPACK's potrf ran at about a third of the GEMM rate
    on this machine — 1.0 s at n = 3072 against 0.34 s at the GEMM rate — and the prediction
    divides the work by the GEMM rate), or eigh (about 9n³) when rank-deficient, and the check
    (4nd²; usually 2nd², when the Cauchy–Schwarz bound decides).
    """
    nn, dd = float(n), float(d)
    rank_deficient = n > d * d
    gram_phase = (nn * nn * (3.0 if rank_deficient else 1.0) + 3.0 * nn * dd
                  + 3.0 * _block_rows(n) * nn)
    check_phase = 7.0 * nn * dd + 2.0 * dd * dd
    certificate_text = 16.0 * dd * dd
    floats = gram_phase + check_phase + certificate_text
    flops = (2.0 * nn * nn * dd + 8.0 * nn * dd * dd
             + (9.0 if rank_deficient else 1.0) * nn**3)
    return Cost(FLOAT_BYTES * floats, flops)


def gram(W_up: FloatArray, W_down: FloatArray) -> FloatArray:
    """G = (W_downᵀW_down) ⊙ (W_up W_upᵀ), computed in row blocks of the upper triangle and
    mirrored, exactly symmetric (on torch when a device is selected: :mod:`.devices`, G as
    torch returns it)."""
    if devices.current_device() != "cpu":
        return devices.torch_gram(W_up, W_down)
    n = W_up.shape[0]
    Wd_t = np.ascontiguousarray(W_down.T)
    Wu = np.ascontiguousarray(W_up)
    G: FloatArray = np.empty((n, n))
    b = _block_rows(n)
    for i0 in range(0, n, b):
        i1 = min(n, i0 + b)
        blk = Wd_t[i0:i1] @ Wd_t[i0:].T
        blk *= Wu[i0:i1] @ Wu[i0:].T
        G[i0:i1, i0:] = blk
        G[i0:, i0:i1] = blk.T
        # a GEMM need not round the (i, j) and (j, i) entries of the diagonal block alike;
        # exact symmetry lets G be restored from its lower triangle (float_relaxation)
        mirror_lower(G[i0:i1, i0:i1])
    return G


def mirror_lower(M: FloatArray) -> None:
    """The square M's strict lower triangle copied into its strict upper triangle, in row
    tiles of MIRROR_TILE (small transposed copies, no M-sized temporary)."""
    m = M.shape[0]
    for j0 in range(0, m, MIRROR_TILE):
        j1 = min(m, j0 + MIRROR_TILE)
        for i in range(j0, j1 - 1):
            M[i, i + 1 : j1] = M[i + 1 : j1, i]
        M[j0:j1, j1:] = M[j1:, j0:j1].T


def gram_rhs(w: Weights) -> FloatArray:
    """c_i = a_iᵀ A b_i; for a diagonal A (the identity skip) Σ_k a_ik A_kk b_ik, O(nd)
    instead of the O(nd²) product W_downᵀA."""
    diag = np.diag(w.A)
    if np.array_equal(w.A, np.diag(diag)):
        return np.asarray(np.einsum("ki,k,ik->i", w.W_down, diag, w.W_up), dtype=np.float64)
    c: FloatArray = np.einsum("ij,ij->i", w.W_down.T @ w.A, w.W_up)
    return c


def eigenpairs(G: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(λ ascending, V) with G = V diag(λ) Vᵀ, read from G's lower triangle and diagonal only
    (LAPACK ``syevr``, on a copy: G is not modified)."""
    lam, V = sla.eigh(G, check_finite=False)
    return lam, V


def min_norm_solution(eig: tuple[FloatArray, FloatArray], c: FloatArray,
                      rank: int) -> FloatArray:
    """The minimum-norm s with G s = −c from the top ``rank`` eigenpairs of G."""
    lam, V = eig
    n = lam.shape[0]
    lam_r, V_r = lam[n - rank :], V[:, n - rank :]
    # an eigenvalue rounded to ≤ 0 (G badly scaled, or NaN) contributes nothing: its
    # coefficient stays 0 instead of being divided (0/0 would be NaN, x/0 inf)
    proj = V_r.T @ c
    coef = np.zeros_like(proj)
    np.divide(proj, lam_r, out=coef, where=lam_r > 0)
    s: FloatArray = -V_r @ coef
    return s


def _one_norm(G: FloatArray) -> float:
    """max_j Σ_i |G_ij|, in row blocks (no n×n temporary)."""
    b = _block_rows(G.shape[0])
    sums = sum(np.abs(G[i0:i0 + b]).sum(axis=0) for i0 in range(0, G.shape[0], b))
    return float(np.max(sums))


def _full_rank_solution(G: FloatArray, c: FloatArray) -> FloatArray | None:
    """s with G s = −c from the unpivoted Cholesky factor, when G is numerically positive
    definite: the factorization succeeds and LAPACK's estimate of 1/κ₁(G) exceeds n·ε. None
    otherwise. On numpy G's upper triangle and diagonal hold the factor afterwards (its strict
    lower triangle is not touched); on a torch device G is left as it is.

    Why not pivoted Cholesky first: LAPACK's ``pstrf`` (a row and column swap per step) took
    2.5× as long as ``potrf`` at n = 4096 and 8192 (OpenBLAS 0.3.30, 2 cores; 17 s against
    6.7 s), and generic layers with n ≤ d² have full rank.
    """
    n = G.shape[0]
    anorm = _one_norm(G)
    L, info = devices.cholesky(G)  # in place on numpy; threads and device: .devices
    if info != 0:
        return None
    rcond, info = sla.lapack.dpocon(L, anorm, uplo="L")
    if info != 0 or not rcond > n * np.finfo(np.float64).eps:
        return None
    y = sla.solve_triangular(L, -c, lower=True, check_finite=False)
    z: FloatArray = sla.solve_triangular(L, y, lower=True, trans="T", check_finite=False)
    return z


@dataclass(frozen=True)
class FloatSystem:
    """G s = −c as :func:`float_relaxation` leaves it, for the index-set search to reuse:
    ``G``'s lower triangle and diagonal hold G (its upper triangle may hold a Cholesky factor:
    read it with :func:`eigenpairs`), ``eig`` its eigenpairs when the relaxation computed them
    (G rank-deficient), else None."""

    G: FloatArray
    c: FloatArray
    eig: tuple[FloatArray, FloatArray] | None


def float_relaxation(w: Weights, tol: float) -> tuple[Relaxation, FloatSystem]:
    """The relaxation for float weights, and the system it solved.

    G is built once. Both factorizations work on Gᵀ in Fortran order (the same matrix: no
    copy) and overwrite its upper triangle and diagonal, never its strict lower triangle; the
    diagonal is kept aside, so G is restored exactly (:func:`mirror_lower`: G is exactly
    symmetric) where the next step needs it.
    """
    G = gram(w.W_up, w.W_down)
    c = gram_rhs(w)
    n = w.n
    diag = G.diagonal().copy()
    diag_max = float(np.max(diag))
    full = _full_rank_solution(G, c) if diag_max > 0.0 and n <= w.d * w.d else None
    eig = None
    if full is not None:
        rank, s = n, full
    elif diag_max == 0.0:  # every unit has a_i = 0 or b_i = 0
        rank, s = 0, np.zeros(n)
    else:
        if n <= w.d * w.d and devices.current_device() == "cpu":
            # the Cholesky attempt overwrote the upper triangle and the diagonal (on torch it
            # worked on a copy), which pstrf reads
            mirror_lower(G)
            np.fill_diagonal(G, diag)
        rank_tol = n * np.finfo(np.float64).eps * diag_max
        L, piv, rank_, _ = sla.lapack.dpstrf(G.T, lower=1, tol=rank_tol, overwrite_a=1)
        rank = int(rank_)
        if rank == n:
            # full rank: the pivoted Cholesky factor solves G s = −c (trtrs reads one triangle)
            piv0 = piv - 1
            y = sla.solve_triangular(L, -c[piv0], lower=True, check_finite=False)
            z = sla.solve_triangular(L, y, lower=True, trans="T", check_finite=False)
            s = np.empty(n)
            s[piv0] = z
        else:
            np.fill_diagonal(G, diag)  # eigh reads the lower triangle, which pstrf left intact
            eig = eigenpairs(G)
            s = min_norm_solution(eig, c, rank)
    np.fill_diagonal(G, diag)  # handed on with its lower triangle (FloatSystem)
    # r² from the d×d residual itself (O(d²n)), not from ‖A‖² − cᵀG⁺c, which cancels badly
    # exactly when r² is small — the case that matters.
    R = w.W_down @ (s[:, None] * w.W_up) + w.A
    r2 = float(np.sum(R * R))
    a_max = float(np.max(np.abs(w.A)))
    tol_f = w.d * tol * a_max
    rel = Relaxation(residual=r2, residual_exact=None, s=s, rank=rank, unique=rank == n,
                     tolerance=tol_f * tol_f, R=R)  # a product: inf, not OverflowError
    return rel, FloatSystem(G, c, eig)


@dataclass(frozen=True)
class ExactSystem:
    """G s = −c over ℚ in reduced form: rows ``R`` (rank × n) with R s = ``rhs``."""

    R: list[list[Fraction]]
    rhs: list[Fraction]
    pivots: list[int]
    particular: list[Fraction]


def _gram_bits(w: Weights) -> int:
    """The bit size of G's and c's entries predicted from the weights': an entry of W_downᵀW_down
    or W_up W_upᵀ is a sum of d products of two weights, and G's entries are products of two of
    those (c's: a_iᵀ A b_i, alike). A weight p/q counts bits(p) + bits(q), what scaling a row
    to integers may cost it."""
    def size(M: Any) -> int:
        return max((v.numerator.bit_length() + v.denominator.bit_length() for v in M.ravel()),
                   default=0)

    bw = max(size(w.W_up), size(w.W_down), size(w.A))
    return 2 * (2 * bw + max(1, w.d - 1).bit_length())


def exact_relaxation_seconds(w: Weights) -> float:
    """Predicted time of :func:`exact_relaxation` from the sizes and the weights' bit sizes:
    the Gram products and the residual matrix over ℚ (2n²d + 2nd² Fraction multiply-adds) and
    the elimination of the n×(n+1) system [G | −c] (:func:`absorb.exact.rref_seconds`)."""
    n, d = w.n, w.d
    fraction_ops = 2.0 * n * n * d + 2.0 * n * d * d
    return fraction_ops * _FRACTION_OP_SECONDS + rref_seconds(n, n + 1, _gram_bits(w))


def exact_relaxation_refusal(w: Weights) -> str | None:
    """Why the exact relaxation of ``w`` is not run — its predicted time exceeds
    EXACT_RELAXATION_MAX_SECONDS (one line, naming the prediction) — or None when it may run.
    Computed from the sizes and bit sizes alone, before anything else."""
    seconds = exact_relaxation_seconds(w)
    if seconds <= EXACT_RELAXATION_MAX_SECONDS:
        return None
    return (f"the exact relaxation of this block (d={w.d}, n={w.n}, Gram entries of about "
            f"{_gram_bits(w)} bits) is predicted to take {human_seconds(seconds)} of exact "
            f"arithmetic; the limit is {human_seconds(EXACT_RELAXATION_MAX_SECONDS)} "
            "(nothing was computed)")


def exact_relaxation(w: Weights) -> tuple[Relaxation, ExactSystem]:
    """The relaxation over ℚ: exact rank, exact r², exact residual matrix R. Refused up front
    beyond EXACT_RELAXATION_MAX_SECONDS of predicted work (:func:`exact_relaxation_refusal`)."""
    refusal = exact_relaxation_refusal(w)
    if refusal is not None:
        raise AbsorbError(refusal)
    Wu, Wd, A = w.W_up, w.W_down, w.A
    n = w.n
    G = (Wd.T @ Wd) * (Wu @ Wu.T)
    c = ((Wd.T @ A) * Wu).sum(axis=1)
    aug = [[*G[i], -c[i]] for i in range(n)]
    red, pivots = rref(aug)
    if n in pivots:  # cannot happen: G s = −c is always consistent (normal equations)
        raise AssertionError("inconsistent normal equations")
    rank = len(pivots)
    rows = [row[:n] for row in red[:rank]]
    rhs = [row[n] for row in red[:rank]]
    p = [Fraction(0)] * n
    for row_i, col in enumerate(pivots):
        p[col] = rhs[row_i]
    # any solution p of G p = −c gives pᵀGp = −cᵀp, hence r² = ‖A‖² + 2cᵀp + pᵀGp = ‖A‖² + cᵀp
    r2 = sum((v * v for v in A.ravel()), Fraction(0)) + sum(
        (ci * pi for ci, pi in zip(c, p, strict=True)), Fraction(0)
    )
    # the minimum-norm point is reported, not used by any decision: floats suffice, and the
    # exact projection costs far more than the elimination itself
    s_min = (np.array([safe_float(v) for v in p]) if rank == n
             else _exact_min_norm(G, c, rank))
    rel = Relaxation(residual=safe_float(r2), residual_exact=r2,
                     s=s_min, rank=rank, unique=rank == n,
                     tolerance=None, R=_residual_at(w, p))
    return rel, ExactSystem(rows, rhs, pivots, p)


def _residual_at(w: Weights, p: list[Fraction]) -> Any:
    """R = W_down diag(p) W_up + A over ℚ (the same at every solution p: K p is the projection
    of −vec A). p's entries share one huge denominator L (the pivot minor): the product is
    formed with the integers L·p and divided by L once per entry, not once per term (a gcd of
    L-sized numbers in every Fraction addition took 5 s of 6 at d = 16, n = 64)."""
    L = math.lcm(*(v.denominator for v in p))
    scaled = np.array([v.numerator * (L // v.denominator) for v in p], dtype=object)
    R: Any = w.W_down @ (scaled[:, None] * w.W_up) / L + w.A
    return R


def _exact_min_norm(G: Any, c: Any, rank: int) -> FloatArray:
    """The minimum-norm s with G s = −c (G, c rationals of any size), in floats: G and c are
    each divided by their largest |entry| (exact), solved in floats, and s multiplied back in
    exact arithmetic (±inf beyond the float range, never a warning)."""
    g_peak = max((abs(v) for v in G.ravel()), default=Fraction(0)) or Fraction(1)
    c_peak = max((abs(v) for v in c), default=Fraction(0)) or Fraction(1)
    G_f = np.array([[safe_float(v / g_peak) for v in row] for row in G])
    c_f = np.array([safe_float(v / c_peak) for v in c])
    s_unit = min_norm_solution(eigenpairs(G_f), c_f, rank)
    factor = c_peak / g_peak
    return np.array([safe_float(Fraction(float(v)) * factor) for v in s_unit])


def relaxation(W_up: Any, W_down: Any, A: Any = None, *, tol: float = 1e-9) -> Relaxation:
    """The real relaxation r² = min_s ‖W_down diag(s) W_up + A‖_F² (A = I when None).

    Gram form: G = (W_downᵀW_down) ⊙ (W_up W_upᵀ), c_i = a_iᵀ A b_i, G s = −c, never forming the
    d²×n matrix. Floats: Cholesky (full rank; else pivoted Cholesky reveals the rank and eigh
    gives the minimum-norm s), r² measured on the d×d residual, ``tolerance`` =
    (d·tol·‖A‖_max)².
    Fraction object arrays: exact rational elimination and exact ``residual_exact``.
    """
    return prepared_relaxation(prepare(W_up, W_down, A), tol)


def prepared_relaxation(w: Weights, tol: float) -> Relaxation:
    """:func:`relaxation` of validated weights: exact for rationals, else in floats."""
    return exact_relaxation(w)[0] if w.exact else float_relaxation(w, tol)[0]
