"""The verdict logic: which theorem of THEORY.md decides a given skip block, and its evidence.

``decide`` returns a :class:`~absorb.verdicts.Verdict` (the ``check`` object of DESIGN.md):

* ``absorbed`` — A = 0 exactly, an index set S with W_down[:,S] W_up[S,:] = −A exactly on the
  stored values (the sign-flip construction of index_set_sufficient), or a linear block of
  exact rank ≤ n (a rank factorization over ℚ); the construction is also checked numerically;
* ``absorbable_up_to_rounding`` — an index set within the storage tolerance, not exact;
* ``impossible`` — degree (homogeneous of degree k ≠ 1, no biases), linearization (gated,
  g(0) = 0, no biases) or bounded (|σ| ≤ B, any biases), A ≠ 0, with a witness computed from
  the weights;
* ``not_absorbed`` — no index set exists (certificate) and index_set_necessary's hypotheses
  hold, or a linear block whose linear part has exact rank > n;
* ``undetermined`` — no theorem applies, or a limit stopped the decision; the reason, the
  unmet hypotheses and search evidence are given.

Which argument applies is decided once, from the catalog properties
(:func:`applicable_theorems`). By concern: :mod:`.applicable` (the table), :mod:`.construction`
(the sign-flip construction and its check), :mod:`.evidence` (the caller's numerical
evidence), :mod:`.witnesses` (degree, linearization, bounded), :mod:`.linear`
(σ = identity), :mod:`.index_sets` (odd-part-linear blocks). The weights as stored are read
from the block itself (``Block.stored_weights``: converted once, on the block).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.theory.applicable import (
    Applicable,
    applicable_stack_theorems,
    applicable_theorems,
    necessary_chain,
)
from absorb.theory.construction import absorbing_block, check_construction
from absorb.theory.evidence import Evidence, attached_evidence
from absorb.theory.index_sets import (
    COLLINEAR_TOL,
    Storage,
    decide_index_set,
    given_certificate,
    necessary_hypotheses,
    noncollinear_rows,
    storage,
)
from absorb.theory.linear import decide_linear
from absorb.theory.witnesses import (
    LINEARIZATION_TS,
    bounded_witness,
    degree_witness,
    float_witness_missing,
    linearization_witness,
    witness_point,
)
from absorb.verdicts import (
    Absorbed,
    Impossible,
    Subject,
    Undetermined,
    Verdict,
    check_tol,
    exact_zero_skip,
)

SCOPE = ("the verdict is about the abstract block A x + MLP(x), as in the paper; a real "
         "transformer layer also holds a LayerNorm, which this question leaves aside")

__all__ = [
    "COLLINEAR_TOL",
    "LINEARIZATION_TS",
    "SCOPE",
    "Applicable",
    "Evidence",
    "Storage",
    "absorbing_block",
    "applicable_stack_theorems",
    "applicable_theorems",
    "bounded_witness",
    "check_tol",
    "decide",
    "degree_witness",
    "given_certificate",
    "linearization_witness",
    "necessary_chain",
    "necessary_hypotheses",
    "noncollinear_rows",
    "storage",
]


def subject(block: Block) -> Subject:
    """The :class:`~absorb.verdicts.Subject` of a skip block."""
    return Subject(block.activation.name, block.d, block.n, block.has_biases,
                   "identity" if block.A_skip is None else "matrix", block.exact is not None,
                   extra={"scope": SCOPE})


def decide(block: Block, *, rng: np.random.Generator, evidence: Evidence | None = None,
           tol: float | None = None, candidate: Sequence[int] | None = None) -> Verdict:
    """The verdict on one skip block (see the module docstring).

    ``tol`` overrides the storage tolerance (default: the unit roundoff of the detected
    storage format; FLOAT64_TOL for float64): it can make a failure ``absorbable up to
    rounding``, never ``absorbed``. ``candidate`` is an index set to check first. ``evidence``
    is the numerical evidence an ``undetermined`` verdict carries (e.g.
    ``absorb.fits.evidence.fit_evidence``); the verdict never runs a fit of its own.
    """
    check_tol(tol)
    if not block.residual:
        raise AbsorbError("decide needs a skip block (residual=True)")
    subj = subject(block)
    _W_up, _W_down, A = block.stored_weights
    zero = exact_zero_skip(A)
    if zero is not None:
        h = Block(block.activation, block.W_up, block.W_down, block.W_gate, block.b_up,
                  block.b_down, residual=False)
        return Absorbed(subject=subj, proof=zero, reason="A = 0 exactly: the block is already "
                        "residual-free", construction={"absorbing_block": block.stored_arrays},
                        check=check_construction(block, h, rng))
    how = applicable_theorems(block)
    if how.path == "linear":
        return decide_linear(block, rng, subj)
    if how.path == "index_set":
        return decide_index_set(block, rng, evidence, subj, tol, candidate)
    if how.path == "impossible":
        assert how.theorem is not None  # an impossibility path names its theorem
        if how.theorem != "bounded" and not block.float_view_finite:
            # these witnesses evaluate the block in floating point: no witness, no verdict
            return Undetermined(subject=subj, reason=float_witness_missing(how.theorem),
                                unmet_hypotheses=tuple(how.unmet))
        if how.theorem == "degree":
            witness = degree_witness(block, witness_point(A if A is not None
                                                          else block.skip_matrix(), rng))
        elif how.theorem == "linearization":
            witness = linearization_witness(block, witness_point(
                A if A is not None else block.skip_matrix(), rng), LINEARIZATION_TS)
        else:
            witness = bounded_witness(block, A if A is not None else block.skip_matrix())
        return Impossible(subject=subj, chain=(how.theorem,), witness=witness,
                          reason=f"{block.activation.name}: {how.reason}")
    return Undetermined(subject=subj, reason=how.reason, unmet_hypotheses=how.unmet,
                        details={"search": attached_evidence(block, rng, evidence)})
