"""The relaxation certificate and the exact index-set search (THEORY.md, relaxation_certificate).

Write a_i for column i of ``W_down`` and b_i for row i of ``W_up``. An index set S is a 0/1
vector s with

    Σ_i s_i a_i b_iᵀ = −A                                      (d² linear equations in s),

the condition of index_set_sufficient / index_set_necessary. Its real relaxation

    r² = min_{s ∈ ℝⁿ} ‖W_down diag(s) W_up + A‖_F²

is a least-squares problem whose normal equations live in the Gram form: with the
(never formed) d²×n matrix K whose columns are vec(a_i b_iᵀ),

    G = KᵀK = (W_downᵀW_down) ⊙ (W_up W_upᵀ),    c = Kᵀ vec(A),  c_i = a_iᵀ A b_i,
    G s = −c,    r² = ‖A‖_F² − cᵀG⁺c,

O(n²d + n³) work and O(n² + nd) memory. r² > 0 proves that no index set exists. When r² = 0
the real solutions are the affine set p + null(G) (null(G) = null(K)), and an index set is a
0/1 point of it; `find_index_set` decides that completely (unique-solution check, then a
meet-in-the-middle search over subset sums, or HiGHS integer programming).

Inputs are either float arrays (decided with a stated tolerance) or numpy object arrays of
`fractions.Fraction` (decided in exact rational arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
import scipy.linalg as sla
from numpy.typing import NDArray

from absorb.errors import AbsorbError

__all__ = [
    "IndexSetSearch",
    "Relaxation",
    "brute_force_index_set",
    "find_index_set",
    "index_set_residual",
    "relaxation",
]

FloatArray = NDArray[np.float64]
ObjArray = NDArray[np.object_]
Method = Literal["auto", "meet-in-the-middle", "milp"]

# Keys of the meet-in-the-middle hash are projections on a fixed random direction: the
# search is complete for any direction, the seed only fixes which (harmless) key collisions
# occur, so results are deterministic.
_PROJECTION_SEED = 20260423
# Pairs of half-sums whose keys collide are verified in chunks of this many pairs.
_PAIR_CHUNK = 1 << 20
# HiGHS wall-clock budget (seconds) when it is used as the fallback of a too-large enumeration.
_MILP_TIME_LIMIT = 60.0


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class Relaxation:
    """r² = min_s ‖W_down diag(s) W_up + A‖_F² and its minimum-norm minimizer s.

    ``rank`` is the rank of G = (W_downᵀW_down) ⊙ (W_up W_upᵀ): exact for rational input; for
    floats the rank of a diagonally pivoted Cholesky factorization of G stopped when the
    largest remaining pivot falls below n·ε·max_i G_ii (LAPACK ``pstrf``'s default rule).
    ``tolerance`` (floats only) is the threshold under which r² counts as zero:
    (d·tol·‖A‖_max)², since an S with ‖W_down[:,S]W_up[S,:] + A‖_max ≤ tol·‖A‖_max has
    Frobenius residual at most d times that.
    """

    residual: float
    residual_exact: Fraction | None
    s: FloatArray
    rank: int
    unique: bool
    tolerance: float | None

    @property
    def is_zero(self) -> bool:
        """Whether r² counts as zero (exactly zero for rational input)."""
        if self.residual_exact is not None:
            return self.residual_exact == 0
        return self.residual <= (self.tolerance or 0.0)

    def to_json(self) -> dict[str, object]:
        return {
            "residual": self.residual,
            "residual_exact": None if self.residual_exact is None else str(self.residual_exact),
            "s": [float(v) for v in self.s],
            "rank": self.rank,
            "unique": self.unique,
            "tolerance": self.tolerance,
        }


@dataclass(frozen=True)
class IndexSetSearch:
    """Outcome of the complete search for S with W_down[:,S] W_up[S,:] = −A."""

    status: Literal["found", "none", "limit"]
    S: tuple[int, ...] | None
    method: str
    exact: bool
    relaxation: Relaxation
    detail: str

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "S": None if self.S is None else list(self.S),
            "method": self.method,
            "exact": self.exact,
            "relaxation": self.relaxation.to_json(),
            "detail": self.detail,
        }


# --------------------------------------------------------------------------------------------
# input handling


@dataclass(frozen=True)
class _Weights:
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


def _to_fraction(v: object) -> Fraction:
    if isinstance(v, Fraction):
        return v
    if isinstance(v, (int, np.integer)):
        return Fraction(int(v))
    if isinstance(v, (float, np.floating)):
        if not math.isfinite(float(v)):
            raise AbsorbError("weights contain NaN or Inf")
        return Fraction(float(v))
    raise AbsorbError(f"exact weights must be rationals, got {type(v).__name__}")


def _prepare(W_up: Any, W_down: Any, A: Any) -> _Weights:
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
        conv = [np.vectorize(_to_fraction, otypes=[object])(a) for a in arrays]
        A_e = conv[2] if A is not None else _exact_identity(d)
        return _Weights(conv[0], conv[1], A_e, True)
    try:
        flo = [np.asarray(a, dtype=np.float64) for a in arrays]
    except (TypeError, ValueError) as exc:
        raise AbsorbError(f"weights must be numeric: {exc}") from None
    if not all(np.isfinite(a).all() for a in flo):
        raise AbsorbError("weights contain NaN or Inf")
    A_f = flo[2] if A is not None else np.eye(d)
    return _Weights(flo[0], flo[1], A_f, False)


def _exact_identity(d: int) -> ObjArray:
    eye: ObjArray = np.full((d, d), Fraction(0), dtype=object)
    for i in range(d):
        eye[i, i] = Fraction(1)
    return eye


# --------------------------------------------------------------------------------------------
# exact linear algebra over ℚ


def _rref(M: list[list[Fraction]]) -> tuple[list[list[Fraction]], list[int]]:
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


def _exact_rank(A: ObjArray) -> int:
    return len(_rref([list(row) for row in A])[1])


@dataclass(frozen=True)
class _ExactSystem:
    """G s = −c over ℚ in reduced form: rows ``R`` (rank × n) with R s = ``rhs``."""

    R: list[list[Fraction]]
    rhs: list[Fraction]
    pivots: list[int]
    particular: list[Fraction]


def _exact_relaxation(w: _Weights) -> tuple[Relaxation, _ExactSystem]:
    Wu, Wd, A = w.W_up, w.W_down, w.A
    n = w.n
    G = (Wd.T @ Wd) * (Wu @ Wu.T)
    c = ((Wd.T @ A) * Wu).sum(axis=1)
    aug = [[*G[i], -c[i]] for i in range(n)]
    red, pivots = _rref(aug)
    if n in pivots:  # cannot happen: G s = −c is always consistent (normal equations)
        raise AssertionError("inconsistent normal equations")
    rank = len(pivots)
    R = [row[:n] for row in red[:rank]]
    rhs = [row[n] for row in red[:rank]]
    p = [Fraction(0)] * n
    for row_i, col in enumerate(pivots):
        p[col] = rhs[row_i]
    # any solution p of G p = −c gives pᵀGp = −cᵀp, hence r² = ‖A‖² + 2cᵀp + pᵀGp = ‖A‖² + cᵀp
    r2 = sum((v * v for v in A.ravel()), Fraction(0)) + sum(
        (ci * pi for ci, pi in zip(c, p, strict=True)), Fraction(0)
    )
    s_min = _exact_min_norm(R, pivots, p, n)
    rel = Relaxation(
        residual=float(r2),
        residual_exact=r2,
        s=np.array([float(v) for v in s_min]),
        rank=rank,
        unique=rank == n,
        tolerance=None,
    )
    return rel, _ExactSystem(R, rhs, pivots, p)


def _exact_min_norm(
    R: list[list[Fraction]], pivots: list[int], p: list[Fraction], n: int
) -> list[Fraction]:
    """The minimum-norm point p − N(NᵀN)⁻¹Nᵀp of the affine set p + null(R)."""
    pivot_set = set(pivots)
    free = [j for j in range(n) if j not in pivot_set]
    if not free:
        return p
    # null-space basis: one vector per free column f, e_f − Σ_rows R[row][f] e_pivot(row)
    N = []
    for f in free:
        v = [Fraction(0)] * n
        v[f] = Fraction(1)
        for row_i, col in enumerate(pivots):
            v[col] = -R[row_i][f]
        N.append(v)
    k = len(N)
    gram = [
        [sum((a * b for a, b in zip(N[i], N[j], strict=True)), Fraction(0)) for j in range(k)]
        for i in range(k)
    ]
    proj = [sum((a * b for a, b in zip(N[i], p, strict=True)), Fraction(0)) for i in range(k)]
    red, _ = _rref([[*gram[i], proj[i]] for i in range(k)])
    coef = [red[i][k] for i in range(k)]
    return [p[j] - sum((coef[i] * N[i][j] for i in range(k)), Fraction(0)) for j in range(n)]


# --------------------------------------------------------------------------------------------
# float linear algebra


@dataclass(frozen=True)
class _FloatSystem:
    """Pieces of G s = −c reused by the search (floats)."""

    G: FloatArray
    c: FloatArray
    rank: int


def _float_gram(w: _Weights) -> tuple[FloatArray, FloatArray]:
    Wu, Wd, A = w.W_up, w.W_down, w.A
    # numpy dispatches XᵀX to BLAS syrk; the two n×n Gram factors cost 2·n²·d flops.
    G: FloatArray = (Wd.T @ Wd) * (Wu @ Wu.T)
    c: FloatArray = np.einsum("ij,ij->i", Wd.T @ A, Wu)
    return G, c


def _float_relaxation(w: _Weights, tol: float) -> tuple[Relaxation, _FloatSystem]:
    G, c = _float_gram(w)
    n = w.n
    diag_max = float(np.max(np.diag(G)))
    if diag_max == 0.0:  # every unit has a_i = 0 or b_i = 0
        rank = 0
        s = np.zeros(n)
    else:
        rank_tol = n * np.finfo(np.float64).eps * diag_max
        L, piv, rank, _ = sla.lapack.dpstrf(G, lower=1, tol=rank_tol)
        rank = int(rank)
        if rank == n:
            # full rank: the pivoted Cholesky factor solves G s = −c (unique minimizer)
            piv0 = piv - 1
            Lr = np.tril(L)
            y = sla.solve_triangular(Lr, -c[piv0], lower=True, check_finite=False)
            z = sla.solve_triangular(Lr.T, y, lower=False, check_finite=False)
            s = np.empty(n)
            s[piv0] = z
        else:
            # rank-deficient: minimum-norm solution from the top `rank` eigenpairs of G
            lam, V = sla.eigh(G, check_finite=False)
            lam_r, V_r = lam[n - rank :], V[:, n - rank :]
            s = -V_r @ ((V_r.T @ c) / lam_r)
    # r² from the d×d residual itself (O(d²n)), not from ‖A‖² − cᵀG⁺c, which cancels badly
    # exactly when r² is small — the case that matters.
    R = w.W_down @ (s[:, None] * w.W_up) + w.A
    r2 = float(np.sum(R * R))
    a_max = float(np.max(np.abs(w.A)))
    rel = Relaxation(
        residual=r2,
        residual_exact=None,
        s=s,
        rank=rank,
        unique=rank == n,
        tolerance=(w.d * tol * a_max) ** 2,
    )
    return rel, _FloatSystem(G, c, rank)


def relaxation(W_up: Any, W_down: Any, A: Any = None, *, tol: float = 1e-9) -> Relaxation:
    """The real relaxation r² = min_s ‖W_down diag(s) W_up + A‖_F² (A = I when None).

    Gram form: G = (W_downᵀW_down) ⊙ (W_up W_upᵀ), c_i = a_iᵀ A b_i, G s = −c, never forming the
    d²×n matrix. Floats: rank-revealing pivoted Cholesky (full rank) or eigh (rank-deficient,
    minimum-norm s), r² measured on the d×d residual, ``tolerance`` = (d·tol·‖A‖_max)².
    Fraction object arrays: exact rational elimination and exact ``residual_exact``.
    """
    w = _prepare(W_up, W_down, A)
    if w.exact:
        return _exact_relaxation(w)[0]
    return _float_relaxation(w, tol)[0]


# --------------------------------------------------------------------------------------------
# verification


def _residual_matrix(w: _Weights, S: Sequence[int]) -> Any:
    idx = list(S)
    if not idx:
        return w.A.copy()
    return w.W_down[:, idx] @ w.W_up[idx, :] + w.A


def index_set_residual(W_up: Any, W_down: Any, S: Sequence[int], A: Any = None) -> float:
    """‖W_down[:,S] W_up[S,:] + A‖_max (A = I when None); exact for Fraction input."""
    w = _prepare(W_up, W_down, A)
    S = list(S)
    if any(not 0 <= i < w.n for i in S) or len(set(S)) != len(S):
        raise AbsorbError(f"index set must hold distinct indices in [0, {w.n})")
    R = _residual_matrix(w, S)
    return float(max(abs(v) for v in R.ravel())) if w.exact else float(np.max(np.abs(R)))


# --------------------------------------------------------------------------------------------
# subset sums


def _subset_sums(cols: NDArray[Any]) -> NDArray[Any]:
    """All 2^h sums of subsets of the rows of ``cols`` (h × r); row k of the result is the sum
    over the set bits of k. Built by doubling: O(2^h·r) work, no 2^h × h indicator matrix."""
    h, r = cols.shape
    sums = np.zeros((1 << h, r), dtype=cols.dtype)
    size = 1
    for j in range(h):
        np.add(sums[:size], cols[j], out=sums[size : 2 * size])
        size *= 2
    return sums


def _bits(k: int, offset: int) -> list[int]:
    return [offset + j for j in range(k.bit_length()) if (k >> j) & 1]


@dataclass(frozen=True)
class _Mitm:
    status: Literal["found", "none", "limit"]
    S: tuple[int, ...] | None
    detail: str


def _meet_in_the_middle(
    E: NDArray[Any],
    t: NDArray[Any],
    delta: float,
    accept: Any,
    max_enumeration: int,
) -> _Mitm:
    """Complete search for s ∈ {0,1}ⁿ with ‖E s − t‖₂ ≤ delta (delta = 0: exact equality).

    E is r × n (reduced, independent equations), t ∈ ℝʳ. Split the columns into halves L, R,
    enumerate all subset sums of each half, key them by a projection on a random unit vector
    w (‖u − v‖ ≤ δ ⇒ |w·u − w·v| ≤ δ, so no solution is missed), match keys by sorting and
    binary search, and verify every key match on the whole r-vector; ``accept(S)`` is the
    final check on the original weights.
    """
    r, n = E.shape
    h1 = n // 2
    h2 = n - h1
    cost = (1 << h1) + (1 << h2)
    if cost > max_enumeration:
        return _Mitm(
            "limit",
            None,
            f"meet-in-the-middle would enumerate {cost} subset sums "
            f"(n={n}), above max_enumeration={max_enumeration}",
        )
    exact = delta == 0.0 and E.dtype != np.float64
    rng = np.random.default_rng(_PROJECTION_SEED)
    if exact:
        w: NDArray[Any] = rng.integers(1, 1 << 16, size=r).astype(E.dtype)
    else:
        wf = rng.standard_normal(r)
        w = np.asarray(wf / np.linalg.norm(wf))
    left = _subset_sums(E[:, :h1].T)
    right = _subset_sums(E[:, h1:].T)
    k_left = left @ w
    k_right = t @ w - right @ w
    order = np.argsort(k_left, kind="stable")
    k_sorted = k_left[order]
    lo = np.searchsorted(k_sorted, k_right - delta if not exact else k_right, side="left")
    hi = np.searchsorted(k_sorted, k_right + delta if not exact else k_right, side="right")
    counts = (hi - lo).astype(np.int64)
    total = int(counts.sum())
    if total > max_enumeration:
        return _Mitm(
            "limit",
            None,
            f"{total} key collisions between the half-sums, above "
            f"max_enumeration={max_enumeration}",
        )
    matched = np.nonzero(counts)[0]
    # expand the (right index, left position) pairs in chunks of about _PAIR_CHUNK pairs
    start = 0
    while start < matched.size:
        csum = np.cumsum(counts[matched[start:]])
        stop = start + max(1, int(np.searchsorted(csum, _PAIR_CHUNK, side="right")))
        js = matched[start:stop]
        cj = counts[js]
        rep_j = np.repeat(js, cj)
        within = np.arange(int(cj.sum())) - np.repeat(np.cumsum(cj) - cj, cj)
        rep_i = order[np.repeat(lo[js], cj) + within]
        diff = left[rep_i] + right[rep_j] - t
        ok = np.all(diff == 0, axis=1) if exact else np.sum(diff * diff, axis=1) <= delta * delta
        for pos in np.nonzero(ok)[0]:
            S = tuple(_bits(int(rep_i[pos]), 0) + _bits(int(rep_j[pos]), h1))
            if accept(S):
                return _Mitm(
                    "found",
                    S,
                    f"meet-in-the-middle over 2^{h1} + 2^{h2} subset sums "
                    f"of {r} independent equations found |S| = {len(S)}",
                )
        start = stop
    return _Mitm(
        "none",
        None,
        f"meet-in-the-middle enumerated all 2^{h1} + 2^{h2} subset sums "
        f"of the {r} independent equations: no 0/1 solution",
    )


def _integer_rows(
    R: list[list[Fraction]], rhs: list[Fraction]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Scale each rational equation to integers; int64 when no subset sum or key can overflow."""
    rows, b = [], []
    for row, v in zip(R, rhs, strict=True):
        m = math.lcm(*(x.denominator for x in [*row, v]))
        rows.append([int(x * m) for x in row])
        b.append(int(v * m))
    # |key| ≤ Σ_j |w_j| · Σ_i |E_ji| with |w_j| < 2^16 (see _meet_in_the_middle)
    bound = (1 << 16) * sum(
        sum(abs(x) for x in row) + abs(v) for row, v in zip(rows, b, strict=True)
    )
    dtype: Any = np.int64 if bound < (1 << 62) else object
    return np.array(rows, dtype=dtype).reshape(len(rows), -1), np.array(b, dtype=dtype)


def _milp(E: FloatArray, t: FloatArray, delta: float) -> tuple[str, tuple[int, ...] | None]:
    """HiGHS on: s ∈ {0,1}ⁿ, t − δ ≤ E s ≤ t + δ (a box containing the δ-ball)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = E.shape[1]
    res = milp(
        c=np.zeros(n),
        constraints=LinearConstraint(E, t - delta, t + delta),
        integrality=np.ones(n),
        bounds=Bounds(0.0, 1.0),
        options={"time_limit": _MILP_TIME_LIMIT},
    )
    if res.status == 0 and res.x is not None:
        return "found", tuple(int(i) for i in np.nonzero(np.round(res.x) > 0.5)[0])
    if res.status == 2:
        return "infeasible", None
    return "limit", None


# --------------------------------------------------------------------------------------------
# the search


def find_index_set(
    W_up: Any,
    W_down: Any,
    A: Any = None,
    *,
    tol: float = 1e-9,
    max_enumeration: int = 2**26,
    method: Method = "auto",
) -> IndexSetSearch:
    """Decide whether some S ⊆ {0..n−1} has W_down[:,S] W_up[S,:] = −A (A = I when None).

    Complete, not a heuristic. In order: A = 0 (S = ∅); rank(A) > n (rank bound |S| ≥ rank A);
    relaxation r² > 0 (certificate); unique real solution (rank G = n: check it is 0/1);
    otherwise a complete search for 0/1 points of the affine solution set on rank G
    independent equations — meet-in-the-middle (default), or HiGHS ``milp`` (``method``, and
    the fallback when the enumeration would exceed ``max_enumeration``).

    Fraction input is decided exactly. Float input: S is accepted iff
    ‖W_down[:,S]W_up[S,:] + A‖_max ≤ τ = tol·‖A‖_max (re-verified on the weights), and "none"
    means no S meets that; the reduced search uses the implied Frobenius bound δ = d·τ.
    """
    w = _prepare(W_up, W_down, A)
    if tol <= 0 or not math.isfinite(tol):
        raise AbsorbError(f"tol must be positive, got {tol}")
    if max_enumeration < 1:
        raise AbsorbError(f"max_enumeration must be positive, got {max_enumeration}")
    return (
        _find_exact(w, max_enumeration, method)
        if w.exact
        else _find_float(w, tol, max_enumeration, method)
    )


_Verdict = tuple[Literal["found", "none", "limit"], tuple[int, ...] | None, str, str]


def _skip_verdict(w: _Weights, a_is_zero: bool, rank: Callable[[Any], int]) -> _Verdict | None:
    """The checks that need no relaxation: A = 0 (S = ∅ works) and rank A > n (no S can, since
    rank(W_down[:,S]W_up[S,:]) ≤ |S| ≤ n). ``rank`` is exact or numerical, like the weights."""
    if a_is_zero:
        return "found", (), "trivial", "the skip matrix is zero, so S = ∅ works"
    rank_a = rank(w.A)
    if rank_a > w.n:
        return ("none", None, "rank",
                f"rank(A) = {rank_a} > n = {w.n}, but rank(W_down[:,S]W_up[S,:]) ≤ |S| ≤ n")
    return None


def _find_exact(w: _Weights, max_enumeration: int, method: Method) -> IndexSetSearch:
    rel, sysm = _exact_relaxation(w)

    def out(
        status: Literal["found", "none", "limit"], S: tuple[int, ...] | None, how: str, detail: str
    ) -> IndexSetSearch:
        return IndexSetSearch(status, S, how, True, rel, detail)

    def accept(S: tuple[int, ...]) -> bool:
        return all(v == 0 for v in _residual_matrix(w, S).ravel())

    early = _skip_verdict(w, all(v == 0 for v in w.A.ravel()), _exact_rank)
    if early is not None:
        return out(*early)
    if rel.residual_exact != 0:
        return out(
            "none",
            None,
            "relaxation",
            f"exact relaxation residual r² = "
            f"{rel.residual_exact} > 0: not even a real s solves the d² equations",
        )
    if rel.unique:
        p = sysm.particular
        if all(v in (0, 1) for v in p):
            S = tuple(i for i, v in enumerate(p) if v == 1)
            return out(
                "found",
                S,
                "unique-solution",
                f"the real solution is unique and 0/1: |S| = {len(S)}",
            )
        return out("none", None, "unique-solution", "the real solution is unique and not 0/1")
    E, t = _integer_rows(sysm.R, sysm.rhs)
    return _search_reduced(w, rel, E, t, 0.0, accept, max_enumeration, method, True)


def _find_float(w: _Weights, tol: float, max_enumeration: int, method: Method) -> IndexSetSearch:
    rel, sysm = _float_relaxation(w, tol)
    a_max = float(np.max(np.abs(w.A)))
    tau = tol * a_max
    delta = w.d * tau

    def out(
        status: Literal["found", "none", "limit"], S: tuple[int, ...] | None, how: str, detail: str
    ) -> IndexSetSearch:
        return IndexSetSearch(status, S, how, False, rel, detail)

    def accept(S: tuple[int, ...]) -> bool:
        return float(np.max(np.abs(_residual_matrix(w, S)))) <= tau

    early = _skip_verdict(w, a_max == 0.0, lambda A: int(np.linalg.matrix_rank(A)))
    if early is not None:
        return out(*early)
    if not rel.is_zero:
        return out(
            "none",
            None,
            "relaxation",
            f"relaxation residual r² = {rel.residual:.6g} "
            f"> tolerance {rel.tolerance:.3g}: no real s, hence no S, within tol",
        )
    # orthonormal reduced coordinates: with G = V Λ Vᵀ and K = U Λ^½ Vᵀ, the map Uᵀ is an
    # isometry on span(K), Uᵀk_i = column i of Λ_r^½ V_rᵀ and Uᵀvec(A) = Λ_r^{-½} V_rᵀ c.
    lam, V = sla.eigh(sysm.G, check_finite=False)
    r = sysm.rank
    lam_r, V_r = np.maximum(lam[w.n - r :], 0.0), V[:, w.n - r :]
    root = np.sqrt(lam_r)
    E = root[:, None] * V_r.T
    t = -(V_r.T @ sysm.c) / root
    if rel.unique:
        # any accepted s has ‖K(s − p)‖ ≤ ‖Ks + a‖ + ‖Kp + a‖ ≤ 2δ, so ‖s − p‖ ≤ 2δ/σ_min(K)
        radius = 2.0 * delta / float(root[0])
        if radius < 0.5:
            s01 = np.round(rel.s)
            if np.all(np.abs(rel.s - s01) <= radius) and np.all((s01 == 0) | (s01 == 1)):
                S = tuple(int(i) for i in np.nonzero(s01)[0])
                if accept(S):
                    return out(
                        "found",
                        S,
                        "unique-solution",
                        f"the real solution is unique "
                        f"and rounds to a verified 0/1 point: |S| = {len(S)}",
                    )
            return out(
                "none",
                None,
                "unique-solution",
                f"the real solution is unique and no "
                f"0/1 point lies within radius {radius:.3g} of it",
            )
    return _search_reduced(w, rel, E, t, delta, accept, max_enumeration, method, False)


def _search_reduced(
    w: _Weights,
    rel: Relaxation,
    E: NDArray[Any],
    t: NDArray[Any],
    delta: float,
    accept: Any,
    max_enumeration: int,
    method: Method,
    exact: bool,
) -> IndexSetSearch:
    r = E.shape[0]
    if method in ("auto", "meet-in-the-middle"):
        res = _meet_in_the_middle(E, t, delta, accept, max_enumeration)
        if res.status != "limit" or method == "meet-in-the-middle":
            return IndexSetSearch(res.status, res.S, "meet-in-the-middle", exact, rel, res.detail)
        prefix = res.detail + "; "
    else:
        prefix = ""
    Ef = np.asarray(E, dtype=np.float64)
    tf = np.asarray(t, dtype=np.float64)
    # exact integer rows are met exactly by an index set; HiGHS needs a little slack for its
    # own floating-point feasibility tolerance (found points are re-verified exactly).
    slack = delta if not exact else 1e-9 * max(1.0, float(np.max(np.abs(Ef))))
    status, S = _milp(Ef, tf, slack)
    if status == "found" and S is not None and accept(S):
        return IndexSetSearch(
            "found",
            S,
            "milp",
            exact,
            rel,
            prefix + f"HiGHS milp found a verified index set, |S| = {len(S)}",
        )
    if status == "infeasible" and not exact:
        return IndexSetSearch(
            "none",
            None,
            "milp",
            False,
            rel,
            prefix + f"HiGHS milp proved "
            f"the binary program on {r} equations infeasible (floating point)",
        )
    why = {
        "infeasible": "HiGHS reports the binary program infeasible, which is not an exact "
        "proof for rational input",
        "found": "HiGHS returned a point that failed verification on the weights",
        "limit": f"HiGHS stopped at its {_MILP_TIME_LIMIT:.0f} s limit",
    }[status]
    return IndexSetSearch("limit", None, "milp", exact, rel, prefix + why)


def brute_force_index_set(
    W_up: Any, W_down: Any, A: Any = None, *, tol: float = 1e-9
) -> tuple[int, ...] | None:
    """Reference: try all 2^n subsets on the explicit d²-vectors vec(a_i b_iᵀ) (small n, d).

    Same acceptance rule as `find_index_set` (exact equality for Fraction input, max-norm
    ≤ tol·‖A‖_max for floats). Returns the S with the smallest bitmask, or None.
    """
    w = _prepare(W_up, W_down, A)
    if w.n > 24:
        raise AbsorbError(f"brute force over 2^{w.n} subsets refused (n > 24)")
    cols = (w.W_down.T[:, :, None] * w.W_up[:, None, :]).reshape(w.n, w.d * w.d)
    res = _subset_sums(cols) + w.A.reshape(-1)
    if w.exact:
        ok = np.all(res == 0, axis=1)
    else:
        ok = np.max(np.abs(res), axis=1) <= tol * float(np.max(np.abs(w.A)))
    hits = np.nonzero(ok)[0]
    return None if hits.size == 0 else tuple(_bits(int(hits[0]), 0))
