"""The index-set path of the verdicts (odd-part-linear ungated blocks): the search, the dual
certificate, the chain bias_blowup → index_set_necessary → relaxation_certificate, storage
precision ("absorbable up to rounding"), and the sign-flip construction.

``absorbed`` needs the index-set condition exactly on the stored values
(:func:`absorb.verdicts.exact_index_set`); a set that meets it only within the storage
tolerance — float64 included — is ``absorbable_up_to_rounding``, with the distance in unit
roundoffs of the stored format.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from absorb import certificates, exact
from absorb.blocks import Block, ObjectArray
from absorb.budget import Cost
from absorb.certificates import check_dual
from absorb.certificates.recheck import EXACT_OPS
from absorb.certificates.rounding import (
    FLOAT64_TOL,
    MAX_SEARCH_TOL,
    corrected,
    repair,
    repair_cost,
    search_tolerance,
    storage_dtype,
)
from absorb.errors import AbsorbError
from absorb.formats import FLOAT_FORMATS, RATIONAL, unit_roundoff
from absorb.rationals import rational_text
from absorb.theory.applicable import necessary_chain
from absorb.theory.construction import (
    CHECK_POINTS,
    absorbing_block,
    check_construction,
    corrected_construction,
    exact_absorbing_weights,
)
from absorb.theory.evidence import Evidence, attached_evidence
from absorb.verdicts import (
    AbsorbableUpToRounding,
    Absorbed,
    ExactCheck,
    NotAbsorbed,
    Subject,
    Undetermined,
    Verdict,
    exact_index_set,
)

# 1 - |cos| below this counts as collinear for float weights (an angle of about 1.4e-5 rad).
COLLINEAR_TOL = 1e-10
#: Float W_up with near-collinear rows are re-checked exactly up to this many entries.
EXACT_COLLINEAR_ENTRIES = 1 << 18
#: Random projections that candidate collinear pairs must agree on (within ε) before a cosine.
_PROJECTIONS = 4
#: Candidate pairs per row in the first projection beyond which the blocked Gram matrix is used.
_MAX_PAIRS_PER_ROW = 64
#: Candidate pairs whose cosines are computed at once (two chunk × d temporaries).
_PAIR_CHUNK = 1 << 16
#: Entries of one row block of the fallback Gram matrix (64 MiB).
_GRAM_BLOCK_ENTRIES = 1 << 23


def noncollinear_rows(W: Any, exact: bool) -> bool:
    """Rows of W nonzero and pairwise non-collinear (exactly for Fractions)."""
    if exact:
        seen = set()
        for row in W:
            nz = np.flatnonzero(row != 0)
            if nz.size == 0:
                return False
            # scale by the first nonzero entry: collinear rows become equal tuples
            seen.add(tuple(row / row[nz[0]]))
        return len(seen) == int(W.shape[0])
    # scaled by the largest entry first: the norm of a row of 1e-160s would underflow to 0
    peak = np.max(np.abs(W), axis=1) if W.size else np.zeros(W.shape[0])
    if not np.all(peak > 0):
        return False
    V = W / peak[:, None]
    U = V / np.linalg.norm(V, axis=1)[:, None]
    # 1 - |cos(u_i, u_j)| < τ  ⟺  ‖u_i − s u_j‖ < ε = √(2τ) for a sign s, and then the
    # projections |u · r| on any unit r differ by less than ε. Sorting one projection and
    # keeping the pairs within ε of each other in it and in three more misses no collinear
    # pair; only those pairs get a cosine: O(nd + n log n), not the O(n²d) Gram matrix (which
    # at d = 4096, n = 16384 took longer than the whole certificate).
    # inflated for the rounding of p; at the threshold itself the final cosine decides, and
    # its own last-bit rounding is the same as the Gram matrix's up to summation order
    eps = np.sqrt(2.0 * COLLINEAR_TOL) * (1 + 1e-6)
    R = np.random.default_rng(0).standard_normal((U.shape[1], _PROJECTIONS))
    P = np.abs(U @ (R / np.linalg.norm(R, axis=0)))
    order = np.argsort(P[:, 0])
    p = P[order, 0]
    counts = np.searchsorted(p, p + eps, side="right") - np.arange(p.size) - 1
    if counts.sum() > _MAX_PAIRS_PER_ROW * p.size:  # one projection clusters: use them all
        return _noncollinear_by_gram(U)
    first = np.repeat(np.arange(p.size), counts)
    second = first + 1 + (np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts))
    i, j = order[first], order[second]
    near = np.all(np.abs(P[i, 1:] - P[j, 1:]) <= eps, axis=1)
    i, j = i[near], j[near]
    for k in range(0, i.size, _PAIR_CHUNK):
        cos = np.einsum("ij,ij->i", U[i[k:k + _PAIR_CHUNK]], U[j[k:k + _PAIR_CHUNK]])
        if not np.all(np.abs(cos) < 1.0 - COLLINEAR_TOL):
            return False
    return True


def _noncollinear_by_gram(U: Any) -> bool:
    """All |cos(u_i, u_j)| < 1 − τ (i ≠ j) from the Gram matrix, in row blocks."""
    n = U.shape[0]
    b = max(1, _GRAM_BLOCK_ENTRIES // max(n, 1))
    for i0 in range(0, n, b):
        C = np.abs(U[i0:i0 + b] @ U.T)
        C[np.arange(C.shape[0]), np.arange(i0, i0 + C.shape[0])] = 0.0
        if not np.all(C < 1.0 - COLLINEAR_TOL):
            return False
    return True


def necessary_hypotheses(block: Block) -> list[str]:
    """The hypotheses of the chain bias_blowup → index_set_necessary that this block does NOT
    meet (empty: all hold). No d ≥ 2, n ≥ d or invertible A is needed (THEORY.md).

    Zero rows and zero columns are decided exactly. Collinearity: exactly for rational input;
    for floats the float filter first — exactly collinear rows have |cos| within d·2⁻⁵² of 1,
    far inside its threshold, so "no pair near collinear" is a proof — and where it flags a
    pair, the exact check on the stored values decides (up to EXACT_COLLINEAR_ENTRIES
    entries; beyond, the hypothesis stays unmet: ``undetermined``, never a wrong verdict)."""
    unmet = []
    act = block.activation
    direct = act.necessary_direct and not block.has_biases
    if not direct and not act.relu_at_infinity:
        unmet.append(f"σ ReLU at infinity: σ(tz + c)/t -> ReLU(z) (bias_blowup; "
                     f"{act.name} is not)")
    exact = block.exact is not None
    W_up, W_down, _ = block.stored_weights
    distinct = noncollinear_rows(W_up, exact)
    if not distinct and not exact and W_up.size <= EXACT_COLLINEAR_ENTRIES:
        distinct = noncollinear_rows(block.rational_weights[0], True)
    if not distinct:
        unmet.append("rows of W_up nonzero and pairwise non-collinear")
    if not np.all(np.any(W_down != 0, axis=0)):
        unmet.append("columns of W_down nonzero")
    return unmet


_SAFE = 1.0 - 16.0 * 2.0**-53


def dual_distance(dual: certificates.DualCertificate, A: Any,
                  d: int) -> tuple[float | None, str]:
    """The proven lower bound on min_S ‖W_down[:,S] W_up[S,:] + A‖_F / ‖A‖_F that a dual
    certificate Y (margin m, exact or a proven lower bound) gives, and its source: every S
    has |⟨E_S, Y⟩| ≥ m, so ‖E_S‖_F ≥ m/‖Y‖_F (Cauchy–Schwarz); rounded toward the safe side
    (the quotient by at most 16 unit roundoffs)."""
    a2 = _frobenius_squared_above(A, d)
    if a2 == 0:
        return None, "A = 0"
    try:
        # ‖Y‖_F² bounded above without squaring in float: a tiny exact Y (entries near
        # 2⁻¹¹⁰⁰) would underflow to a zero divisor, a huge one overflow.
        y2 = _frobenius_squared_above(dual.Y, d)
        if y2 == 0:  # Y = 0 has margin 0: no certificate, no bound
            return None, "zero dual certificate"
        q = Fraction(dual.check.margin) ** 2 / (y2 * a2)
        return math.sqrt(float(q)) * _SAFE, "dual certificate: margin / (|Y|_F |A|_F)"
    except (OverflowError, ValueError):  # beyond float range: no bound is stated
        return None, "beyond float range"


def _distance(result: certificates.IndexSetSearch, A: Any, d: int) -> tuple[float | None, str]:
    """A proven lower bound on min_S ‖W_down[:,S] W_up[S,:] + A‖_F / ‖A‖_F, and its source.

    From a dual certificate (:func:`dual_distance`). Else from the exact relaxation:
    ‖E_S‖_F ≥ r = min over every real s. The float relaxation's r² is measured at a computed
    minimizer — an upper bound of its minimum, not a lower bound over S — and gives none.
    """
    if result.dual is not None:
        return dual_distance(result.dual, A, d)
    a2 = _frobenius_squared_above(A, d)
    if a2 == 0:
        return None, "A = 0"
    try:
        rel = result.relaxation
        if rel is not None and rel.residual_exact is not None:
            return (math.sqrt(float(rel.residual_exact / a2)) * _SAFE,
                    "exact relaxation: r / |A|_F")
    except (OverflowError, ValueError):  # beyond float range: no bound is stated
        return None, "beyond float range"
    return None, ("not certified: the float relaxation's r^2 is measured at a computed "
                  "minimizer, an upper bound of its minimum")


def _frobenius_squared_above(A: Any, d: int) -> Fraction:
    """An upper bound on ‖A‖_F² (A as stored; None: the identity, ‖I‖_F² = d): exact for
    rational A; for floats amax²·Σ (a/amax)² with every rounding (relative u, or 2⁻¹⁰⁷⁴ where
    a quotient underflows) bounded upward."""
    if A is None:
        return Fraction(d)
    M = np.asarray(A)
    if M.dtype == object:
        return sum((Fraction(v) ** 2 for v in M.ravel()), Fraction(0))
    amax = float(np.max(np.abs(M)))
    if amax == 0.0:
        return Fraction(0)
    with np.errstate(under="ignore"):
        s2 = float(np.sum(np.square(M / amax)))
    u = Fraction(2.0**-53)
    bound = Fraction(s2) * (1 + (2 * M.size + 4) * u) + 4 * M.size * Fraction(2.0**-1074)
    return Fraction(amax) ** 2 * bound


def _certificate(result: certificates.IndexSetSearch, A: Any, d: int) -> dict[str, object]:
    rel = result.relaxation
    distance, source = _distance(result, A, d)
    return {
        "relaxation_residual": None if rel is None else rel.residual,
        "relaxation_residual_exact": (None if rel is None or rel.residual_exact is None
                                      else rational_text(rel.residual_exact)),
        "distance": distance,
        "distance_source": source,
        "distance_note": "a proven lower bound: every index set S has "
                         "||W_down[:,S] W_up[S,:] + A||_F >= distance * ||A||_F",
        "gram_rank": None if rel is None else rel.rank,
        "tolerance": None if rel is None else rel.tolerance,
        "method": result.method,
        "exact": result.exact,
        "detail": result.detail,
        "notes": list(result.notes),
        "plan": None if result.plan is None else result.plan.to_json(),
        "dual": None if result.dual is None else result.dual.to_json(),
    }


def given_certificate(block: Block, Y: ObjectArray) -> dict[str, object]:
    """A user's dual certificate Y (from a checker file), checked independently."""
    W_up, W_down, A = block.stored_weights
    chk = check_dual(W_up, W_down, Y, A)
    margin = chk.margin
    return {"valid": chk.valid,
            "margin": rational_text(margin) if isinstance(margin, Fraction) else margin,
            "side": chk.side, "verified": chk.how}


