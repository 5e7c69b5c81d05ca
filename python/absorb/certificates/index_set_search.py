"""The exact index-set search, planned by its predicted cost (THEORY.md, relaxation_certificate).

An index set S is a 0/1 vector s with Σ_i s_i a_i b_iᵀ = −A (d² linear equations). The search
decides it completely, in order of cost:

1. A = 0 (S = ∅) and the rank bound rank(A) ≤ |S| ≤ n;
2. the relaxation (:mod:`.real_relaxation`): r² > 0 proves that no S exists, and its residual
   matrix is a dual certificate, re-checked independently (:mod:`.recheck`);
3. an exact set first — the stored floats are dyadic rationals, so "exact" is decidable: a
   unique real solution rounded to 0/1 and checked exactly (:func:`absorb.exact.index_set_holds`),
   then the exact meet-in-the-middle (:func:`.enumeration.exact_meet_in_the_middle`:
   fingerprints modulo three primes in int64, every match confirmed exactly) when it is
   predicted cheaper than the float search (:func:`plan_exact_search`). A set within a float
   tolerance therefore never hides an exact one;
4. when r² = 0 (floats: r² within the tolerance), the relaxation residual where r² > 0 and the
   separation LP (:mod:`.dual`): a certificate exists exactly when −A lies outside the zonotope
   {Σ s_i a_i b_iᵀ : s ∈ [0,1]ⁿ}. It settles the stored weights; for floats it also rules out
   every S within the tolerance when its margin exceeds τ‖Y‖₁;
5. only when −A is inside the zonotope (or the certificate's margin is within the float
   tolerance): a complete search — exact input: HiGHS for a quarter of the exact search's
   predicted time, then the exact meet-in-the-middle; float input: meet-in-the-middle on
   rank G independent equations within the tolerance, or HiGHS first (for a quarter of that
   search's predicted time) when it is expensive (:func:`plan_search`); a set found only within the
   tolerance sends the exact search after an exact one where it can run. When nothing can
   run, status ``limit`` (with the certificate of step 4 where there is one).

Inputs are float arrays (decided with a stated tolerance; values outside the float-safe range
are rebalanced by reciprocal powers of two where that suffices, else decided exactly,
:func:`absorb.certificates.prepared.prepare`) or numpy object arrays
of `fractions.Fraction` (decided exactly). ``IndexSetSearch.exact`` says that the status holds
exactly for the stored values: ``found`` with an S meeting the condition exactly, ``none``
with no S doing so. No MemoryError escapes: a search that would not fit ends with status
``limit`` and the memory it would need.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from absorb.blocks import Array as FloatArray
from absorb.budget import available_memory, human_bytes, human_seconds
from absorb.certificates.dual import (
    DualCertificate,
    certify,
    lp_certificate,
    residual_candidates,
)
from absorb.certificates.enumeration import (
    MILP_TIME_LIMIT,
    bits,
    exact_meet_in_the_middle,
    integer_rows,
    meet_in_the_middle,
    milp_binary,
    subset_sums,
)
from absorb.certificates.prepared import Weights, prepare
from absorb.certificates.real_relaxation import (
    Relaxation,
    eigenpairs,
    exact_relaxation,
    exact_relaxation_refusal,
    float_relaxation,
)
from absorb.certificates.recheck import check_index_set
from absorb.errors import AbsorbError
from absorb.exact import rank, safe_float

__all__ = [
    "IndexSetSearch",
    "SearchPlan",
    "brute_force_index_set",
    "find_index_set",
    "index_set_residual",
    "plan_search",
]

#: The seed of the exact search's fingerprint primes when the caller gives none.
DEFAULT_SEED = 20260425

Method = Literal["auto", "meet-in-the-middle", "milp"]
Engine = Literal["meet-in-the-middle", "milp", "exact-meet-in-the-middle"]
Status = Literal["found", "none", "limit"]

#: Meet-in-the-middle is preferred to HiGHS only below these predicted costs ...
MITM_PREFERRED_BYTES = 1 << 30
MITM_PREFERRED_SECONDS = 4.0
#: ... and is never started above this share of the available memory or this time.
MITM_MEMORY_SHARE = 0.5
MITM_MAX_SECONDS = 120.0
#: HiGHS gets the reduced system as a dense matrix; beyond this many entries it is not tried.
MILP_MAX_ENTRIES = 1 << 22
# Measured throughput of the float enumeration: seconds per (subset sum × coordinate), for
# machine integers/floats and for Python integers (object arrays, exact input with huge
# entries), and per subset sum and binary-search step (the sort and the unsorted searches
# dominate from n ≈ 40 on: benchmarks/search_bench.py, section "exact search").
_SECONDS_PER_ENTRY = {"int64": 4e-9, "object": 1.5e-7}
_SECONDS_PER_SEARCH_STEP = 1e-8
_BYTES_PER_ENTRY = {"int64": 8, "object": 48}
# The exact (fingerprint) meet-in-the-middle: seconds per subset sum and binary-search step,
# and bytes per left subset sum (its key, the sorted copy and one doubling temporary), plus the
# right half's blocks of 2^20 sums (three residues, the key, its sorted copy, temporaries).
_EXACT_SECONDS_PER_STEP = 7e-9
_EXACT_BYTES_PER_LEFT_SUM = 24
_EXACT_BLOCK_BYTES = 8 * 8 << 20
# LAPACK's symmetric eigendecomposition: about 9n³ flops at this rate (79 s at n = 4096).
_EIGH_SECONDS_PER_FLOP = 1.3e-10


# --------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class SearchPlan:
    """Predicted cost of meet-in-the-middle on n unknowns and r equations, and the choice."""

    n: int
    equations: int
    entries: str
    bytes: float
    seconds: float
    method: Engine
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"n": self.n, "equations": self.equations, "entries": self.entries,
                "mitm_bytes": self.bytes, "mitm_seconds": self.seconds,
                "method": self.method, "reason": self.reason}


@dataclass(frozen=True)
class IndexSetSearch:
    """Outcome of the complete search for S with W_down[:,S] W_up[S,:] = −A.

    ``exact``: the status holds exactly on the stored values — ``found``: S meets the condition
    exactly (not only within the tolerance); ``none``: no S meets it exactly (for float input,
    also none within the tolerance). False: the status is relative to the float tolerance.
    ``relaxation`` is None when the exact relaxation was not run, its predicted time beyond
    its limit (:func:`.real_relaxation.exact_relaxation_refusal`): then the status is
    ``limit`` with that reason, or comes from a check that needs no relaxation.
    """

    status: Status
    S: tuple[int, ...] | None
    method: str
    exact: bool
    relaxation: Relaxation | None
    detail: str
    dual: DualCertificate | None = None
    plan: SearchPlan | None = None
    notes: tuple[str, ...] = field(default=())
    seed: int | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "S": None if self.S is None else list(self.S),
            "method": self.method,
            "exact": self.exact,
            "relaxation": None if self.relaxation is None else self.relaxation.to_json(),
            "detail": self.detail,
            "dual": None if self.dual is None else self.dual.to_json(),
            "plan": None if self.plan is None else self.plan.to_json(),
            "notes": list(self.notes),
            "seed": self.seed,
        }


# --------------------------------------------------------------------------------------------
# checks of a candidate S


def _residual_matrix(w: Weights, S: Sequence[int]) -> Any:
    idx = list(S)
    if not idx:
        return w.A.copy()
    return w.W_down[:, idx] @ w.W_up[idx, :] + w.A


def index_set_residual(W_up: Any, W_down: Any, S: Sequence[int], A: Any = None) -> float:
    """‖W_down[:,S] W_up[S,:] + A‖_max (A = I when None); exact for Fraction input."""
    w = prepare(W_up, W_down, A)
    S = list(S)
    if any(not 0 <= i < w.n for i in S) or len(set(S)) != len(S):
        raise AbsorbError(f"index set must hold distinct indices in [0, {w.n})")
    R = _residual_matrix(w, S)
    return safe_float(max(abs(v) for v in R.ravel())) if w.exact else float(np.max(np.abs(R)))


# --------------------------------------------------------------------------------------------
# the cost model


def plan_search(n: int, equations: int, *, entries: Literal["int64", "object"] = "int64",
                method: Method = "auto", max_enumeration: int | None = None) -> SearchPlan:
    """Predict meet-in-the-middle's memory and time and choose it or HiGHS ``milp``.

    Meet-in-the-middle stores the 2^⌊n/2⌋ + 2^⌈n/2⌉ subset sums of both halves, each an
    r-vector (r = ``equations``), plus keys, a sort order and match counts (5 words per sum);
    its time is that many entries at the measured rate. It is chosen ("auto") only when it is
    cheap (≤ MITM_PREFERRED_BYTES and ≤ MITM_PREFERRED_SECONDS), since HiGHS typically decides
    such binary programs in milliseconds (d = 4, n = 48: 2^24 sums, about 5 GB and a minute,
    against 0.01 s).
    """
    sums = _enumerated_sums(n)
    nbytes = sums * (equations * _BYTES_PER_ENTRY[entries] + 5 * 8)
    seconds = sums * ((equations + 20) * _SECONDS_PER_ENTRY[entries]
                      + _halves(n)[1] * _SECONDS_PER_SEARCH_STEP)
    cost = f"{human_bytes(nbytes)} and about {human_seconds(seconds)}"
    too_many = max_enumeration is not None and sums > max_enumeration
    if method == "milp":
        return SearchPlan(n, equations, entries, nbytes, seconds, "milp", "requested")
    if method == "meet-in-the-middle":
        return SearchPlan(n, equations, entries, nbytes, seconds, "meet-in-the-middle",
                          "requested")
    if too_many:
        return SearchPlan(n, equations, entries, nbytes, seconds, "milp",
                          f"meet-in-the-middle would enumerate {sums:.3g} subset sums "
                          f"(n={n}), above max_enumeration={max_enumeration}")
    if nbytes <= MITM_PREFERRED_BYTES and seconds <= MITM_PREFERRED_SECONDS:
        return SearchPlan(n, equations, entries, nbytes, seconds, "meet-in-the-middle",
                          f"meet-in-the-middle predicted to need {cost}")
    return SearchPlan(n, equations, entries, nbytes, seconds, "milp",
                      f"meet-in-the-middle would need {cost}; integer programming first")


def plan_exact_search(n: int, d: int) -> SearchPlan:
    """Predicted cost of the exact meet-in-the-middle
    (:func:`.enumeration.exact_meet_in_the_middle`) on n units of a d×d block: 2^⌊n/2⌋ +
    2^⌈n/2⌉ subset sums of three fingerprints, a sort
    of the left keys and a binary search of each right key (≈ ⌈n/2⌉ steps each); memory for
    the left keys and one block of right keys. Calibrated in benchmarks/search_bench.py."""
    h1, h2 = _halves(n)
    sums = 2.0**h1 + 2.0**h2
    seconds = sums * (h2 + 4) * _EXACT_SECONDS_PER_STEP
    nbytes = 2.0**h1 * _EXACT_BYTES_PER_LEFT_SUM + min(2.0**h2, 2.0**20) / 2.0**20 * (
        _EXACT_BLOCK_BYTES)
    return SearchPlan(n, d * d, "fingerprint", nbytes, seconds, "exact-meet-in-the-middle",
                      f"exact meet-in-the-middle predicted to need {human_bytes(nbytes)} and "
                      f"about {human_seconds(seconds)}")


def _halves(n: int) -> tuple[int, int]:
    """⌊n/2⌋ and ⌈n/2⌉, the halves meet-in-the-middle enumerates (2^h1 + 2^h2 subset sums),
    capped at 1000: beyond 2^1000 sums nothing changes a decision (and floats overflow)."""
    return min(n // 2, 1000), min(n - n // 2, 1000)


def _enumerated_sums(n: int) -> float:
    """2^⌊n/2⌋ + 2^⌈n/2⌉ (exponents capped: :func:`_halves`)."""
    h1, h2 = _halves(n)
    return 2.0**h1 + 2.0**h2


def mitm_affordable(plan: SearchPlan, memory: int | None = None) -> str | None:
    """None when meet-in-the-middle may be started, else why not (with its predicted need)."""
    limit = MITM_MEMORY_SHARE * (available_memory() if memory is None else memory)
    if plan.bytes > limit:
        return (f"meet-in-the-middle would need {human_bytes(plan.bytes)} of memory, "
                f"{human_bytes(limit)} may be used")
    if plan.seconds > MITM_MAX_SECONDS:
        return (f"meet-in-the-middle would need about {human_seconds(plan.seconds)}, "
                f"above the limit of {human_seconds(MITM_MAX_SECONDS)}")
    return None


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
    dual: bool = True,
    seed: int | None = None,
) -> IndexSetSearch:
    """Decide whether some S ⊆ {0..n−1} has W_down[:,S] W_up[S,:] = −A (A = I when None).

    Complete, not a heuristic; see the module docstring for the order of the steps. ``dual``
    runs the certificate steps (the relaxation residual as Y, then the separation LP).

    Fraction input is decided exactly. Float input: an S meeting the condition exactly on the
    stored values is looked for first and preferred (``exact`` then True); otherwise S is
    accepted iff ‖W_down[:,S]W_up[S,:] + A‖_max ≤ τ = tol·‖A‖_max (re-checked on the
    weights), and "none" means no S meets that; the reduced search uses the implied
    Frobenius bound δ = d·τ. A dual certificate is exact for the stored numbers either way;
    it also rules out every S within tolerance when its margin exceeds τ·‖Y‖₁ (since
    |⟨E, Y⟩| ≤ ‖E‖_max‖Y‖₁).

    ``seed`` draws the exact search's fingerprint primes (``IndexSetSearch.seed`` reports it,
    so a run can be replayed; the verdict draws it from the command's ``--seed``); None is
    DEFAULT_SEED, so that the same call gives the same output. No seed makes the search
    slow: primes an input was built for cost at most MAX_CONFIRMATIONS confirmations before
    the exact keys take over (:func:`.enumeration.exact_meet_in_the_middle`).
    """
    w = prepare(W_up, W_down, A)
    run_seed = DEFAULT_SEED if seed is None else seed
    if tol <= 0 or not math.isfinite(tol):
        raise AbsorbError(f"tol must be positive, got {tol}")
    if max_enumeration < 1:
        raise AbsorbError(f"max_enumeration must be positive, got {max_enumeration}")
    try:
        if w.exact:
            return _find_exact(w, max_enumeration, method, dual, run_seed)
        return _find_float(w, tol, max_enumeration, method, dual, run_seed)
    except MemoryError:
        raise AbsorbError(f"the index-set search ran out of memory (d={w.d}, n={w.n}); "
                          "see plan_search for the predicted need") from None


_Verdict = tuple[Status, tuple[int, ...] | None, str, str]


#: Largest d whose rank is computed by exact elimination for the rank shortcut (Bareiss on
#: scaled integers: about d³/3 big-integer operations).
EXACT_RANK_MAX_D = 64


def _exact_rank(A: Any) -> int | None:
    """rank A exactly on the stored values, or None when not computed: a diagonal A (the
    identity skip) by its nonzero diagonal, otherwise elimination up to EXACT_RANK_MAX_D."""
    d = A.shape[0]
    diag = np.array([A[i, i] for i in range(d)], dtype=A.dtype)
    off = A.copy()
    for i in range(d):
        off[i, i] = 0
    if not np.any(off != 0):
        return int(np.count_nonzero(diag != 0))
    return rank(A) if d <= EXACT_RANK_MAX_D else None


def _skip_verdict(w: Weights, a_is_zero: bool) -> _Verdict | None:
    """The checks that need no relaxation: A = 0 (S = ∅ works) and rank A > n (no S can, since
    rank(W_down[:,S]W_up[S,:]) ≤ |S| ≤ n) — the rank decided exactly on the stored values, and
    skipped where it is not computed (the relaxation then decides: rank A > n gives r² > 0)."""
    if a_is_zero:
        return "found", (), "trivial", "the skip matrix is zero, so S = ∅ works"
    if w.d <= w.n:  # rank A ≤ d ≤ n: nothing to decide
        return None
    rank_a = _exact_rank(w.A)
    if rank_a is not None and rank_a > w.n:
        return ("none", None, "rank",
                f"rank(A) = {rank_a} > n = {w.n} (exact), but rank(W_down[:,S]W_up[S,:]) "
                "≤ |S| ≤ n")
    return None


def _lp_certificate(w: Weights, run: bool) -> tuple[DualCertificate | None, str]:
    """The separation LP's certificate when ``run``, and a note on the outcome."""
    return lp_certificate(w) if run else (None, "dual certificate not attempted")


