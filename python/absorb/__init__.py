"""absorb: can an MLP absorb its own skip connection? Computations and a Lean bridge for
Mijoski and Karbevski, arXiv 2604.23705."""

__version__ = "0.1.0"
#: The distribution's name on the package index (``absorb`` there is an unrelated package);
#: the import name and the command stay ``absorb``.
DISTRIBUTION = "absorb-skip"
