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

By concern: :mod:`.common` (construction, checks, evidence), :mod:`.witnesses` (degree,
linearization), :mod:`.linear` (σ = identity), :mod:`.index_sets` (odd-part-linear blocks:
search, dual certificate, bias_blowup, storage precision).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.theory.common import (
    SCOPE,
    absorbing_block,
    evidence,
    stored_weights,
    theorem_fields,
    verify_construction,
    weights_json,
)
from absorb.theory.index_sets import (
    COLLINEAR_TOL,
    Storage,
    decide_index_set,
    given_certificate,
    necessary_hypotheses,
    noncollinear_rows,
    storage,
    theorem_chain,
)
from absorb.theory.linear import decide_linear
from absorb.theory.witnesses import (
    LINEARIZATION_TS,
    degree_witness,
    linearization_witness,
    witness_point,
)

__all__ = [
    "COLLINEAR_TOL",
    "LINEARIZATION_TS",
    "SCOPE",
    "Storage",
    "absorbing_block",
    "decide",
    "degree_witness",
    "given_certificate",
    "linearization_witness",
    "necessary_hypotheses",
    "noncollinear_rows",
    "storage",
    "stored_weights",
    "theorem_chain",
]


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
        return {**base, "verdict": "absorbed", **theorem_fields(None),
                "reason": "A = 0: the block is already residual-free", "S": None,
                "absorbing_block": weights_json(h), **verify_construction(block, h, rng)}
    if act.name == "identity":
        return decide_linear(block, rng, base)
    if act.degree is not None and act.degree != 1.0 and not block.has_biases:
        return {**base, "verdict": "impossible", **theorem_fields("degree"),
                "reason": f"every {act.name} block is homogeneous of degree {act.degree:g} != 1 "
                          "and A != 0",
                "witness": degree_witness(block, witness_point(A, rng))}
    if act.gated and act.g0 == 0.0 and not block.has_biases:
        return {**base, "verdict": "impossible", **theorem_fields("linearization"),
                "reason": f"gated with g = {act.gate}, g(0) = 0, g continuous, and A != 0",
                "witness": linearization_witness(block, witness_point(A, rng), LINEARIZATION_TS)}
    if act.odd_part_linear:
        return decide_index_set(block, rng, search, base, tol, candidate)
    if act.degree is not None or act.g0 == 0.0:
        unmet = ["no biases (the degree and linearization theorems assume none)"]
    elif act.gated:
        unmet = [f"g(0) = 0 (gate {act.gate} has g(0) = {act.g0:g})"]
    else:
        unmet = [f"{act.name} is neither homogeneous of degree k != 1, gated with g(0) = 0, "
                 "nor odd-part-linear"]
    return {**base, "verdict": "undetermined", **theorem_fields(None),
            "reason": "no theorem applies", "unmet_hypotheses": unmet,
            "search": evidence(block, rng, search)}