def _find_exact(w: Weights, max_enumeration: int, method: Method, dual: bool,
                seed: int) -> IndexSetSearch:
    early = _skip_verdict(w, all(v == 0 for v in w.A.ravel()))
    refusal = exact_relaxation_refusal(w)
    if refusal is not None:
        # every later step needs the relaxation's exact system: none of them runs
        verdict = early or ("limit", None, "exact-relaxation", refusal)
        return IndexSetSearch(*verdict[:3], True, None, verdict[3], seed=seed)
    rel, sysm = exact_relaxation(w)
    notes: list[str] = []

    def out(status: Status, S: tuple[int, ...] | None, how: str, detail: str,
            cert: DualCertificate | None = None, plan: SearchPlan | None = None
            ) -> IndexSetSearch:
        return IndexSetSearch(status, S, how, True, rel, detail, cert, plan, tuple(notes),
                              seed)

    if early is not None:
        return out(*early)
    if rel.residual_exact != 0:
        cert = certify(w, residual_candidates(rel.R)) if dual else None
        return out("none", None, "relaxation",
                   f"exact relaxation residual r² > 0 (≈ {rel.residual:.6g}): "
                   "not even a real s solves the d² equations", cert)
    if rel.unique:
        p = sysm.particular
        if all(v in (0, 1) for v in p):
            S = tuple(i for i, v in enumerate(p) if v == 1)
            return out("found", S, "unique-solution",
                       f"the real solution is unique and 0/1: |S| = {len(S)}")
        return out("none", None, "unique-solution", "the real solution is unique and not 0/1")
    xplan = plan_exact_search(w.n, w.d)
    if method != "milp" and _exact_is_cheap(xplan, w, max_enumeration):
        # the complete exact search is cheaper than any program: it decides, no LP first
        return out(*_run_exact(w, xplan, max_enumeration, seed), plan=xplan)
    cert, note = _lp_certificate(w, dual)
    notes.append(note)
    if cert is not None:
        return out("none", None, "dual-lp",
                   "a separating Y proves -A outside the zonotope: no index set", cert)
    if method != "meet-in-the-middle":
        # HiGHS first, for a quarter of the exact search's predicted time (when that can
        # run): it often finds a planted S in milliseconds, but can stall on generic blocks
        E, t = integer_rows(sysm.R, sysm.rhs)
        budget = (MILP_TIME_LIMIT if method == "milp" or mitm_affordable(xplan) is not None
                  else _milp_budget(xplan))
        status, found, detail = _milp_search(E, t, 0.0, lambda S: _holds(w, S), True,
                                             time_limit=budget)
        if status != "limit" or method == "milp":
            return out(status, found, "milp", detail, plan=xplan)
        notes.append(detail)
    return out(*_run_exact(w, xplan, max_enumeration if method == "meet-in-the-middle"
                           else 1 << 62, seed), plan=xplan)


