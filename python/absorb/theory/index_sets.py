"""The index-set path of the verdicts (odd-part-linear ungated blocks): the search, the dual
certificate, the chain bias_blowup → index_set_necessary → relaxation_certificate, storage
precision ("absorbable up to rounding"), and the sign-flip construction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from absorb import certificates
from absorb.blocks import Block, ObjectArray
from absorb.certificates import as_fractions, check_dual, check_index_set
from absorb.certificates.rounding import (
    FLOAT64_TOL,
    UNIT_ROUNDOFF,
    corrected,
    repair,
    search_tolerance,
    storage_dtype,
)
from absorb.errors import AbsorbError
from absorb.theory.common import (
    absorbing_block,
    chain_fields,
    evidence,
    stored_weights,
    verify_construction,
    weights_json,
)

# 1 - |cos| below this counts as collinear for float weights (an angle of about 1.4e-5 rad).
COLLINEAR_TOL = 1e-10
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
    meet (empty: all hold). No d ≥ 2, n ≥ d or invertible A is needed (THEORY.md)."""
    unmet = []
    act = block.activation
    bias_free_paper = act.name in ("relu", "gelu") and not block.has_biases
    if not bias_free_paper and not act.relu_at_infinity:
        unmet.append(f"σ ReLU at infinity: σ(tz + c)/t -> ReLU(z) (bias_blowup; "
                     f"{act.name} is not)")
    exact = block.exact is not None
    W_up: Any = block.exact.W_up if block.exact is not None else block.W_up
    W_down: Any = block.exact.W_down if block.exact is not None else block.W_down
    if not noncollinear_rows(W_up, exact):
        unmet.append("rows of W_up nonzero and pairwise non-collinear")
    if not np.all(np.any(W_down != 0, axis=0)):
        unmet.append("columns of W_down nonzero")
    return unmet


def theorem_chain(block: Block) -> list[str]:
    """The theorems that turn "no index set" into "not absorbable" for this block."""
    if block.activation.name in ("relu", "gelu") and not block.has_biases:
        return ["index_set_necessary"]
    return ["bias_blowup", "index_set_necessary"]


def _certificate(result: certificates.IndexSetSearch, A_norm: float) -> dict[str, object]:
    rel = result.relaxation
    r = float(np.sqrt(max(rel.residual, 0.0)))
    return {
        "relaxation_residual": rel.residual,
        "relaxation_residual_exact": (None if rel.residual_exact is None
                                      else str(rel.residual_exact)),
        "distance": r / A_norm if A_norm > 0 else None,
        "distance_note": "r/||A||_F: every index set S has ||W_down[:,S] W_up[S,:] + A||_F >= r",
        "gram_rank": rel.rank,
        "tolerance": rel.tolerance,
        "method": result.method,
        "exact": result.exact,
        "detail": result.detail,
        "notes": list(result.notes),
        "plan": None if result.plan is None else result.plan.to_json(),
        "dual": None if result.dual is None else result.dual.to_json(),
    }


def given_certificate(block: Block, Y: ObjectArray) -> dict[str, object]:
    """A user's dual certificate Y (from a checker file), checked independently."""
    W_up, W_down, A = stored_weights(block)
    chk = check_dual(W_up, W_down, Y, A)
    return {"valid": chk.valid, "margin": str(chk.margin) if isinstance(chk.margin, Fraction)
            else chk.margin, "side": chk.side, "verified": chk.how}


@dataclass(frozen=True)
class Storage:
    """Stored format, its unit roundoff, the tolerance (``--tol``) and the search's tolerance.

    Default tolerance: the unit roundoff of the detected format; float64 weights use
    FLOAT64_TOL (the accuracy of float64 computations on them). Rational input: exact.
    """

    dtype: str
    unit_roundoff: float
    tol: float
    search_tol: float | None

    @property
    def near_is_exact(self) -> bool:
        """Whether an S within the tolerance counts as exact (float64: the tolerance is the
        arithmetic's, not the storage's), rather than as absorbable up to rounding."""
        return self.dtype == "float64"

    def to_json(self) -> dict[str, object]:
        return {"dtype": self.dtype, "unit_roundoff": self.unit_roundoff, "tol": self.tol,
                "search_tol": self.search_tol}


def storage(block: Block, tol: float | None) -> Storage:
    """The :class:`Storage` of a block's weights (detected from the stored values)."""
    if block.exact is not None:
        return Storage("rational", 0.0, 0.0, None)
    dtype = storage_dtype(block.W_up, block.W_down)
    u = UNIT_ROUNDOFF[dtype]
    t = (FLOAT64_TOL if dtype == "float64" else u) if tol is None else tol
    search_tol = max(t, FLOAT64_TOL) if dtype == "float64" else max(
        search_tolerance(block.W_up, block.W_down, block.skip_matrix(), t), FLOAT64_TOL)
    return Storage(dtype, u, t, search_tol)


