"""The verdict logic: which theorem of THEORY.md decides a given skip block, and its evidence.

``decide`` returns the ``check`` object of DESIGN.md. Its verdicts:

* ``impossible`` — degree (homogeneous of degree k ≠ 1, no biases, A ≠ 0) or linearization
  (gated, g(0) = 0, no biases, A ≠ 0), with a witness computed from the weights;
* ``absorbed`` — an explicit residual-free block of the same kind and width equal to f
  (the sign-flip construction of index_set_sufficient, a rank factorization for a linear
  block, or the block itself when A = 0), checked on fresh random points;
* ``not_absorbed`` — no index set exists (certificate) and index_set_necessary's hypotheses
  hold, or a linear block whose linear part has rank > n;
* ``undetermined`` — no theorem applies; the unmet hypotheses and search evidence are given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from absorb import certificates
from absorb.blocks import Array, Block, ObjectArray
from absorb.certificates import check_dual, check_index_set
from absorb.certificates._inputs import rref
from absorb.certificates.rounding import (
    FLOAT64_TOL,
    UNIT_ROUNDOFF,
    corrected,
    repair,
    search_tolerance,
    storage_dtype,
)
from absorb.errors import AbsorbError
from absorb.manifest import get_theorem
from absorb.search import fit_residual_free
from absorb.weights import rational_rank

LINEARIZATION_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
VERIFY_SCALES = (1e-2, 1.0, 1e2)
VERIFY_POINTS = 256
# 1 - |cos| below this counts as collinear for float weights (an angle of about 1.4e-5 rad).
COLLINEAR_TOL = 1e-10
# Small, fast search settings for the evidence attached to `undetermined` verdicts.
EVIDENCE_RESTARTS, EVIDENCE_STEPS, EVIDENCE_SAMPLES = 2, 300, 512
# Measured: at small sizes a generic (provably non-absorbable) ReLU block and a planted
# absorbable one reach similar fit errors (about 1 %), so the fit decides nothing by itself.
SCOPE = ("the verdict is about the abstract block A x + MLP(x), as in the paper; a real "
         "transformer layer also holds a LayerNorm, which this question leaves aside")
EVIDENCE_NOTE = ("weak numerical evidence: the best fit of a residual-free block of the same "
                 "width; a small error does not prove absorbability and a large one does not "
                 "prove impossibility")


def _theorem(tid: str | None) -> dict[str, object]:
    """The ``theorem``/``chain``/``lean`` fields of a verdict resting on one theorem (or none);
    Lean names come from the manifest only."""
    return _chain([] if tid is None else [tid])


def _point(A: Array, rng: np.random.Generator) -> Array:
    """A unit vector x with A x ≠ 0 (A ≠ 0): Gaussian, else the largest column's basis vector."""
    x = np.asarray(rng.standard_normal(A.shape[1]), dtype=np.float64)
    if not np.any(A @ x):
        x = np.zeros(A.shape[1])
        x[int(np.argmax(np.linalg.norm(A, axis=0)))] = 1.0
    return x / float(np.linalg.norm(x))


def degree_witness(block: Block, x: Array, lam: float = 2.0) -> dict[str, object]:
    """f(λx) − λ^k f(x) for a block whose MLP is homogeneous of degree k.

    For the skip block this gap is (λ − λ^k) A x (the MLP terms cancel), while for every
    residual-free h of the kind h(λx) − λ^k h(x) = 0; a nonzero gap refutes f = h.
    """
    k = block.activation.degree
    if k is None or block.has_biases:
        raise AbsorbError(f"{block.activation.name} block with biases={block.has_biases} is "
                          "not homogeneous; no degree witness")
    x = np.asarray(x, dtype=np.float64)
    gap = block(lam * x) - lam**k * block(x)
    expected = (lam - lam**k) * (block.skip_matrix() @ x)
    return {
        "x": x.tolist(),
        "lambda": lam,
        "k": k,
        "gap": gap.tolist(),
        "gap_norm": float(np.linalg.norm(gap)),
        "expected_gap": expected.tolist(),
        "discrepancy": float(np.max(np.abs(gap - expected))),
        "statement": f"f(λx) - λ^k f(x) = (λ - λ^k) A x ≠ 0, whereas h(λx) - λ^k h(x) = 0 for "
                     f"every residual-free {block.activation.name} block h (λ = {lam:g}, "
                     f"k = {k:g})",
    }