def _milp_budget(plan: SearchPlan) -> float:
    """HiGHS's time before a meet-in-the-middle that can run after it: a quarter of that
    search's predicted time (at least 0.5 s, at most MILP_TIME_LIMIT). HiGHS finds planted
    sets in milliseconds but stalls on generic blocks, so the waste is bounded by 25 %."""
    return min(MILP_TIME_LIMIT, max(0.5, plan.seconds / 4.0))


def _holds(w: Weights, S: Sequence[int]) -> bool:
    """The index-set condition, exactly, on the stored values (floats as dyadics)."""
    return check_index_set(w.W_up, w.W_down, S, w.A)


def _exact_is_cheap(plan: SearchPlan, w: Weights, max_enumeration: int,
                    below: float = 0.0) -> bool:
    """Whether the exact search may run before the float and LP steps: predicted within the
    preferred time (or below ``below``, the float search's predicted time), within the
    enumeration cap and the memory share."""
    return (plan.seconds <= max(MITM_PREFERRED_SECONDS, below)
            and _enumerated_sums(w.n) <= max_enumeration
            and mitm_affordable(plan) is None)


def _run_exact(w: Weights, plan: SearchPlan, max_enumeration: int, seed: int) -> _Verdict:
    """The exact meet-in-the-middle where affordable (its ``none`` is a proof), else limit."""
    blocked = mitm_affordable(plan)
    if blocked is not None:
        return "limit", None, "exact-meet-in-the-middle", blocked.replace(
            "meet-in-the-middle", "exact meet-in-the-middle", 1)
    try:
        res = exact_meet_in_the_middle(w.W_up, w.W_down, w.A, max_enumeration, seed)
    except MemoryError:
        return ("limit", None, "exact-meet-in-the-middle",
                f"exact meet-in-the-middle ran out of memory (predicted "
                f"{human_bytes(plan.bytes)})")
    return res.status, res.S, "exact-meet-in-the-middle", res.detail


