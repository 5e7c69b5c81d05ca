"""Numerical fits: residual-free blocks fitted to a skip block (the ``absorb search`` command is
:mod:`absorb.commands.search`).

* :mod:`absorb.search.fit` — restarts, engines (``lm``: variable projection + Levenberg–Marquardt,
  ``adam``), held-out errors per input scale, the result type;
* :mod:`absorb.search.bounds` — theorem-derived lower bounds beside every fit (degree,
  linearization) and the contradiction check;
* :mod:`absorb.search.evidence` — the small fit an ``undetermined`` verdict may carry, passed to
  the verdict by its caller;
* :mod:`absorb.search.lm`, :mod:`absorb.search.adam`, :mod:`absorb.search.units` — the engines
  and the catalog entry's value and derivative they call.
"""

from absorb.search.adam import AdamFit
from absorb.search.bounds import contradictions, degree_bound, linearization_bound, lower_bounds
from absorb.search.fit import ENGINES, FROM_TARGET, SearchResult, fit_residual_free
from absorb.search.units import UnitFunction

__all__ = [
    "ENGINES",
    "FROM_TARGET",
    "AdamFit",
    "SearchResult",
    "UnitFunction",
    "contradictions",
    "degree_bound",
    "fit_residual_free",
    "linearization_bound",
    "lower_bounds",
]