@dataclass(frozen=True)
class Storage:
    """Stored format, its unit roundoff, the tolerance (``--tol``) and the search's tolerance.

    Default tolerance: the unit roundoff of the detected format; float64 weights use
    FLOAT64_TOL (the accuracy of float64 computations on them). Rational input: exact. The
    tolerance only ever widens "absorbable up to rounding"; ``absorbed`` is exact.
    """

    dtype: str
    unit_roundoff: float
    tol: float
    search_tol: float | None

    def to_json(self) -> dict[str, object]:
        return {"dtype": self.dtype, "unit_roundoff": self.unit_roundoff, "tol": self.tol,
                "search_tol": self.search_tol}


def storage(block: Block, tol: float | None) -> Storage:
    """The :class:`Storage` of a block's weights: the format its file names (``Block.dtype``;
    a block built in memory: the coarsest float format holding its values). Exact values
    beside the floats (JSON, integers beyond 2⁵³, long doubles beyond float64) are decided
    exactly: no tolerance. Formats at least as fine as float64 (long double, integers, whose
    arithmetic is float64's) take FLOAT64_TOL."""
    if block.exact is not None:
        return Storage(block.dtype or RATIONAL, 0.0, 0.0, None)
    dtype = block.dtype or storage_dtype(block.W_up, block.W_down)
    u = unit_roundoff(dtype)
    fine = u <= FLOAT_FORMATS["float64"]
    t = (FLOAT64_TOL if fine else u) if tol is None else tol
    search_tol = min(max(t, FLOAT64_TOL), MAX_SEARCH_TOL) if fine else max(
        search_tolerance(block.W_up, block.W_down, block.skip_matrix(), t), FLOAT64_TOL)
    return Storage(dtype, u, t, search_tol)