def _beyond_tolerance(cert: DualCertificate, tau: float) -> bool:
    """Whether the certificate also rules out every S with ‖W_down[:,S]W_up[S,:] + A‖_max ≤ τ:
    such an S has |⟨E, Y⟩| ≤ τ‖Y‖₁, so a margin above τ‖Y‖₁ excludes it. ‖Y‖₁ is a float sum
    of m = d² terms, at most γ_m below the true one; the factor 1 + 4mu covers that and the
    product's rounding (the margin is exact, or a proven lower bound)."""
    Y = np.asarray(cert.Y, dtype=np.float64)
    y_l1 = float(np.sum(np.abs(Y))) * (1.0 + 4.0 * Y.size * 2.0**-53)
    return safe_float(cert.check.margin) > tau * y_l1


def _find_float(w: Weights, tol: float, max_enumeration: int, method: Method,
                dual: bool, seed: int) -> IndexSetSearch:
    rel, system = float_relaxation(w, tol)
    a_max = float(np.max(np.abs(w.A)))
    tau = tol * a_max
    delta = w.d * tau
    notes: list[str] = []
    proved_none = [False]  # set when the exact search proved that no S holds exactly

    def out(status: Status, S: tuple[int, ...] | None, how: str, detail: str,
            cert: DualCertificate | None = None, plan: SearchPlan | None = None,
            exact: bool = False) -> IndexSetSearch:
        exact = exact or (status == "none" and proved_none[0])
        return IndexSetSearch(status, S, how, exact, rel, detail, cert, plan, tuple(notes),
                              seed)

    def accept(S: tuple[int, ...]) -> bool:
        return float(np.max(np.abs(_residual_matrix(w, S)))) <= tau

    early = _skip_verdict(w, a_max == 0.0)
    if early is not None:
        return out(*early, exact=True)
    if not rel.is_zero:
        # decided without the reduced coordinates: G (and its eigenvectors) freed before the
        # certificate check, whose peak the memory prediction adds to the relaxation's
        del system
        cert = certify(w, residual_candidates(rel.R)) if dual else None
        if dual and cert is None:
            notes.append("no rounding of the relaxation residual passed the exact check")
        return out("none", None, "relaxation",
                   f"relaxation residual r² = {rel.residual:.6g} > tolerance "
                   f"{rel.tolerance:.3g}: no real s, hence no S, within tol", cert)
    # The stored values are exact dyadic rationals: an exact S is looked for first, so that a set
    # within the tolerance never hides an exact one — round(s) of a unique real solution, then
    # the exact meet-in-the-middle when it is cheap.
    S01 = _rounded_point(rel.s) if rel.unique else None
    if S01 is not None and _holds(w, S01):
        return out("found", S01, "unique-solution", "the real solution is unique and rounds "
                   f"to a 0/1 point meeting the condition exactly: |S| = {len(S01)}", exact=True)
    if S01 is not None and accept(S01):
        return out("found", S01, "unique-solution", "the real solution is unique and rounds "
                   f"to a 0/1 point meeting the condition within the tolerance: |S| = "
                   f"{len(S01)}")
    xplan = plan_exact_search(w.n, w.d)
    exact_none = False
    float_plan = plan_search(w.n, rel.rank, max_enumeration=max_enumeration)
    if method == "auto" and _exact_is_cheap(xplan, w, max_enumeration,
                                            below=float_plan.seconds):
        xs, xS, xhow, xdetail = _run_exact(w, xplan, max_enumeration, seed)
        if xs == "found":
            return out(xs, xS, xhow, xdetail, plan=xplan, exact=True)
        exact_none = proved_none[0] = xs == "none"
        notes.append(xdetail)
    # r² within the tolerance: an S meeting the condition up to τ is not excluded by r alone.
    # A certificate still settles the stored weights exactly (the residual when r² > 0, else
    # the separation LP), and rules out every S within τ when its margin exceeds τ·‖Y‖₁.
    cert = certify(w, residual_candidates(rel.R)) if dual and rel.residual > 0 else None
    how = "relaxation"
    if cert is None or not _beyond_tolerance(cert, tau):
        lp_cert, note = _lp_certificate(w, dual)
        notes.append(note)
        if lp_cert is not None and (cert is None or _beyond_tolerance(lp_cert, tau)):
            cert, how = lp_cert, "dual-lp"
    if cert is not None:
        if _beyond_tolerance(cert, tau):
            return out("none", None, how,
                       "a dual certificate proves -A outside the zonotope, by more than any S "
                       "within tolerance could reach: no index set", cert)
        notes.append("the certificate proves that the stored weights admit no exact index "
                     "set; its margin is within the tolerance, so an S meeting the condition "
                     "up to the tolerance is searched for")
    plan = plan_search(w.n, rel.rank, method=method, max_enumeration=max_enumeration)
    blocked = mitm_affordable(plan)
    # the unique-solution shortcut needs radius 2δ/σ_min(K) < 1/2, and σ_min(K)² ≤ min_i G_ii
    gdiag = np.sum(w.W_down * w.W_down, axis=0) * np.sum(w.W_up * w.W_up, axis=1)
    shortcut = rel.unique and 4.0 * delta < float(np.sqrt(np.min(gdiag)))
    if w.n * rel.rank > MILP_MAX_ENTRIES and blocked is not None and not shortcut:
        # neither engine can run: stop before the n×n eigendecomposition
        return out("limit", None, "plan", f"{plan.reason}; {blocked}; and the binary program "
                   f"({rel.rank}×{w.n}) is above {MILP_MAX_ENTRIES} entries", cert, plan,
                   exact=False)
    eig_seconds = 9.0 * float(w.n) ** 3 * _EIGH_SECONDS_PER_FLOP
    eig_bytes = 3.0 * 8.0 * float(w.n) ** 2  # G, its eigenvectors, LAPACK's workspace
    eig_limit = MITM_MEMORY_SHARE * available_memory()
    if system.eig is None and (eig_seconds > MITM_MAX_SECONDS or eig_bytes > eig_limit):
        # the reduced coordinates need an n×n eigendecomposition (79 s at n = 4096): bounded,
        # unless the relaxation has already paid for it
        return out("limit", None, "plan", f"the reduced search needs an n×n eigendecomposition "
                   f"(n = {w.n}), predicted {human_seconds(eig_seconds)} and "
                   f"{human_bytes(eig_bytes)}, above the limits of "
                   f"{human_seconds(MITM_MAX_SECONDS)} and {human_bytes(eig_limit)}", cert,
                   plan)
    # orthonormal reduced coordinates: with G = V Λ Vᵀ and K = U Λ^½ Vᵀ, the map Uᵀ is an
    # isometry on span(K), Uᵀk_i = column i of Λ_r^½ V_rᵀ and Uᵀvec(A) = Λ_r^{-½} V_rᵀ c.
    lam, V = system.eig if system.eig is not None else eigenpairs(system.G)
    c = system.c
    r = rel.rank
    lam_r, V_r = np.maximum(lam[w.n - r :], 0.0), V[:, w.n - r :]
    root = np.sqrt(lam_r)
    E = root[:, None] * V_r.T
    t = -(V_r.T @ c) / root
    if rel.unique:
        # any accepted s has ‖K(s − p)‖ ≤ ‖Ks + a‖ + ‖Kp + a‖ ≤ 2δ, so ‖s − p‖ ≤ 2δ/σ_min(K)
        radius = 2.0 * delta / float(root[0])
        if radius < 0.5:
            s01 = np.round(rel.s)
            if np.all(np.abs(rel.s - s01) <= radius) and np.all((s01 == 0) | (s01 == 1)):
                S01 = tuple(int(i) for i in np.nonzero(s01)[0])
                if accept(S01):
                    return out("found", S01, "unique-solution",
                               "the real solution is unique and rounds to a verified 0/1 "
                               f"point: |S| = {len(S01)}", cert)
            # radius < 1/2: round(s) is the only 0/1 point that could lie within it
            return out("none", None, "unique-solution",
                       "the real solution is unique and no 0/1 point lies within radius "
                       f"{radius:.3g} of it", cert)
        notes.append(f"the real solution is unique, but the radius {radius:.3g} ≥ 1/2 leaves "
                     "more than one 0/1 candidate: complete search")
    # ‖K s + a‖_F² = ‖E s − t‖² + r²: the box of half-width √(τ² − r²)/√r keeps ‖·‖_F ≤ τ,
    # hence the max-norm ≤ τ that `accept` asks for
    inner = float(np.sqrt(max(tau * tau - rel.residual, 0.0) / max(r, 1)))
    status, S, how, detail = _run_plan(plan, E, t, delta, accept, max_enumeration, exact=False,
                                       inner_delta=inner)
    if status == "found" and S is not None and not exact_none and method == "auto":
        if _holds(w, S):
            return out(status, S, how, detail, cert, plan, exact=True)
        if _enumerated_sums(w.n) <= max_enumeration and mitm_affordable(xplan) is None:
            # the set found meets the condition only within the tolerance: prefer an exact one
            xs, xS, xhow, xdetail = _run_exact(w, xplan, max_enumeration, seed)
            if xs == "found":
                return out(xs, xS, xhow, xdetail, cert, xplan, exact=True)
            notes.append(xdetail)
    return out(status, S, how, detail, cert, plan)


