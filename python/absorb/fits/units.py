"""The fits' view of an activation: the catalog entry's fused value and derivative.

``unit(z, value, deriv)`` writes f(z) into ``value`` and f'(z) into ``deriv`` (dtype of z),
f = σ (ungated) or the gate g (gated); the functions live in the catalog entry
(:attr:`absorb.activations.Activation.unit`), and their values agree with the entry's ``fn``
(tested).
"""

from __future__ import annotations

from typing import Any

from numpy.typing import NDArray

from absorb.activations import UnitFunction
from absorb.blocks import Block
from absorb.errors import AbsorbError

__all__ = ["Array", "UnitFunction", "unit_function"]

Array = NDArray[Any]


def unit_function(block: Block) -> UnitFunction:
    """The block's activation's ``unit`` (σ, or the gate g); AbsorbError when it has none."""
    act = block.activation
    if act.unit is None:
        raise AbsorbError(f"no derivative known for activation {act.name!r}")
    return act.unit
