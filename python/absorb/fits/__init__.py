"""Numerical fits: residual-free blocks fitted to a skip block (the ``absorb search`` command is
:mod:`absorb.commands.search`).

* :mod:`absorb.fits.fit` — restarts, engines (``lm``: variable projection + Levenberg–Marquardt,
  ``adam``), held-out errors per input scale, the result type;
* :mod:`absorb.fits.bounds` — theorem-derived lower bounds beside every fit (degree,
  linearization) and the contradiction check;
* :mod:`absorb.fits.evidence` — the small fit an ``undetermined`` verdict may carry, passed to
  the verdict by its caller;
* :mod:`absorb.fits.lm`, :mod:`absorb.fits.adam`, :mod:`absorb.fits.units` — the engines
  and the catalog entry's value and derivative they call.
"""

from absorb.fits.adam import AdamFit
from absorb.fits.bounds import contradictions, degree_bound, linearization_bound, lower_bounds
from absorb.fits.fit import ENGINES, FROM_TARGET, FitResult, fit_residual_free
from absorb.fits.units import UnitFunction

__all__ = [
    "ENGINES",
    "FROM_TARGET",
    "AdamFit",
    "FitResult",
    "UnitFunction",
    "contradictions",
    "degree_bound",
    "fit_residual_free",
    "linearization_bound",
    "lower_bounds",
]