def _rounded_point(s: FloatArray) -> tuple[int, ...] | None:
    """The 0/1 point nearest to s when every entry rounds to 0 or 1, else None."""
    s01 = np.round(s)
    if not np.all((s01 == 0) | (s01 == 1)):
        return None
    return tuple(int(i) for i in np.nonzero(s01)[0])


def _run_plan(plan: SearchPlan, E: NDArray[Any], t: NDArray[Any], delta: float,
              accept: Callable[[tuple[int, ...]], bool], max_enumeration: int,
              exact: bool, inner_delta: float = 0.0) -> _Verdict:
    """Run the planned search; HiGHS first when planned, meet-in-the-middle where it is both
    needed (an exact proof of "none") and affordable."""
    prefix = plan.reason + "; "
    if plan.method == "milp":
        # HiGHS first, for a quarter of meet-in-the-middle's predicted time when that can run
        # after it (HiGHS finds planted sets in milliseconds but can stall on generic blocks)
        budget = (MILP_TIME_LIMIT if plan.reason == "requested" or mitm_affordable(plan)
                  else _milp_budget(plan))
        status, S, detail = _milp_search(E, t, delta, accept, exact, inner_delta,
                                         time_limit=budget)
        if status != "limit" or plan.reason == "requested":
            return status, S, "milp", prefix + detail
        prefix += detail + "; "
    blocked = mitm_affordable(plan)
    if blocked is not None:
        return "limit", None, "meet-in-the-middle", prefix + blocked
    enum_cap = max_enumeration if plan.method == "meet-in-the-middle" else 1 << 62
    try:
        res = meet_in_the_middle(E, t, delta, accept, enum_cap)
    except MemoryError:
        return ("limit", None, "meet-in-the-middle",
                prefix + f"meet-in-the-middle ran out of memory (predicted "
                f"{human_bytes(plan.bytes)})")
    return res.status, res.S, "meet-in-the-middle", prefix + res.detail