def exact_absorbing_weights(block: Block, S: Sequence[int]) -> dict[str, object]:
    """The sign-flip construction over ℚ (exact input): V_up = D W_up, V_down = W_down,
    c_up = D b_up, c_down = b_down + W_down[:,S] b_up[S], as Fractions."""
    ex = block.exact
    assert ex is not None  # only called for exact blocks
    idx = list(S)
    D = np.array([Fraction(-1) if i in set(idx) else Fraction(1) for i in range(block.n)],
                 dtype=object)
    out: dict[str, object] = {"W_up": D[:, None] * ex.W_up, "W_down": ex.W_down.copy()}
    b_up = ex.b_up if ex.b_up is not None else (
        None if block.b_up is None else as_fractions(block.b_up))
    b_down = ex.b_down if ex.b_down is not None else (
        None if block.b_down is None else as_fractions(block.b_down))
    if b_up is not None:
        out["b_up"] = D * b_up
        shift = ex.W_down[:, idx] @ b_up[idx] if idx else np.zeros(block.d, dtype=object)
        out["b_down"] = shift if b_down is None else b_down + shift
    elif b_down is not None:
        out["b_down"] = b_down
    return out


def _absorbed(block: Block, S: list[int], result: certificates.IndexSetSearch,
              rng: np.random.Generator, base: dict[str, object],
              condition_exact: bool) -> dict[str, object]:
    h = absorbing_block(block, S)
    ex = block.exact
    out = {**base, "verdict": "absorbed", **chain_fields(["index_set_sufficient"]),
           "reason": f"W_down[:,S] W_up[S,:] = -A for an index set S of size {len(S)}; "
                     "the sign-flip construction absorbs the skip",
           "S": S, "absorbing_block": (exact_absorbing_weights(block, S) if ex is not None
                                       else weights_json(h)),
           **verify_construction(block, h, rng), "index_set_search": result.to_json(),
           "condition_exact": condition_exact}
    return out


def _up_to_rounding(block: Block, S: list[int], result: certificates.IndexSetSearch,
                    rng: np.random.Generator, base: dict[str, object],
                    store: Storage) -> dict[str, object]:
    """S meets the condition only up to the storage precision: the least-norm repair of
    W_down[:,S] and the construction verified on the repaired weights."""
    dtype = store.dtype
    rep = repair(block.W_up, block.W_down, block.skip_matrix(), S, dtype, u=store.tol)
    fixed = Block(block.activation, block.W_up, corrected(block.W_down, rep), block.W_gate,
                  block.b_up, block.b_down, block.A_skip)
    h = absorbing_block(fixed, S)
    check = verify_construction(fixed, h, rng)
    if not rep.within_rounding:
        return {**base, "verdict": "undetermined", **chain_fields([]),
                "reason": f"an index set meets the condition within the search tolerance but "
                          f"not within the rounding bound for tol = {store.tol:.3g}",
                "S": S, "rounding": rep.to_json(), "unmet_hypotheses": [],
                "index_set_search": result.to_json()}
    exactly = ("the stored weights themselves admit no exact index set (dual certificate "
               f"below, margin {float(result.dual.check.margin):.3g}): the stored block is one "
               "rounding away from absorbable, not absorbable itself"
               if result.dual is not None else
               "the condition fails on the stored weights by less than their precision")
    return {**base, "verdict": "absorbable_up_to_rounding",
            **chain_fields(["index_set_sufficient"]),
            "stored_weights_exactly": exactly,
            "certificate": _certificate(result, float(np.linalg.norm(block.skip_matrix()))),
            "reason": f"W_down[:,S] W_up[S,:] = -A holds up to the {dtype} storage precision "
                      f"(|S| = {len(S)}): a change of W_down[:,S] of relative size "
                      f"{rep.relative_change:.3g} ({rep.in_roundoffs:.3g} unit roundoffs) "
                      "makes it exact, and the sign-flip construction then absorbs the skip",
            "S": S, "rounding": rep.to_json(),
            "condition_exact": False,
            "corrected_absorbing_block": weights_json(h),
            "corrected_construction_check": check,
            "index_set_search": result.to_json()}


def _confirm_exactly(block: Block) -> certificates.IndexSetSearch | None:
    """The exhaustive search again, in exact arithmetic on the stored (dyadic) values, when its
    plan fits; None when it would not."""
    W_up, W_down, A = stored_weights(block)
    res = certificates.find_index_set(as_fractions(np.asarray(W_up, dtype=np.float64))
                                      if block.exact is None else W_up,
                                      as_fractions(np.asarray(W_down, dtype=np.float64))
                                      if block.exact is None else W_down,
                                      None if A is None else (
                                          as_fractions(np.asarray(A, dtype=np.float64))
                                          if block.exact is None else A),
                                      dual=False)
    return res if res.status != "limit" else None