def _absorbed(block: Block, proof: ExactCheck, rng: np.random.Generator, subject: Subject,
              reason: str, details: dict[str, object]) -> Absorbed:
    assert proof.S is not None  # an index-set proof carries its S
    h = absorbing_block(block, proof.S)
    return Absorbed(subject=subject, chain=("index_set_sufficient",), proof=proof,
                    reason=reason + f"W_down[:,S] W_up[S,:] = -A exactly for an index set S of "
                                    f"size {len(proof.S)}; the sign-flip construction absorbs "
                                    "the skip",
                    construction={"absorbing_block": exact_absorbing_weights(block, proof.S)},
                    check=check_construction(block, h, rng), details=details)


def _exact_answer(result: certificates.IndexSetSearch,
                  confirm: certificates.IndexSetSearch | None) -> str:
    """What the stored weights themselves say, beside an answer up to rounding: no exact index
    set (a dual certificate, or the exact search), or not decided exactly."""
    if result.dual is not None:
        return ("the stored weights themselves admit no exact index set (dual certificate "
                f"below, margin {float(result.dual.check.margin):.3g}): the stored block is one "
                "rounding away from absorbable, not absorbable itself")
    if confirm is not None and confirm.status == "none":
        return ("the stored weights themselves admit no exact index set (exhaustive search in "
                f"exact arithmetic, {confirm.method}): the stored block is one rounding away "
                "from absorbable, not absorbable itself")
    return ("not decided exactly (the exact search on the stored values is beyond its budget): "
            "the condition fails on this S by less than the precision of the weights")


