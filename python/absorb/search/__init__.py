"""Numerical counterexample search: fit residual-free blocks to a skip block.

* :mod:`absorb.search.fit` — restarts, engines (``lm``: variable projection + Levenberg–Marquardt,
  ``adam``), held-out errors per input scale, the result type;
* :mod:`absorb.search.bounds` — theorem-derived lower bounds beside every fit (degree,
  linearization) and the contradiction check;
* :mod:`absorb.search.explain` — ``absorb search``: what the theory predicts at this width, the
  fit, the bounds and a positive control of the same size;
* :mod:`absorb.search.lm`, :mod:`absorb.search.adam`, :mod:`absorb.search.units` — the engines
  and the activations with their derivatives.
"""

from absorb.search.adam import AdamFit
from absorb.search.bounds import contradictions, degree_bound, linearization_bound, lower_bounds
from absorb.search.explain import (
    explain_lines,
    planted_block,
    planted_block_and_set,
    prediction,
    resolve_settings,
    run_search,
)
from absorb.search.fit import ENGINES, FROM_TARGET, SearchResult, fit_residual_free
from absorb.search.units import DERIVATIVES, UnitFunction

__all__ = [
    "DERIVATIVES",
    "ENGINES",
    "FROM_TARGET",
    "AdamFit",
    "SearchResult",
    "UnitFunction",
    "contradictions",
    "degree_bound",
    "explain_lines",
    "fit_residual_free",
    "linearization_bound",
    "lower_bounds",
    "planted_block",
    "planted_block_and_set",
    "prediction",
    "resolve_settings",
    "run_search",
]