def linearization_witness(block: Block, x: Array, ts: Sequence[float]) -> dict[str, object]:
    """The small-t behaviour of f(tx)/t for a gated block with g(0) = 0.

    f(tx)/t − A x = W_down (g(t W_gate x) ⊙ W_up x) is the residual-free block with the same
    weights at tx, divided by t. Every residual-free gated h obeys
        ‖h(tx)/t‖ ≤ ‖V_down‖₂ ‖V_up‖₂ ‖x‖ ω(t ‖V_gate‖₂ ‖x‖),   ω(r) = max_{|z| ≤ r} |g(z)|,
    and ω(r) = max(|g(r)|, |g(−r)|) for the catalog gates (ReLU, SiLU, GELU: g(z) = z F(z) with
    F nondecreasing in [0, 1] and F(z) + F(−z) = 1, so |g| grows on [0, ∞) and |g(−r)| ≤ g(r)).
    ``bound`` is that bound for every h whose three operator norms do not exceed the block's;
    it also bounds ``skip_gap``, so ``separation`` = ‖Ax‖ − skip_gap − bound is a lower bound on
    ‖f(tx)/t − h(tx)/t‖ for all such h. For any fixed h the bound → 0 as t → 0⁺.
    """
    act = block.activation
    if not act.gated or act.g0 != 0.0 or block.has_biases:
        raise AbsorbError(f"{act.name} block is not gated with g(0) = 0 and no biases; "
                          "no linearization witness")
    assert block.W_gate is not None  # gated blocks always carry W_gate (Block checks it)
    x = np.asarray(x, dtype=np.float64)
    Ax = block.skip_matrix() @ x
    t = np.asarray(ts, dtype=np.float64)
    gaps = np.linalg.norm(block(t[:, None] * x) / t[:, None] - Ax, axis=1)
    xn = float(np.linalg.norm(x))
    r = t * np.linalg.norm(block.W_gate, 2) * xn
    omega = np.maximum(np.abs(act(r)), np.abs(act(-r)))
    bound = np.linalg.norm(block.W_down, 2) * np.linalg.norm(block.W_up, 2) * xn * omega
    ax_norm = float(np.linalg.norm(Ax))
    return {
        "x": x.tolist(),
        "Ax_norm": ax_norm,
        "steps": [
            {"t": float(ti), "skip_gap": float(g), "gate_modulus": float(w), "bound": float(b),
             "separation": float(ax_norm - g - b)}
            for ti, g, w, b in zip(t, gaps, omega, bound, strict=True)
        ],
        "note": "skip_gap = ‖f(tx)/t - Ax‖ → 0 while ‖Ax‖ stays; bound ≥ ‖h(tx)/t‖ for every "
                "residual-free h with ‖V_up‖₂, ‖V_down‖₂, ‖V_gate‖₂ at most the block's "
                "(‖V_down‖₂‖V_up‖₂‖x‖·max_{|z|≤t‖V_gate‖₂‖x‖}|g(z)|), → 0 for every fixed h; "
                "separation > 0 rules out all such h at that t",
    }


def absorbing_block(block: Block, S: Sequence[int]) -> Block:
    """The sign-flip construction of index_set_sufficient for W_down[:,S] W_up[S,:] = −A.

    V_up = D W_up, c_up = D b_up, V_down = W_down, c_down = b_down + W_down[:,S] b_up[S], with
    D = diag(−1 on S, +1 off S): since σ(u) = u + σ(−u), the flipped units add
    W_down[:,S](W_up[S,:] x + b_up[S]) = −A x + W_down[:,S] b_up[S], cancelling the skip.
    """
    if not block.activation.odd_part_linear:
        raise AbsorbError(f"{block.activation.name} is not odd-part-linear; no sign-flip "
                          "construction")
    idx = np.asarray(S, dtype=np.intp)
    D = np.ones(block.n)
    D[idx] = -1.0
    c_up = None if block.b_up is None else D * block.b_up
    c_down = block.b_down
    if block.b_up is not None:
        shift = block.W_down[:, idx] @ block.b_up[idx]
        c_down = shift if c_down is None else c_down + shift
    return Block(block.activation, D[:, None] * block.W_up, block.W_down.copy(),
                 b_up=c_up, b_down=c_down, residual=False)


