"""The sign-flip construction of index_set_sufficient (numerical and exact) and the numerical
check of a construction against the block it absorbs.

For an index set S with W_down[:,S] W_up[S,:] = −A, flipping the signs of the units in S
absorbs the skip: since σ(u) = u + σ(−u) for an odd-part-linear σ, the flipped units add
W_down[:,S](W_up[S,:] x + b_up[S]) = −A x + W_down[:,S] b_up[S].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from absorb.blocks import (
    INPUT_SCALES,
    Array,
    Block,
)
from absorb.errors import AbsorbError

CHECK_POINTS = 256
#: Why a float-only step (numerical check, float witness, search) is not run on exact input.
BEYOND_FLOAT = "an exact entry lies beyond the float range"
#: The construction check in its place.
CHECK_NOT_RUN: dict[str, object] = {"numerical_check": f"not run: {BEYOND_FLOAT}"}


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
    W_up, W_down, _ = block.stored_weights
    b_up, b_down = block.stored_biases
    idx = [int(i) for i in S]
    exact = block.exact is not None
    D = np.ones(block.n, dtype=object if exact else np.float64)
    D[idx] = -1
    out: dict[str, object] = {"W_up": D[:, None] * W_up, "W_down": W_down.copy()}
    if b_up is not None:
        out["b_up"] = D * b_up
        q_up, q_down = block.rational_biases
        assert q_up is not None  # b_up is present: so is its rational form
        shift = (block.rational_weights[1][:, idx] @ q_up[idx] if idx
                 else np.full(block.d, Fraction(0), dtype=object))
        c_down = shift if q_down is None else q_down + shift
        out["b_down"] = c_down if exact else np.array([_exactly(v) for v in c_down],
                                                      dtype=object)
    elif b_down is not None:
        out["b_down"] = b_down
    return out


def corrected_construction(h: Block) -> dict[str, object]:
    """The absorbing block h of the repaired weights, by rule for its matrices and by value
    for its biases: its matrices are the stored ones with the rows S of W_up negated and the
    repair added to the columns S of W_down, so writing their 2nd floats again (seconds of
    ``tolist`` and megabytes of JSON at d = 1024) would repeat what S and the repair say."""
    out: dict[str, object] = {
        "W_up": "W_up with its rows S negated",
        "W_down": "W_down with rounding.delta_W_down_S added to its columns S"}
    for key in ("b_up", "b_down"):  # the sign-flip construction has no gate
        value = getattr(h, key)
        if value is not None:
            out[key] = value.tolist()
    return out


def check_construction(block: Block, h: Block, rng: np.random.Generator) -> dict[str, object]:
    """The numerical check of a construction h of ``block`` (the verdict's ``check``):
    max |h(X) − f(X)| (absolute and relative to max |f(X)|) on Gaussian X at each scale.
    ("verify" is kept for the Lean build, ``absorb verify``.) Not run when an exact entry lies
    beyond the float range (its float view is ±inf): the check would only measure NaN, and
    the verdict rests on the exact identity, never on this check."""
    if not block.float_view_finite:
        return dict(CHECK_NOT_RUN)
    return check_maps(block, h, block.d, rng)


def check_maps(f: Callable[[Array], Array], h: Callable[[Array], Array], d: int,
               rng: np.random.Generator) -> dict[str, object]:
    """:func:`check_construction` for any maps of ℝ^d (batches as rows), e.g. stacks."""
    rows = []
    for scale in INPUT_SCALES:
        X = scale * rng.standard_normal((CHECK_POINTS, d))
        fX = f(X)
        err = float(np.max(np.abs(h(X) - fX)))
        rows.append({"scale": scale, "max_abs_error": err,
                     "relative_error": err / max(float(np.max(np.abs(fX))), np.finfo(float).tiny)})
    return {"max_abs_error": max(float(r["max_abs_error"]) for r in rows),
            "max_relative_error": max(float(r["relative_error"]) for r in rows),
            "errors_by_scale": rows, "points_per_scale": CHECK_POINTS}