def _up_to_rounding(block: Block, S: list[int], result: certificates.IndexSetSearch,
                    rng: np.random.Generator, subject: Subject, store: Storage,
                    A: Any, confirm: certificates.IndexSetSearch | None) -> Verdict | None:
    """S meets the condition only up to the storage precision: the least-norm repair of
    W_down[:,S], the construction verified on the repaired weights, and the exact answer on
    the stored weights beside it (``confirm``: the exact search, where it ran). None when the
    repair is outside the rounding bound (the caller decides from the exact answer)."""
    dtype = store.dtype
    rep = repair(block.W_up, block.W_down, block.skip_matrix(), S, dtype, u=store.tol)
    roundoffs = rep.relative_change / store.unit_roundoff
    if not rep.within_rounding or not math.isfinite(roundoffs):
        return None
    fixed = Block(block.activation, block.W_up, corrected(block.W_down, rep), block.W_gate,
                  block.b_up, block.b_down, block.A_skip)
    h = absorbing_block(fixed, S)
    search = {"index_set_search": result.to_json()}
    if confirm is not None:
        search["exact_search"] = confirm.to_json()
    return AbsorbableUpToRounding(
        subject=subject, chain=("index_set_sufficient",), S=tuple(S), roundoffs=roundoffs,
        rounding=rep.to_json(),
        reason=f"W_down[:,S] W_up[S,:] = -A holds up to the {dtype} storage precision, not "
               f"exactly (|S| = {len(S)}): a change of W_down[:,S] of relative size "
               f"{rep.relative_change:.3g} ({roundoffs:.3g} unit roundoffs of {dtype}) makes it "
               "exact, and the sign-flip construction then absorbs the skip",
        details={"stored_weights_exactly": _exact_answer(result, confirm),
                 "certificate": _certificate(result, A, block.d),
                 "corrected_absorbing_block": corrected_construction(h),
                 "corrected_construction_check": check_construction(fixed, h, rng),
                 **search})


#: Seconds per unit of the exact certificate check below EXACT_OPS: its Chinese remaindering
#: runs per unit in Python (measured: 1–3 ms at n = 64–256 beside 2–3 ms of fixed overhead).
EXACT_CHECK_SECONDS_PER_UNIT = 2e-5