def _milp_search(E: NDArray[Any], t: NDArray[Any], delta: float,
                 accept: Callable[[tuple[int, ...]], bool], exact: bool,
                 inner_delta: float = 0.0, time_limit: float = MILP_TIME_LIMIT
                 ) -> tuple[Status, tuple[int, ...] | None, str]:
    """HiGHS on the box |E s − t| ≤ δ for at most ``time_limit`` seconds; ``inner_delta`` is a
    box whose points all pass ``accept`` (floats), tried when the outer box's point does
    not."""
    if E.dtype == object:
        # Python integers beyond float range: scale each equation by its largest entry first
        # (int / int is correctly rounded for any size)
        peak = [max(max(abs(int(x)) for x in row), abs(int(v)), 1) for row, v in zip(E, t,
                                                                                    strict=True)]
        Ef = np.array([[int(x) / m for x in row] for row, m in zip(E, peak, strict=True)])
        tf = np.array([int(v) / m for v, m in zip(t, peak, strict=True)])
    else:
        Ef = np.asarray(E, dtype=np.float64)
        tf = np.asarray(t, dtype=np.float64)
    r = Ef.shape[0]
    if Ef.size > MILP_MAX_ENTRIES:
        return "limit", None, (f"the binary program has {r}×{Ef.shape[1]} dense constraints, "
                               f"above {MILP_MAX_ENTRIES} entries")
    # exact integer rows are met exactly by an index set; HiGHS needs a little slack for its
    # own floating-point feasibility tolerance (found points are re-checked exactly).
    slack = delta if not exact else 1e-9 * max(1.0, float(np.max(np.abs(Ef))))
    status, S = milp_binary(Ef, tf, slack, time_limit)
    if status == "found" and S is not None and not accept(S) and inner_delta:
        # the box |E s − t| ≤ δ is wider than the ball ‖E s − t‖ ≤ δ an accepted S lies in;
        # the inner box finds points that pass, the outer box remains the proof of "none"
        inner, S_in = milp_binary(Ef, tf, inner_delta, time_limit)
        if inner == "found" and S_in is not None:
            status, S = inner, S_in
    if status == "found" and S is not None and accept(S):
        return "found", S, f"HiGHS milp found a verified index set, |S| = {len(S)}"
    if status == "infeasible" and not exact:
        return "none", None, (f"HiGHS milp proved the binary program on {r} equations "
                              "infeasible (floating point)")
    why = {
        "infeasible": "HiGHS reports the binary program infeasible, which is not an exact "
        "proof for rational input",
        "found": "HiGHS returned a point that failed verification on the weights",
        "limit": f"HiGHS stopped at its {time_limit:.3g} s limit",
    }[status]
    return "limit", None, why


def brute_force_index_set(
    W_up: Any, W_down: Any, A: Any = None, *, tol: float = 1e-9
) -> tuple[int, ...] | None:
    """Reference: try all 2^n subsets on the explicit d²-vectors vec(a_i b_iᵀ) (small n, d).

    Same acceptance rule as `find_index_set` (exact equality for Fraction input, max-norm
    ≤ tol·‖A‖_max for floats). Returns the S with the smallest bitmask, or None.
    """
    w = prepare(W_up, W_down, A)
    if w.n > 24:
        raise AbsorbError(f"brute force over 2^{w.n} subsets refused (n > 24)")
    cols = (w.W_down.T[:, :, None] * w.W_up[:, None, :]).reshape(w.n, w.d * w.d)
    res = subset_sums(cols) + w.A.reshape(-1)
    if w.exact:
        ok = np.all(res == 0, axis=1)
    else:
        ok = np.max(np.abs(res), axis=1) <= tol * float(np.max(np.abs(w.A)))
    hits = np.nonzero(ok)[0]
    return None if hits.size == 0 else tuple(bits(int(hits[0]), 0))
