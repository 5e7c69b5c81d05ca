"""Deep residual stacks R = f_L ∘ … ∘ f_1 against residual-free stacks of the same widths.

* :mod:`~absorb.stacks.reading` — stack weights files (``load_stack``; ``load_weights``: a stack
  or one block, in one read);
* :mod:`~absorb.stacks.arrangement` — exact regions and rays of a block's hyperplane arrangement;
* :mod:`~absorb.stacks.narrow` — depth_narrow's determinant certificates;
* :mod:`~absorb.stacks.cone` — absorbing constructions (index sets, image cone), exact over ℚ;
* :mod:`~absorb.stacks.decide` — the verdict (``decide_stack``);
* :mod:`~absorb.stacks.fit` — realization Jacobians and residual-free stack fits (numerics).
"""

from absorb.stacks.decide import decide_stack
from absorb.stacks.fit import fit_stack, stack_jacobian
from absorb.stacks.reading import load_stack, load_weights

__all__ = ["decide_stack", "fit_stack", "load_stack", "load_weights", "stack_jacobian"]