def _verify(block: Block, h: Block, rng: np.random.Generator) -> dict[str, object]:
    """max |h(X) − f(X)| (absolute and relative to max |f(X)|) on Gaussian X at each scale."""
    rows = []
    for scale in VERIFY_SCALES:
        X = scale * rng.standard_normal((VERIFY_POINTS, block.d))
        fX = block(X)
        err = float(np.max(np.abs(h(X) - fX)))
        rows.append({"scale": scale, "max_abs_error": err,
                     "relative_error": err / max(float(np.max(np.abs(fX))), np.finfo(float).tiny)})
    return {"max_abs_error": max(float(r["max_abs_error"]) for r in rows),
            "max_relative_error": max(float(r["relative_error"]) for r in rows),
            "errors_by_scale": rows, "points_per_scale": VERIFY_POINTS}


def _weights_json(h: Block) -> dict[str, object]:
    out: dict[str, object] = {"W_up": h.W_up.tolist(), "W_down": h.W_down.tolist()}
    for key in ("W_gate", "b_up", "b_down"):
        value = getattr(h, key)
        if value is not None:
            out[key] = value.tolist()
    return out


def _evidence(block: Block, rng: np.random.Generator, run: bool) -> dict[str, object] | None:
    if not run:
        return None
    evidence = fit_residual_free(block, restarts=EVIDENCE_RESTARTS, steps=EVIDENCE_STEPS,
                                 samples=EVIDENCE_SAMPLES, rng=rng).to_json()
    evidence["note"] = EVIDENCE_NOTE
    return evidence


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
    norms = np.linalg.norm(W, axis=1)
    if not np.all(norms > 0):
        return False
    U = W / norms[:, None]
    # 1 - |cos(u_i, u_j)| < τ  ⟺  ‖u_i − s u_j‖ < ε = √(2τ) for a sign s, and then the
    # projections p = |U r| on a unit r differ by less than ε. So sorting p and comparing only
    # the pairs within ε of each other misses no collinear pair, in O(nd + n log n) instead of
    # the O(n²d) Gram matrix; the Gram matrix remains the fallback when p clusters.
    eps = np.sqrt(2.0 * COLLINEAR_TOL)
    r = np.random.default_rng(0).standard_normal(U.shape[1])
    proj = np.abs(U @ (r / np.linalg.norm(r)))
    order = np.argsort(proj)
    p = proj[order]
    ends = np.searchsorted(p, p + eps, side="right")
    counts = ends - np.arange(p.size) - 1
    if counts.sum() > 8 * p.size:
        C = np.abs(U @ U.T)
        np.fill_diagonal(C, 0.0)
        return bool(np.all(C < 1.0 - COLLINEAR_TOL))
    first = np.repeat(np.arange(p.size), counts)
    second = first + 1 + (np.arange(first.size) - np.repeat(np.cumsum(counts) - counts, counts))
    cos = np.einsum("ij,ij->i", U[order[first]], U[order[second]])
    return bool(np.all(np.abs(cos) < 1.0 - COLLINEAR_TOL))


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


def _chain(ids: Sequence[str]) -> dict[str, object]:
    """``theorem`` (the first ID), ``chain`` and the Lean declarations of every link."""
    return {"theorem": ids[0] if ids else None, "chain": list(ids),
            "lean": [name for tid in ids for name in get_theorem(tid).lean]}


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


def stored_weights(block: Block) -> tuple[Any, Any, Any]:
    """(W_up, W_down, A or None for the identity) as stored: Fractions for exact input,
    float64 otherwise."""
    ex = block.exact
    if ex is not None:
        A_q = ex.A_skip if ex.A_skip is not None else (
            None if block.A_skip is None else rounding_free(block.A_skip))
        return ex.W_up, ex.W_down, A_q
    return block.W_up, block.W_down, block.A_skip


