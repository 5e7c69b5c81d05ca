"""Numerical evidence attached to an ``undetermined`` verdict: given by the caller, since the
verdicts never run a fit themselves."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from absorb.blocks import Block
from absorb.theory.construction import BEYOND_FLOAT

#: Numerical evidence for an ``undetermined`` verdict, given by the caller:
#: ``absorb.fits.evidence.fit_evidence``, or a test's stand-in.
Evidence = Callable[[Block, np.random.Generator], dict[str, object]]


def attached_evidence(block: Block, rng: np.random.Generator, evidence: Evidence | None
                      ) -> dict[str, object] | None:
    """The caller's evidence on ``block`` (``evidence(block, rng)``), None when none was asked;
    not run on a block whose float view is not finite (a numerical fit of ±inf weights)."""
    if evidence is not None and not block.float_view_finite:
        return {"note": f"not run: a numerical search needs float weights, and {BEYOND_FLOAT}"}
    return None if evidence is None else evidence(block, rng)
