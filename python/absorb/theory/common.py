"""Shared pieces of the verdicts: the subject, the sign-flip construction (numerical and exact)
and its check, weights as JSON, search evidence, the stored (exact) weights."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from absorb.blocks import Array, Block
from absorb.errors import AbsorbError
from absorb.exact import as_fractions
from absorb.verdicts import Subject

CHECK_SCALES = (1e-2, 1.0, 1e2)
CHECK_POINTS = 256
SCOPE = ("the verdict is about the abstract block A x + MLP(x), as in the paper; a real "
         "transformer layer also holds a LayerNorm, which this question leaves aside")
#: Numerical evidence for an ``undetermined`` verdict, given by the caller (the verdicts never
#: run a fit themselves): ``absorb.fits.evidence.fit_evidence``, or a test's stand-in.
Evidence = Callable[[Block, np.random.Generator], dict[str, object]]


def subject(block: Block) -> Subject:
    """The :class:`~absorb.verdicts.Subject` of a skip block."""
    return Subject(block.activation.name, block.d, block.n, block.has_biases,
                   "identity" if block.A_skip is None else "matrix", block.exact is not None,
                   extra={"scope": SCOPE})


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
        # an exact entry beyond the float range is ±inf here (inf·0 = NaN): such an h is
        # never checked numerically, the exact construction is what is reported
        with np.errstate(invalid="ignore", over="ignore"):
            shift = block.W_down[:, idx] @ block.b_up[idx]
        c_down = shift if c_down is None else c_down + shift
    return Block(block.activation, D[:, None] * block.W_up, block.W_down.copy(),
                 b_up=c_up, b_down=c_down, residual=False)


#: Why a float-only step (numerical check, float witness, search) is not run on exact input.
BEYOND_FLOAT = "an exact entry lies beyond the float range"
#: The construction check in its place.
CHECK_NOT_RUN: dict[str, object] = {"numerical_check": f"not run: {BEYOND_FLOAT}"}


def float_witness_missing(theorem: str) -> str:
    """The reason of ``undetermined`` when ``theorem`` applies but its witness, evaluated in
    floating point, cannot be on a ±inf float view."""
    return f"{theorem} applies, but its witness is evaluated in floating point and {BEYOND_FLOAT}"


def float_view_finite(block: Block) -> bool:
    """Whether every float array of the block is finite (false only for exact input with an
    entry beyond the float range, which the reader keeps as ±inf beside its rational)."""
    return all(bool(np.all(np.isfinite(m))) for m in (
        block.W_up, block.W_down, block.W_gate, block.b_up, block.b_down, block.A_skip)
        if m is not None)


def check_construction(block: Block, h: Block, rng: np.random.Generator) -> dict[str, object]:
    """The numerical check of a construction h of ``block`` (the verdict's ``check``):
    max |h(X) − f(X)| (absolute and relative to max |f(X)|) on Gaussian X at each scale.
    ("verify" is kept for the Lean build, ``absorb verify``.) Not run when an exact entry lies
    beyond the float range (its float view is ±inf): the check would only measure NaN, and
    the verdict rests on the exact identity, never on this check."""
    if not float_view_finite(block):
        return dict(CHECK_NOT_RUN)
    return check_maps(block, h, block.d, rng)


def check_maps(f: Callable[[Array], Array], h: Callable[[Array], Array], d: int,
               rng: np.random.Generator) -> dict[str, object]:
    """:func:`check_construction` for any maps of ℝ^d (batches as rows), e.g. stacks."""
    rows = []
    for scale in CHECK_SCALES:
        X = scale * rng.standard_normal((CHECK_POINTS, d))
        fX = f(X)
        err = float(np.max(np.abs(h(X) - fX)))
        rows.append({"scale": scale, "max_abs_error": err,
                     "relative_error": err / max(float(np.max(np.abs(fX))), np.finfo(float).tiny)})
    return {"max_abs_error": max(float(r["max_abs_error"]) for r in rows),
            "max_relative_error": max(float(r["relative_error"]) for r in rows),
            "errors_by_scale": rows, "points_per_scale": CHECK_POINTS}


def weights_json(h: Block) -> dict[str, object]:
    out: dict[str, object] = {"W_up": h.W_up.tolist(), "W_down": h.W_down.tolist()}
    for key in ("W_gate", "b_up", "b_down"):
        value = getattr(h, key)
        if value is not None:
            out[key] = value.tolist()
    return out


def attached_evidence(block: Block, rng: np.random.Generator, evidence: Evidence | None
             ) -> dict[str, object] | None:
    """The caller's evidence on ``block`` (``evidence(block, rng)``), None when none was asked;
    not run on a block whose float view is not finite (a numerical fit of ±inf weights)."""
    if evidence is not None and not float_view_finite(block):
        return {"note": f"not run: a numerical search needs float weights, and {BEYOND_FLOAT}"}
    return None if evidence is None else evidence(block, rng)


def stored_biases(block: Block) -> tuple[Any, Any]:
    """(b_up, b_down) as stored: Fractions for exact input, float64 otherwise, None if absent."""
    ex = block.exact
    b_up = ex.b_up if ex is not None and ex.b_up is not None else block.b_up
    b_down = ex.b_down if ex is not None and ex.b_down is not None else block.b_down
    return b_up, b_down


def stored_block_json(block: Block) -> dict[str, object]:
    """The block's own weights as stored (the rational originals for exact input)."""
    ex = block.exact
    out: dict[str, object] = {}
    for key in ("W_up", "W_down", "W_gate", "b_up", "b_down"):
        value = getattr(ex, key) if ex is not None else None
        value = getattr(block, key) if value is None else value
        if value is not None:
            out[key] = value
    return out


def _exactly(v: Fraction) -> float | Fraction:
    """The float of v when it is exactly v, else v itself (written as "p/q")."""
    f = float(v)
    return f if Fraction(f) == v else v


def exact_absorbing_weights(block: Block, S: Sequence[int]) -> dict[str, object]:
    """The sign-flip construction on the stored values, exactly: V_up = D W_up, V_down =
    W_down, c_up = D b_up, c_down = b_down + W_down[:,S] b_up[S] (D = diag(−1 on S, +1 off)).

    Sign flips and copies are exact in floating point; only c_down needs rational arithmetic,
    and its entries are written as floats where they are exactly floats, else as "p/q".
    """
    W_up, W_down, _ = stored_weights(block)
    b_up, b_down = stored_biases(block)
    idx = [int(i) for i in S]
    exact = block.exact is not None
    D = np.ones(block.n, dtype=object if exact else np.float64)
    D[idx] = -1
    out: dict[str, object] = {"W_up": D[:, None] * W_up, "W_down": W_down.copy()}
    if b_up is not None:
        out["b_up"] = D * b_up
        Wd = as_fractions(np.asarray(W_down)[:, idx]) if idx else None
        shift = (Wd @ as_fractions(np.asarray(b_up)[idx]) if Wd is not None
                 else np.full(block.d, Fraction(0), dtype=object))
        c_down = shift if b_down is None else as_fractions(b_down) + shift
        out["b_down"] = c_down if exact else np.array([_exactly(v) for v in c_down],
                                                      dtype=object)
    elif b_down is not None:
        out["b_down"] = b_down
    return out


def stored_weights(block: Block) -> tuple[Any, Any, Any]:
    """(W_up, W_down, A or None for the identity) as stored: Fractions for exact input,
    float64 otherwise."""
    ex = block.exact
    if ex is not None:
        A_q = ex.A_skip if ex.A_skip is not None else (
            None if block.A_skip is None else as_fractions(block.A_skip))
        return ex.W_up, ex.W_down, A_q
    return block.W_up, block.W_down, block.A_skip