def decide_index_set(block: Block, rng: np.random.Generator, run_search: bool,
                      base: dict[str, object], tol: float | None,
                      candidate: Sequence[int] | None) -> dict[str, object]:
    W_up, W_down, A = stored_weights(block)
    store = storage(block, tol)
    base = {**base, "storage": store.to_json()}
    A_norm = float(np.linalg.norm(block.skip_matrix()))
    if candidate is not None:
        S0 = sorted(int(i) for i in candidate)
        if any(not 0 <= i < block.n for i in S0) or len(set(S0)) != len(S0):
            raise AbsorbError(f"S must hold distinct indices in [0, {block.n})")
        if check_index_set(W_up, W_down, S0, A):
            pre = certificates.find_index_set(W_up, W_down, A, dual=False,
                                              tol=store.search_tol or FLOAT64_TOL)
            out = _absorbed(block, S0, pre, rng, base, condition_exact=True)
            out["reason"] = "the given index set S meets the condition exactly; " + str(
                out["reason"])
            return out
        base = {**base, "given_S": {"S": S0, "condition_exact": False,
                                    "note": "the given S does not meet the condition exactly; "
                                            "the complete search decides"}}
    result = (certificates.find_index_set(W_up, W_down, A) if store.search_tol is None
              else certificates.find_index_set(W_up, W_down, A, tol=store.search_tol))
    if result.status == "found":
        assert result.S is not None  # "found" always carries S (certificates' contract)
        S = list(result.S)
        exact_ok = check_index_set(W_up, W_down, S, A)
        resid = certificates.index_set_residual(W_up, W_down, S, A)
        a_max = float(np.max(np.abs(block.skip_matrix())))
        if exact_ok or (store.near_is_exact and resid <= store.tol * a_max):
            return _absorbed(block, S, result, rng, base, condition_exact=exact_ok)
        return _up_to_rounding(block, S, result, rng, base, store)
    cert = _certificate(result, A_norm)
    if result.status == "limit" and result.dual is not None and store.near_is_exact:
        # an S within the tolerance would count as absorbed, and it was not excluded
        return {**base, "verdict": "undetermined", **chain_fields([]),
                "reason": "the stored weights admit no exact index set (dual certificate), but "
                          "an S within the float64 tolerance, which would count as absorbed, "
                          "is not excluded and the search for one was stopped by a size "
                          "limit: " + result.detail,
                "certificate": cert, "unmet_hypotheses": [],
                "search": evidence(block, rng, run_search)}
    if result.status == "limit" and result.dual is not None:
        # the certificate decides the stored weights; only "up to rounding" stays open
        cert["up_to_rounding"] = ("not decided: the stored weights admit no exact index set "
                                  "(dual certificate), but an S meeting the condition within "
                                  "the storage tolerance is not excluded; " + result.detail)
    elif result.status == "limit":
        return {**base, "verdict": "undetermined", **chain_fields([]),
                "reason": "the exact index-set search was stopped by a size limit: "
                          + result.detail,
                "certificate": cert, "unmet_hypotheses": [],
                "search": evidence(block, rng, run_search)}
    unmet = necessary_hypotheses(block)
    if unmet:
        return {**base, "verdict": "undetermined", **chain_fields([]),
                "reason": "no index set exists, but index_set_necessary does not apply",
                "certificate": cert, "unmet_hypotheses": unmet,
                "search": evidence(block, rng, run_search)}
    chain = theorem_chain(block)
    if result.dual is not None:
        proof = "dual certificate Y, " + result.dual.check.how
        chain = [*chain, "relaxation_certificate"]
    elif result.method == "rank":
        proof = "rank: rank(A) > n"
    else:
        confirm = result if result.exact else _confirm_exactly(block)
        if confirm is None or confirm.status != "none":
            return {**base, "verdict": "undetermined", **chain_fields([]),
                    "reason": "the floating-point search found no index set, but no dual "
                              "certificate was found and the exact search did not confirm it "
                              "within its budget",
                    "certificate": cert, "unmet_hypotheses": [],
                    "search": evidence(block, rng, run_search)}
        proof = ("exhaustive search in exact rational arithmetic on the stored weights "
                 f"({confirm.method}); no dual certificate: " + "; ".join(result.notes))
        cert["exact_search"] = confirm.to_json()
    cert["proof"] = proof
    cert["theorem"] = ("no index set exists (" + proof + "); "
                       + " + ".join(chain) + " turn that into 'not absorbable'")
    return {**base, "verdict": "not_absorbed", **chain_fields(chain),
            "reason": "no index set exists, and " + " + ".join(theorem_chain(block))
                      + (" turn" if len(theorem_chain(block)) > 1 else " turns")
                      + " that into 'not absorbable'",
            "certificate": cert}