def rounding_free(M: Array) -> ObjectArray:
    """Float entries as their exact dyadic rationals."""
    out: ObjectArray = np.vectorize(Fraction, otypes=[object])(M)
    return out


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
        None if block.b_up is None else rounding_free(block.b_up))
    b_down = ex.b_down if ex.b_down is not None else (
        None if block.b_down is None else rounding_free(block.b_down))
    if b_up is not None:
        out["b_up"] = D * b_up
        shift = ex.W_down[:, idx] @ b_up[idx] if idx else np.zeros(block.d, dtype=object)
        out["b_down"] = shift if b_down is None else b_down + shift
    elif b_down is not None:
        out["b_down"] = b_down
    return out


def _absorbed(block: Block, S: list[int], result: certificates.IndexSetSearch,
              rng: np.random.Generator, base: dict[str, object]) -> dict[str, object]:
    h = absorbing_block(block, S)
    ex = block.exact
    out = {**base, "verdict": "absorbed", **_chain(["index_set_sufficient"]),
           "reason": f"W_down[:,S] W_up[S,:] = -A for an index set S of size {len(S)}; "
                     "the sign-flip construction absorbs the skip",
           "S": S, "absorbing_block": (exact_absorbing_weights(block, S) if ex is not None
                                       else _weights_json(h)),
           **_verify(block, h, rng), "index_set_search": result.to_json()}
    W_up, W_down, A = stored_weights(block)
    out["condition_exact"] = check_index_set(W_up, W_down, S, A)
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
    check = _verify(fixed, h, rng)
    if not rep.within_rounding:
        return {**base, "verdict": "undetermined", **_chain([]),
                "reason": f"an index set meets the condition within the search tolerance but "
                          f"not within the rounding bound for tol = {store.tol:.3g}",
                "S": S, "rounding": rep.to_json(), "unmet_hypotheses": [],
                "index_set_search": result.to_json()}
    exactly = ("the stored weights themselves admit no exact index set (dual certificate "
               f"below, margin {float(result.dual.check.margin):.3g}): the stored block is one "
               "rounding away from absorbable, not absorbable itself"
               if result.dual is not None else
               "the condition fails on the stored weights by less than their precision")
    return {**base, "verdict": "absorbable_up_to_rounding", **_chain(["index_set_sufficient"]),
            "stored_weights_exactly": exactly,
            "certificate": _certificate(result, float(np.linalg.norm(block.skip_matrix()))),
            "reason": f"W_down[:,S] W_up[S,:] = -A holds up to the {dtype} storage precision "
                      f"(|S| = {len(S)}): a change of W_down[:,S] of relative size "
                      f"{rep.relative_change:.3g} ({rep.in_roundoffs:.3g} unit roundoffs) "
                      "makes it exact, and the sign-flip construction then absorbs the skip",
            "S": S, "rounding": rep.to_json(),
            "condition_exact": False,
            "corrected_absorbing_block": _weights_json(h),
            "corrected_construction_check": check,
            "index_set_search": result.to_json()}


def _confirm_exactly(block: Block) -> certificates.IndexSetSearch | None:
    """The exhaustive search again, in exact arithmetic on the stored (dyadic) values, when its
    plan fits; None when it would not."""
    W_up, W_down, A = stored_weights(block)
    res = certificates.find_index_set(rounding_free(np.asarray(W_up, dtype=np.float64))
                                      if block.exact is None else W_up,
                                      rounding_free(np.asarray(W_down, dtype=np.float64))
                                      if block.exact is None else W_down,
                                      None if A is None else (
                                          rounding_free(np.asarray(A, dtype=np.float64))
                                          if block.exact is None else A),
                                      dual=False)
    return res if res.status != "limit" else None


