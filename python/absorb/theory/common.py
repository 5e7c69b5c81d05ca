"""Shared pieces of the verdicts: theorem fields, the sign-flip construction and its check,
weights as JSON, search evidence, the stored (exact) weights."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from absorb.blocks import Array, Block
from absorb.certificates import as_fractions
from absorb.errors import AbsorbError
from absorb.manifest import get_theorem
from absorb.search import fit_residual_free

VERIFY_SCALES = (1e-2, 1.0, 1e2)
VERIFY_POINTS = 256
# Small, fast search settings for the evidence attached to `undetermined` verdicts.
EVIDENCE_RESTARTS, EVIDENCE_STEPS, EVIDENCE_SAMPLES = 2, 300, 512
SCOPE = ("the verdict is about the abstract block A x + MLP(x), as in the paper; a real "
         "transformer layer also holds a LayerNorm, which this question leaves aside")
# A fit is evidence only: it can miss an absorbing block (a positive control can fail at some
# seeds) and a small error is not an equality, so it never decides a verdict by itself.
EVIDENCE_NOTE = ("weak numerical evidence: the best fit of a residual-free block of the same "
                 "width; a small error does not prove absorbability and a large one does not "
                 "prove impossibility")


def theorem_fields(tid: str | None) -> dict[str, object]:
    """The ``theorem``/``chain``/``lean`` fields of a verdict resting on one theorem (or none);
    Lean names come from the manifest only."""
    return chain_fields([] if tid is None else [tid])


def chain_fields(ids: Sequence[str]) -> dict[str, object]:
    """``theorem`` (the first ID), ``chain`` and the Lean declarations of every link."""
    return {"theorem": ids[0] if ids else None, "chain": list(ids),
            "lean": [name for tid in ids for name in get_theorem(tid).lean]}


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


def verify_construction(block: Block, h: Block, rng: np.random.Generator) -> dict[str, object]:
    """max |h(X) − f(X)| (absolute and relative to max |f(X)|) on Gaussian X at each scale."""
    return verify_functions(block, h, block.d, rng)


def verify_functions(f: Callable[[Array], Array], h: Callable[[Array], Array], d: int,
                     rng: np.random.Generator) -> dict[str, object]:
    """:func:`verify_construction` for any maps of ℝ^d (batches as rows), e.g. stacks."""
    rows = []
    for scale in VERIFY_SCALES:
        X = scale * rng.standard_normal((VERIFY_POINTS, d))
        fX = f(X)
        err = float(np.max(np.abs(h(X) - fX)))
        rows.append({"scale": scale, "max_abs_error": err,
                     "relative_error": err / max(float(np.max(np.abs(fX))), np.finfo(float).tiny)})
    return {"max_abs_error": max(float(r["max_abs_error"]) for r in rows),
            "max_relative_error": max(float(r["relative_error"]) for r in rows),
            "errors_by_scale": rows, "points_per_scale": VERIFY_POINTS}


def weights_json(h: Block) -> dict[str, object]:
    out: dict[str, object] = {"W_up": h.W_up.tolist(), "W_down": h.W_down.tolist()}
    for key in ("W_gate", "b_up", "b_down"):
        value = getattr(h, key)
        if value is not None:
            out[key] = value.tolist()
    return out


def evidence(block: Block, rng: np.random.Generator, run: bool) -> dict[str, object] | None:
    if not run:
        return None
    evidence = fit_residual_free(block, restarts=EVIDENCE_RESTARTS, steps=EVIDENCE_STEPS,
                                 samples=EVIDENCE_SAMPLES, rng=rng).to_json()
    evidence["note"] = EVIDENCE_NOTE
    return evidence


def stored_weights(block: Block) -> tuple[Any, Any, Any]:
    """(W_up, W_down, A or None for the identity) as stored: Fractions for exact input,
    float64 otherwise."""
    ex = block.exact
    if ex is not None:
        A_q = ex.A_skip if ex.A_skip is not None else (
            None if block.A_skip is None else as_fractions(block.A_skip))
        return ex.W_up, ex.W_down, A_q
    return block.W_up, block.W_down, block.A_skip