def decision_cost(d: int, n: int) -> Cost:
    """What deciding a float layer costs beyond its relaxation, predicted from (d, n):
    the storage tolerance (|W_down||W_up|, one d×n×d product: 2nd² flops); the certificate's
    exact check where n·d² ≤ ``recheck.EXACT_OPS`` (per unit:
    :data:`EXACT_CHECK_SECONDS_PER_UNIT`); and, for a layer found absorbable only up to
    rounding with |S| = d (the least |S| when A has full rank): the repair
    (:func:`~absorb.certificates.rounding.repair_cost`), the exact checks of S (the
    search's and the verdict's: a d×d×d float64 GEMM each and its integer passes, counted as
    two GEMMs each, 8d³) and the construction check (f and h at CHECK_POINTS inputs per
    scale, three scales: 6·4·P·n·d flops). Counted for every layer, since which branch a
    layer takes is known only once it is decided: a random layer's prediction is the larger
    by these terms (about half its relaxation's flops at d = 1024, n = 4d; a third at
    2048)."""
    tolerance = Cost(0.0, 2.0 * n * d * d)
    exact_certificate = Cost(0.0, 0.0, EXACT_CHECK_SECONDS_PER_UNIT * n
                             if n * d * d <= EXACT_OPS else 0.0)
    check = Cost(0.0, 6 * 4.0 * CHECK_POINTS * n * d)
    exact_checks = Cost(0.0, 8.0 * float(d) ** 3)
    return tolerance + exact_certificate + repair_cost(d, d) + exact_checks + check


#: The exact search on float weights (rational Gram matrix: n²d rational operations) is run
#: again by the verdict only up to this many weights n·d.
EXACT_SEARCH_MAX_WEIGHTS = 1 << 10


def _confirm_exactly(block: Block, seed: int) -> certificates.IndexSetSearch | None:
    """The complete search again, in exact arithmetic on the stored (dyadic) values, when the
    block is small enough and its plan fits; None when it would not.

    Not redundant with the float search, although that looks for an exact set first: it runs
    its exact meet-in-the-middle only when predicted cheaper than its own float plan (then
    also at most 2^26 subset sums) and not after a unique real solution that rounds to a set
    within the tolerance. So a float "found" may be a set within the tolerance beside an exact
    one, and a float "none" is no proof when the exact search did not run (random ReLU
    blocks at d = 2, n = 52: a float "none" from HiGHS that only this exact
    meet-in-the-middle, in about a minute, turns into not_absorbed). Over ℚ the search
    decides both on the stored values, up to the exact search's full time limit."""
    if block.n * block.d > EXACT_SEARCH_MAX_WEIGHTS:
        return None
    res = certificates.find_index_set(*block.rational_weights, dual=False, seed=seed)
    return res if res.status != "limit" else None


#: rank(A) > n from the float search is re-decided over ℚ up to this d (d³ integer steps).
EXACT_RANK_MAX_D = 128