def _decide_index_set(block: Block, rng: np.random.Generator, run_search: bool,
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
            out = _absorbed(block, S0, pre, rng, base)
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
        if exact_ok or (store.dtype == "float64" and resid <= store.tol * a_max):
            return _absorbed(block, S, result, rng, base)
        return _up_to_rounding(block, S, result, rng, base, store)
    cert = _certificate(result, A_norm)
    if result.status == "limit":
        return {**base, "verdict": "undetermined", **_chain([]),
                "reason": "the exact index-set search was stopped by a size limit",
                "certificate": cert, "unmet_hypotheses": [],
                "search": _evidence(block, rng, run_search)}
    unmet = necessary_hypotheses(block)
    if unmet:
        return {**base, "verdict": "undetermined", **_chain([]),
                "reason": "no index set exists, but index_set_necessary does not apply",
                "certificate": cert, "unmet_hypotheses": unmet,
                "search": _evidence(block, rng, run_search)}
    chain = theorem_chain(block)
    if result.dual is not None:
        proof = "dual certificate Y, " + result.dual.check.how
        chain = [*chain, "relaxation_certificate"]
    elif result.method == "rank":
        proof = "rank: rank(A) > n"
    else:
        confirm = result if result.exact else _confirm_exactly(block)
        if confirm is None or confirm.status != "none":
            return {**base, "verdict": "undetermined", **_chain([]),
                    "reason": "the floating-point search found no index set, but no dual "
                              "certificate was found and the exact search did not confirm it "
                              "within its budget",
                    "certificate": cert, "unmet_hypotheses": [],
                    "search": _evidence(block, rng, run_search)}
        proof = ("exhaustive search in exact rational arithmetic on the stored weights "
                 f"({confirm.method}); no dual certificate: " + "; ".join(result.notes))
        cert["exact_search"] = confirm.to_json()
    cert["proof"] = proof
    cert["theorem"] = ("no index set exists (" + proof + "); "
                       + " + ".join(chain) + " turn that into 'not absorbable'")
    return {**base, "verdict": "not_absorbed", **_chain(chain),
            "reason": "no index set exists, and " + " + ".join(theorem_chain(block))
                      + (" turn" if len(theorem_chain(block)) > 1 else " turns")
                      + " that into 'not absorbable'",
            "certificate": cert}


def _decide_linear(block: Block, rng: np.random.Generator,
                   base: dict[str, object]) -> dict[str, object]:
    """σ = id: f(x) = L x + c with L = A + W_down W_up; residual-free blocks give rank ≤ n."""
    L = block.skip_matrix() + block.W_down @ block.W_up
    U, s, Vt = np.linalg.svd(L)
    if block.exact is not None:
        ex = block.exact
        A_ex = ex.A_skip if ex.A_skip is not None else np.eye(block.d, dtype=int).astype(object)
        rank = rational_rank(A_ex + ex.W_down @ ex.W_up)
    else:
        rank = int(np.sum(s > max(L.shape) * np.finfo(float).eps * (s[0] if s.size else 0.0)))
    facts = {"rank": rank, "singular_values": s.tolist(), "exact": block.exact is not None}
    if rank > block.n:
        return {**base, "verdict": "not_absorbed", **_theorem(None),
                "reason": f"the block is linear with rank {rank} > n = {block.n}; every "
                          "residual-free linear block of width n has rank <= n",
                "certificate": facts}
    r = rank
    root = np.sqrt(s[:r])
    V_up = np.zeros((block.n, block.d))
    V_down = np.zeros((block.d, block.n))
    V_up[:r] = root[:, None] * Vt[:r]
    V_down[:, :r] = U[:, :r] * root
    c_down = None
    if block.has_biases:
        c_down = block.b_down if block.b_down is not None else np.zeros(block.d)
        if block.b_up is not None:
            c_down = c_down + block.W_down @ block.b_up
    h = Block(block.activation, V_up, V_down,
              b_up=np.zeros(block.n) if block.has_biases else None, b_down=c_down,
              residual=False)
    weights = _weights_json(h) if block.exact is None else _exact_linear_weights(block)
    return {**base, "verdict": "absorbed", **_theorem(None),
            "reason": f"the block is linear with rank {rank} <= n = {block.n}; a rank "
                      "factorization of A + W_down W_up absorbs it"
                      + (" (over Q, exact)" if block.exact is not None else " (SVD)"),
            "certificate": facts, "S": None, "absorbing_block": weights,
            **_verify(block, h, rng)}


def _exact_linear_weights(block: Block) -> dict[str, object]:
    """L = A + W_down W_up = C R over ℚ (R: the nonzero rows of rref(L), C: L's pivot
    columns), padded with zero units to width n; c_down = b_down + W_down b_up."""
    ex = block.exact
    assert ex is not None  # only for exact blocks
    A_q = ex.A_skip if ex.A_skip is not None else rounding_free(block.skip_matrix())
    L = A_q + ex.W_down @ ex.W_up
    red, pivots = rref([list(row) for row in L])
    r = len(pivots)
    zero = Fraction(0)
    V_up = np.full((block.n, block.d), zero, dtype=object)
    V_down = np.full((block.d, block.n), zero, dtype=object)
    if r:
        V_up[:r] = np.array(red[:r], dtype=object)
        V_down[:, :r] = L[:, pivots]
    out: dict[str, object] = {"W_up": V_up, "W_down": V_down}
    if block.has_biases:
        b_up = ex.b_up if ex.b_up is not None else (
            None if block.b_up is None else rounding_free(block.b_up))
        b_down = ex.b_down if ex.b_down is not None else (
            None if block.b_down is None else rounding_free(block.b_down))
        c_down = np.full(block.d, zero, dtype=object) if b_down is None else b_down
        if b_up is not None:
            c_down = c_down + ex.W_down @ b_up
        out["b_up"] = np.full(block.n, zero, dtype=object)
        out["b_down"] = c_down
    return out


def decide(block: Block, *, rng: np.random.Generator, search: bool = True,
           tol: float | None = None, candidate: Sequence[int] | None = None
           ) -> dict[str, object]:
    """The ``check`` object of DESIGN.md for one skip block (see the module docstring).

    ``tol`` overrides the storage tolerance (default: the unit roundoff of the detected
    storage format; FLOAT64_TOL for float64); ``candidate`` is an index set to check first.
    """
    if tol is not None and not (tol > 0 and np.isfinite(tol)):
        raise AbsorbError(f"tol must be positive and finite, got {tol}")
    if not block.residual:
        raise AbsorbError("decide needs a skip block (residual=True)")
    act = block.activation
    A = block.skip_matrix()
    base: dict[str, object] = {"activation": act.name, "d": block.d, "n": block.n,
                               "biases": block.has_biases,
                               "skip": "identity" if block.A_skip is None else "matrix",
                               "exact": block.exact is not None, "scope": SCOPE}
    if not np.any(A):
        h = Block(act, block.W_up, block.W_down, block.W_gate, block.b_up, block.b_down,
                  residual=False)
        return {**base, "verdict": "absorbed", **_theorem(None),
                "reason": "A = 0: the block is already residual-free", "S": None,
                "absorbing_block": _weights_json(h), **_verify(block, h, rng)}
    if act.name == "identity":
        return _decide_linear(block, rng, base)
    if act.degree is not None and act.degree != 1.0 and not block.has_biases:
        return {**base, "verdict": "impossible", **_theorem("degree"),
                "reason": f"every {act.name} block is homogeneous of degree {act.degree:g} != 1 "
                          "and A != 0",
                "witness": degree_witness(block, _point(A, rng))}
    if act.gated and act.g0 == 0.0 and not block.has_biases:
        return {**base, "verdict": "impossible", **_theorem("linearization"),
                "reason": f"gated with g = {act.gate}, g(0) = 0, g continuous, and A != 0",
                "witness": linearization_witness(block, _point(A, rng), LINEARIZATION_TS)}
    if act.odd_part_linear:
        return _decide_index_set(block, rng, search, base, tol, candidate)
    if act.degree is not None or act.g0 == 0.0:
        unmet = ["no biases (the degree and linearization theorems assume none)"]
    elif act.gated:
        unmet = [f"g(0) = 0 (gate {act.gate} has g(0) = {act.g0:g})"]
    else:
        unmet = [f"{act.name} is neither homogeneous of degree k != 1, gated with g(0) = 0, "
                 "nor odd-part-linear"]
    return {**base, "verdict": "undetermined", **_theorem(None),
            "reason": "no theorem applies", "unmet_hypotheses": unmet,
            "search": _evidence(block, rng, search)}
