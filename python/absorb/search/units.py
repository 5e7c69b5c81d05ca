"""Activations with their derivatives, written into preallocated buffers.

``unit(z, value, deriv)`` writes σ(z) into ``value`` and σ'(z) into ``deriv`` (dtype of z),
sharing intermediates; values agree with :mod:`absorb.activations` (tested). Writing into fixed
buffers avoids a fresh m×w allocation (and its page faults) per call, which otherwise costs as
much as the matrix products.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, ndtr

from absorb.blocks import Block
from absorb.errors import AbsorbError

__all__ = ["DERIVATIVES", "Array", "UnitFunction", "unit_function"]

Array = NDArray[Any]
UnitFunction = Callable[[Array, Array, Array], None]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_C = 0.044715



def _relu(z: Array, value: Array, deriv: Array) -> None:
    np.maximum(z, 0, out=value)
    np.greater(z, 0, out=deriv)


def _relu2(z: Array, value: Array, deriv: Array) -> None:
    np.maximum(z, 0, out=deriv)
    np.multiply(deriv, deriv, out=value)
    deriv *= 2


def _gelu(z: Array, value: Array, deriv: Array) -> None:
    # σ = zΦ(z), σ' = Φ(z) + zφ(z)
    ndtr(z, out=value)
    np.multiply(z, z, out=deriv)
    deriv *= -0.5
    np.exp(deriv, out=deriv)
    deriv *= _INV_SQRT_2PI
    deriv *= z
    deriv += value
    value *= z


def _gelu_tanh(z: Array, value: Array, deriv: Array) -> None:
    # th = tanh(c(z + k z³)); σ = ½z(1 + th), σ' = ½(1 + th) + ½z(1 − th²)·c(1 + 3k z²)
    c, k = _SQRT_2_OVER_PI, _GELU_TANH_C
    np.multiply(z, z, out=deriv)
    np.multiply(deriv, k, out=value)
    value += 1
    value *= z
    value *= c
    np.tanh(value, out=value)
    deriv *= 3 * k
    deriv += 1
    deriv *= c
    deriv *= z
    deriv *= 0.5
    deriv *= 1 - value * value
    value += 1
    deriv += 0.5 * value
    value *= z
    value *= 0.5


def _silu(z: Array, value: Array, deriv: Array) -> None:
    # s = logistic(z); σ = z s, σ' = s(1 + z(1 − s))
    expit(z, out=value)
    np.subtract(1, value, out=deriv)
    deriv *= z
    deriv += 1
    deriv *= value
    value *= z


def _tanh(z: Array, value: Array, deriv: Array) -> None:
    np.tanh(z, out=value)
    np.multiply(value, value, out=deriv)
    np.subtract(1, deriv, out=deriv)


def _sigmoid(z: Array, value: Array, deriv: Array) -> None:
    expit(z, out=value)
    np.subtract(1, value, out=deriv)
    deriv *= value


def _softplus(z: Array, value: Array, deriv: Array) -> None:
    # σ = max(z, 0) + log1p(e^{−|z|}) (no overflow), σ' = logistic(z)
    np.abs(z, out=value)
    np.negative(value, out=value)
    np.exp(value, out=value)
    np.log1p(value, out=value)
    value += np.maximum(z, 0)
    expit(z, out=deriv)


def _identity(z: Array, value: Array, deriv: Array) -> None:
    np.copyto(value, z)
    deriv.fill(1)


DERIVATIVES: dict[str, UnitFunction] = {
    "relu": _relu,
    "relu2": _relu2,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": _silu,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "softplus": _softplus,
    "identity": _identity,
}
"""unit(z, value, deriv) for σ (ungated) or the gate g (gated units), keyed by its name."""


def unit_function(block: Block) -> UnitFunction:
    act = block.activation
    key = act.gate if act.gated else act.name
    if key is None or key not in DERIVATIVES:
        raise AbsorbError(f"no derivative known for activation {act.name!r}")
    return DERIVATIVES[key]
