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
from typing import Any

import numpy as np

from absorb import certificates
from absorb.blocks import Array, Block, ObjectArray
from absorb.errors import AbsorbError
from absorb.manifest import get_theorem
from absorb.search import fit_residual_free
from absorb.weights import rational_rank, skip_is_invertible

LINEARIZATION_TS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
VERIFY_SCALES = (1e-2, 1.0, 1e2)
VERIFY_POINTS = 256
# 1 - |cos| below this counts as collinear for float weights (an angle of about 1.4e-5 rad).
COLLINEAR_TOL = 1e-10
# Small, fast search settings for the evidence attached to `undetermined` verdicts.
EVIDENCE_RESTARTS, EVIDENCE_STEPS, EVIDENCE_SAMPLES = 2, 300, 512
# Measured: at small sizes a generic (provably non-absorbable) ReLU block and a planted
# absorbable one reach similar fit errors (about 1 %), so the fit decides nothing by itself.
EVIDENCE_NOTE = ("weak numerical evidence: the best fit of a residual-free block of the same "
                 "width; a small error does not prove absorbability and a large one does not "
                 "prove impossibility")


def _theorem(tid: str | None) -> dict[str, object]:
    """The ``theorem``/``lean`` fields; Lean names come from the manifest only."""
    if tid is None:
        return {"theorem": None, "lean": []}
    return {"theorem": tid, "lean": list(get_theorem(tid).lean)}


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
    """The hypotheses of index_set_necessary that this block does NOT meet (empty: all hold)."""
    unmet = []
    if block.activation.name not in ("relu", "gelu"):
        unmet.append(f"activation relu or gelu (index_set_necessary is proved for those only; "
                     f"got {block.activation.name})")
    if block.d < 2:
        unmet.append("d >= 2")
    if block.n < block.d:
        unmet.append("n >= d")
    if block.has_biases:
        unmet.append("no biases")
    exact = block.exact is not None
    W_up: Any = block.exact.W_up if block.exact is not None else block.W_up
    W_down: Any = block.exact.W_down if block.exact is not None else block.W_down
    if not noncollinear_rows(W_up, exact):
        unmet.append("rows of W_up nonzero and pairwise non-collinear")
    if not np.all(np.any(W_down != 0, axis=0)):
        unmet.append("columns of W_down nonzero")
    if block.A_skip is not None and not skip_is_invertible(
        block.A_skip, None if block.exact is None else block.exact.A_skip
    ):
        unmet.append("identity skip or invertible A (reduction)")
    return unmet


def _certificate(result: certificates.IndexSetSearch) -> dict[str, object]:
    rel = result.relaxation
    return {
        "relaxation_residual": rel.residual,
        "relaxation_residual_exact": (None if rel.residual_exact is None
                                      else str(rel.residual_exact)),
        "gram_rank": rel.rank,
        "tolerance": rel.tolerance,
        "method": result.method,
        "exact": result.exact,
        "detail": result.detail,
    }


def _decide_index_set(block: Block, rng: np.random.Generator, run_search: bool,
                      base: dict[str, object]) -> dict[str, object]:
    ex = block.exact
    W_up: Any = ex.W_up if ex is not None else block.W_up
    W_down: Any = ex.W_down if ex is not None else block.W_down
    A: Any = ex.A_skip if ex is not None and ex.A_skip is not None else block.A_skip
    result = certificates.find_index_set(W_up, W_down, A)
    if result.status == "found":
        assert result.S is not None  # "found" always carries S (certificates' contract)
        S = list(result.S)
        h = absorbing_block(block, S)
        out = {**base, "verdict": "absorbed", **_theorem("index_set_sufficient"),
               "reason": f"W_down[:,S] W_up[S,:] = -A for an index set S of size {len(S)}; "
                         "the sign-flip construction absorbs the skip",
               "S": S, "absorbing_block": _weights_json(h), **_verify(block, h, rng),
               "index_set_search": result.to_json()}
        if ex is not None:
            prod: ObjectArray = W_down[:, S] @ W_up[S, :]
            target = -(A if A is not None else np.eye(block.d, dtype=int))
            out["condition_exact"] = bool(np.all(prod == target))
        return out
    cert = _certificate(result)
    if result.status == "limit":
        return {**base, "verdict": "undetermined", **_theorem(None),
                "reason": "the exact index-set search was stopped by a size limit",
                "certificate": cert, "unmet_hypotheses": [],
                "search": _evidence(block, rng, run_search)}
    unmet = necessary_hypotheses(block)
    if not unmet:
        cert["theorem"] = ("index_set_necessary: with d >= 2, nondegenerate weights and no "
                           "biases, an absorbable relu/gelu block has an index set; none exists")
        return {**base, "verdict": "not_absorbed", **_theorem("index_set_necessary"),
                "reason": "no index set exists, and index_set_necessary turns that into "
                          "'not absorbable'",
                "certificate": cert}
    return {**base, "verdict": "undetermined", **_theorem(None),
            "reason": "no index set exists, but index_set_necessary does not apply",
            "certificate": cert, "unmet_hypotheses": unmet,
            "search": _evidence(block, rng, run_search)}


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
    return {**base, "verdict": "absorbed", **_theorem(None),
            "reason": f"the block is linear with rank {rank} <= n = {block.n}; a rank "
                      "factorization (SVD) of A + W_down W_up absorbs it",
            "certificate": facts, "S": None, "absorbing_block": _weights_json(h),
            **_verify(block, h, rng)}


def decide(block: Block, *, rng: np.random.Generator, search: bool = True) -> dict[str, object]:
    """The ``check`` object of DESIGN.md for one skip block (see the module docstring)."""
    if not block.residual:
        raise AbsorbError("decide needs a skip block (residual=True)")
    act = block.activation
    A = block.skip_matrix()
    base: dict[str, object] = {"activation": act.name, "d": block.d, "n": block.n,
                               "biases": block.has_biases,
                               "skip": "identity" if block.A_skip is None else "matrix",
                               "exact": block.exact is not None}
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
        return _decide_index_set(block, rng, search, base)
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