def decide_index_set(block: Block, rng: np.random.Generator, evidence: Evidence | None,
                     subject: Subject, tol: float | None,
                     candidate: Sequence[int] | None) -> Verdict:
    """The verdict of an odd-part-linear ungated block with A ≠ 0 (see the module docstring)."""
    W_up, W_down, A = block.stored_weights
    store = storage(block, tol)
    subject = replace(subject, extra={**subject.extra, "storage": store.to_json()})
    details: dict[str, object] = {}
    if candidate is not None:
        S0 = sorted(int(i) for i in candidate)
        if any(not 0 <= i < block.n for i in S0) or len(set(S0)) != len(S0):
            raise AbsorbError(f"S must hold distinct indices in [0, {block.n})")
        given = exact_index_set(W_up, W_down, S0, A)
        if given is not None:
            return _absorbed(block, given, rng, subject,
                             "the given index set S meets the condition exactly: ", {})
        details["given_S"] = {"S": S0, "condition_exact": False,
                              "note": "the given S does not meet the condition exactly; the "
                                      "complete search decides"}
    # the exact search's fingerprint primes, drawn from --seed (reported in its JSON)
    seed = int(rng.integers(1 << 62))
    result = (certificates.find_index_set(W_up, W_down, A, seed=seed)
              if store.search_tol is None else
              certificates.find_index_set(W_up, W_down, A, tol=store.search_tol, seed=seed))

    def undetermined(reason: str, cert: dict[str, object] | None,
                     unmet: Sequence[str] = ()) -> Undetermined:
        return Undetermined(subject=subject, reason=reason, unmet_hypotheses=tuple(unmet),
                            details={**details, "certificate": cert,
                                     "search": attached_evidence(block, rng, evidence)})

    if result.status == "found":
        assert result.S is not None  # "found" always carries S (certificates' contract)
        S = list(result.S)
        proof = exact_index_set(W_up, W_down, S, A)
        if proof is not None:
            return _absorbed(block, proof, rng, subject, "",
                             {**details, "index_set_search": result.to_json()})
        if block.exact is not None:
            return undetermined("the exact search returned an index set that fails the exact "
                                "check", None)
        # the float search stops at the first set within its tolerance; an exact set may
        # exist beside it (small blocks: searched for exactly on the stored values)
        confirm = _confirm_exactly(block, seed)
        if confirm is not None and confirm.status == "found" and confirm.S is not None:
            exact_set = exact_index_set(W_up, W_down, confirm.S, A)
            if exact_set is not None:
                return _absorbed(block, exact_set, rng, subject, "",
                                 {**details, "index_set_search": confirm.to_json()})
        rounded = _up_to_rounding(block, S, result, rng, subject, store, A, confirm)
        if rounded is not None:
            return rounded
        details["within_search_tolerance"] = {
            "S": S, "note": "this S meets the condition within the search tolerance but not "
                            f"within the rounding bound for tol = {store.tol:.3g}"}
        if confirm is None or confirm.status != "none":
            return undetermined("an index set meets the condition within the search "
                                f"tolerance but not within the rounding bound for tol = "
                                f"{store.tol:.3g}, and not exactly", None)
        result = confirm  # the exact search decides the stored weights: no index set
    cert = _certificate(result, A, block.d)
    if result.status == "limit" and result.dual is not None:
        # the certificate decides the stored weights; only "up to rounding" stays open
        cert["up_to_rounding"] = ("not decided: the stored weights admit no exact index set "
                                  "(dual certificate), but an S meeting the condition within "
                                  "the storage tolerance is not excluded; " + result.detail)
    elif result.status == "limit":
        return undetermined("the exact index-set search was stopped by a size limit: "
                            + result.detail, cert)
    unmet = necessary_hypotheses(block)
    if unmet:
        return undetermined("no index set exists, but index_set_necessary does not apply",
                            cert, unmet)
    chain = necessary_chain(block)
    if result.dual is not None:
        proof_text = "dual certificate Y, " + result.dual.check.how
        full = [*chain, "relaxation_certificate"]
    elif result.method == "rank":
        if not result.exact and block.d > EXACT_RANK_MAX_D:
            return undetermined(f"rank(A) > n was decided at float tolerance and the exact "
                                f"rank of the {block.d}x{block.d} skip is beyond the budget",
                                cert)
        rank_a = exact.rank(np.eye(block.d, dtype=int) if A is None else A)
        if rank_a <= block.n:
            return undetermined(f"rank(A) = {rank_a} <= n = {block.n} exactly, although the "
                                "float search found it larger", cert)
        proof_text = f"rank: rank(A) = {rank_a} > n = {block.n} (exact, over Q)"
        full = chain
    else:
        confirm = result if result.exact else _confirm_exactly(block, seed)
        if confirm is not None and confirm.status == "found" and confirm.S is not None:
            # the float search missed it (e.g. its Gram products overflowed); the exact
            # search on the stored values found an index set, checked exactly once more
            found = exact_index_set(W_up, W_down, confirm.S, A)
            if found is not None:
                return _absorbed(block, found, rng, subject, "",
                                 {**details, "index_set_search": confirm.to_json()})
        if confirm is None or confirm.status != "none":
            return undetermined("the floating-point search found no index set, but no dual "
                                "certificate was found and the exact search did not confirm "
                                "it within its budget", cert)
        # why there is no certificate beside the search: the search's notes say, else it
        # decided before any certificate was tried
        why = "; ".join(result.notes) or "not sought: the exact search decided first"
        proof_text = ("exhaustive search in exact rational arithmetic on the stored weights "
                      f"({confirm.method}: {confirm.detail}); no dual certificate ({why})")
        cert["exact_search"] = confirm.to_json()
        full = chain
    cert["proof"] = proof_text
    cert["theorem"] = ("no index set exists (" + proof_text + "); "
                       + " + ".join(full) + " turn that into 'not absorbable'")
    return NotAbsorbed(subject=subject, chain=tuple(full), certificate=cert, details=details,
                       reason="no index set exists, and " + " + ".join(chain)
                              + (" turn" if len(chain) > 1 else " turns")
                              + " that into 'not absorbable'")
