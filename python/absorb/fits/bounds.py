"""Theorem-derived lower bounds on the error of every residual-free fit, on the sampled points.

The held-out set of a scale s is a set of pairs P_s = {x, 2x : x ∈ Z_s}; the fit reports
the relative errors ‖e(P_s)‖_F / ‖f(P_s)‖_F ("relative_error") and
max_p ‖e(p)‖ / max_p ‖f(p)‖ ("sup_relative_error"), e = f − h. Bounds of the same quantities:

**degree** (no biases, f = A x + M(x) with M homogeneous of degree k ≠ 1; h any bias-free
residual-free block of the kind, any width): h(2x) = 2^k h(x), so e(2x) − 2^k e(x) = (2 − 2^k) A x.
Hence max(‖e(x)‖, ‖e(2x)‖) ≥ |2 − 2^k| ‖Ax‖ / (1 + 2^k) (THEORY.md, "Lower bound for fits"),
and by Cauchy–Schwarz |2 − 2^k| ‖Ax‖ ≤ ‖e(2x)‖ + 2^k ‖e(x)‖ ≤ √(1 + 4^k) (‖e(x)‖² + ‖e(2x)‖²)^½,
which summed over the pairs gives ‖e(P_s)‖_F ≥ |2 − 2^k| ‖A Z_s‖_F / √(1 + 4^k).

**linearization** (gated, g(0) = 0, no biases): every residual-free gated h has
‖h(p)‖ ≤ ‖V_down‖₂ ‖V_up‖₂ ‖p‖ ω(‖V_gate‖₂ ‖p‖), ω(r) = max(|g(r)|, |g(−r)|) (as in
:func:`absorb.theory.linearization_witness`), so ‖e(p)‖ ≥ (‖f(p)‖ − that)₊ at every point. Two
versions: with the fit's own norms (valid for that fit, whatever it is) and with the target's
norms (valid for every h whose three norms are at most the target's; it applies to the fit only
when the fit's norms are within them).

A fit below a valid bound is a contradiction: it would refute the theorem or reveal a bug.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from absorb.blocks import Block
from absorb.fits.units import Array

__all__ = ["REL_TOL", "contradictions", "degree_bound", "linearization_bound", "lower_bounds"]

#: A fit is below a bound when error < bound · (1 − REL_TOL) (float round-off in both numbers).
REL_TOL = 1e-8

Held = Sequence[tuple[float, Array]]  # (scale, Z_s); the points are Z_s and 2 Z_s


def pairs(Z: Array) -> Array:
    """The held-out points of one scale: Z and 2Z."""
    return np.concatenate([Z, 2.0 * Z])


def _rows(Y: Array) -> Array:
    return np.asarray(np.linalg.norm(Y, axis=1), dtype=np.float64)


def degree_bound(target: Block, held: Held) -> dict[str, object] | None:
    """The degree bound per scale (None when the theorem's hypotheses fail)."""
    k = target.activation.degree
    if k is None or k == 1.0 or target.has_biases or not target.residual:
        return None
    A = target.skip_matrix()
    if not np.any(A):
        return None
    gap = abs(2.0 - 2.0**k)
    per_scale: dict[float, dict[str, float]] = {}
    for s, Z in held:
        fP = _rows(target(pairs(Z)))
        Ax = _rows(Z @ A.T)
        per_scale[s] = {
            "relative_error": gap * float(np.linalg.norm(Ax)) / math.sqrt(1 + 4.0**k)
            / float(np.linalg.norm(fP)),
            "sup_relative_error": gap * float(np.max(Ax)) / (1 + 2.0**k) / float(np.max(fP)),
        }
    return {"theorem": "degree", "applies_to_fit": True, "per_scale": per_scale,
            "statement": f"e(2x) - 2^k e(x) = (2 - 2^k) A x for every bias-free residual-free "
                         f"{target.activation.name} block (k = {k:g}), any width: "
                         "max(|e(x)|, |e(2x)|) >= |2 - 2^k| |Ax| / (1 + 2^k)"}


def _norms(block: Block) -> tuple[float, float, float]:
    assert block.W_gate is not None  # only called for gated blocks
    return (float(np.linalg.norm(block.W_up, 2)), float(np.linalg.norm(block.W_down, 2)),
            float(np.linalg.norm(block.W_gate, 2)))


def _linear_limit_bound(target: Block, norms: tuple[float, float, float], held: Held
                        ) -> dict[float, dict[str, float]]:
    up, down, gate = norms
    g = target.activation
    out = {}
    for s, Z in held:
        P = pairs(Z)
        fP = _rows(target(P))
        pn = _rows(P)
        r = gate * pn
        omega = np.maximum(np.abs(g(r)), np.abs(g(-r)))
        lower = np.maximum(fP - down * up * pn * omega, 0.0)
        out[s] = {"relative_error": float(np.linalg.norm(lower) / np.linalg.norm(fP)),
                  "sup_relative_error": float(np.max(lower) / np.max(fP))}
    return out


def linearization_bound(target: Block, fit: Block, held: Held) -> list[dict[str, object]]:
    """The linearization bounds per scale: for the fit's own norms and for the target's."""
    act = target.activation
    if not act.gated or act.g0 != 0.0 or target.has_biases or not target.residual:
        return []
    fit_norms, target_norms = _norms(fit), _norms(target)
    within = all(a <= b for a, b in zip(fit_norms, target_norms, strict=True))
    text = ("|h(p)| <= |V_down| |V_up| |p| max_{|z| <= |V_gate| |p|} |g(z)| for every "
            "residual-free gated h (g(0) = 0), so |e(p)| >= |f(p)| - that")
    return [
        {"theorem": "linearization", "norms": "the fit's own", "applies_to_fit": True,
         "operator_norms": dict(zip(("V_up", "V_down", "V_gate"), fit_norms, strict=True)),
         "per_scale": _linear_limit_bound(target, fit_norms, held), "statement": text},
        {"theorem": "linearization", "norms": "the target's (every h with norms at most these)",
         "applies_to_fit": within,
         "operator_norms": dict(zip(("V_up", "V_down", "V_gate"), target_norms, strict=True)),
         "per_scale": _linear_limit_bound(target, target_norms, held), "statement": text},
    ]


def lower_bounds(target: Block, fit: Block, held: Held) -> list[dict[str, object]]:
    """Every bound that applies to residual-free fits of ``target`` (empty: none known)."""
    deg = degree_bound(target, held)
    return ([deg] if deg is not None else []) + linearization_bound(target, fit, held)


def contradictions(bounds: Sequence[dict[str, object]],
                   errors: dict[str, dict[float, float]]) -> list[dict[str, object]]:
    """Every (bound, scale, metric) where the fit's error is below a bound that applies to it.

    ``errors`` maps a metric ("relative_error", "sup_relative_error") to its value per scale.
    """
    found = []
    for b in bounds:
        if not b["applies_to_fit"]:
            continue
        per_scale = b["per_scale"]
        assert isinstance(per_scale, dict)
        for s, row in per_scale.items():
            for metric, bound in row.items():
                err = errors[metric][s]
                if err < bound * (1 - REL_TOL):
                    found.append({"theorem": b["theorem"], "scale": s, "metric": metric,
                                  "error": err, "bound": bound,
                                  "norms": b.get("norms")})
    return found
