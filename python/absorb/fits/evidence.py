"""The numerical evidence attached to an ``undetermined`` verdict: a small residual-free fit.

The verdicts never run a fit themselves (they sit above the fits and must not reach back into
them by choice): the caller that wants evidence passes :func:`fit_evidence` to
``absorb.theory.decide(..., evidence=fit_evidence)``.
"""

from __future__ import annotations

import numpy as np

from absorb.blocks import Block
from absorb.fits.fit import fit_residual_free

# Small, fast settings: the evidence is a hint beside a verdict, not a fit study of its own.
EVIDENCE_RESTARTS, EVIDENCE_STEPS, EVIDENCE_SAMPLES = 2, 300, 512
# A fit is evidence only: it can miss an absorbing block (a positive control can fail at some
# seeds) and a small error is not an equality, so it never decides a verdict by itself.
EVIDENCE_NOTE = ("weak numerical evidence: the best fit of a residual-free block of the same "
                 "width; a small error does not prove absorbability and a large one does not "
                 "prove impossibility")


def fit_evidence(block: Block, rng: np.random.Generator) -> dict[str, object]:
    """The best held-out error of residual-free fits of ``block``'s own width (JSON), noted
    as weak evidence (:data:`EVIDENCE_NOTE`)."""
    found = fit_residual_free(block, restarts=EVIDENCE_RESTARTS, steps=EVIDENCE_STEPS,
                              samples=EVIDENCE_SAMPLES, rng=rng).to_json()
    found["note"] = EVIDENCE_NOTE
    return found
