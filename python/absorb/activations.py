"""The activation catalog: every σ (ungated) or gate g (gated) the theory speaks about.

Each entry records the structural facts the verdict logic needs:

* ``family`` — ``homogeneous`` (ungated, σ(λz) = λ^k σ(z) for λ > 0), ``gated``
  (M(x) = W_down (g(W_gate x) ⊙ W_up x)), ``ungated`` (any other entrywise σ);
* ``degree`` — k with M(λx) = λ^k M(x) for the whole block, where such a k exists
  (ReGLU: g = ReLU is homogeneous of degree 1 and the value is linear, so k = 2);
* ``g0`` — g(0) for gated units (the linearization theorem needs g(0) = 0);
* ``odd_part_linear`` — σ(z) − σ(−z) = z, i.e. σ(z) = z F(z) with F(z) + F(−z) = 1
  (ReLU: F = step, GELU: F = Φ, tanh-GELU: F = ½(1 + tanh(·)), SiLU: F = logistic), or
  softplus (log(1 + e^z) − log(1 + e^{−z}) = z);
* ``relu_at_infinity`` — σ(tz + c)/t → ReLU(z) as t → ∞ for all real z, c (THEORY.md,
  bias_blowup): ReLU, GELU, tanh-GELU, SiLU, softplus; not tanh, sigmoid, ReLU², identity.
  The error is at most (|c| + sup|σ − ReLU|)/t, and sup|σ − ReLU| is finite for each of them;
* ``bound`` — B with |σ(z)| ≤ B for all z, for a bounded ungated σ (tanh, sigmoid: B = 1;
  THEORY.md, bounded); None when σ is unbounded. Gated entries never carry one: a bounded
  gate times the linear value W_up x is unbounded;
* ``linear`` — σ(z) = z: the block is the linear map A + W_down W_up (plus a constant);
* ``necessary_direct`` — index_set_necessary is proved for this σ without biases directly
  (the paper's Theorems 8 and 10: ReLU, GELU); other ReLU-at-infinity σ, and biases, go
  through bias_blowup;
* ``checker_name`` — the activation's name in the Lean checker's format (``absorb-check/2``),
  for the σ whose bias-free and biased blocks the checker's theorems speak about (the format
  accepts exactly these: ``absorb.weights.CHECKER_ACTIVATIONS``);
* ``lean_name`` — the Lean definition of ``fn`` (σ, or the gate g of a gated entry) in
  ``Absorb/``, e.g. ``Absorb.reluSq``; None where the library defines none (tanh is Mathlib's
  ``Real.tanh``, the identity is ``id``). The exact GELU is ``Absorb.geluCdf μ`` with μ the
  standard normal law, which is ``Absorb.geluWith (cdf μ)`` (``geluCdf_eq_geluWith``), so the
  ``geluWith`` theorems speak about it;
* ``config_names`` — the names under which Hugging Face ``config.json`` files give ``fn`` (σ,
  or the gate g of a gated entry), e.g. ``gelu_new`` for the tanh GELU; checkpoint detection
  (:mod:`absorb.checkpoints.architectures`) reads its activation tables from them;
* ``unit`` — ``unit(z, value, deriv)`` writes f(z) into ``value`` and f′(z) into ``deriv``
  (dtype of z), f = σ (ungated) or the gate g (gated), sharing intermediates; the numerical fits
  (:mod:`absorb.fits`) call it. Writing into fixed buffers avoids a fresh m×w allocation (and
  its page faults) per call, which otherwise costs as much as the matrix products. None: no
  derivative known, the fits refuse the activation;
* ``derivative`` — f′ as a function returning a new array (σ′, or g′ for a gated entry), read
  by the stack Jacobian (:mod:`absorb.stacks.fit`, ungated entries only); None where it is not
  given, and the stack Jacobian then refuses the activation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import erf, expit, ndtr

from absorb.errors import AbsorbError

Array = NDArray[np.float64]
Family = Literal["homogeneous", "gated", "ungated", "other"]
#: ``unit(z, value, deriv)``: f(z) into ``value``, f′(z) into ``deriv``, any float dtype.
UnitFunction = Callable[[NDArray[Any], NDArray[Any], NDArray[Any]], None]

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_C = 0.044715
# np.float64 scalars (not Python floats) in the GELU and tanh-GELU ``derivative``: they make
# its result float64 even for float32 input (NEP 50), which a Python float would not
_SQRT2PI = np.sqrt(2.0 * np.pi)
_C = np.sqrt(2.0 / np.pi)


def relu(z: Array) -> Array:
    """max(z, 0)."""
    return np.maximum(z, 0.0)


def relu2(z: Array) -> Array:
    """max(z, 0)², positively homogeneous of degree 2."""
    r = np.maximum(z, 0.0)
    return r * r


def gelu(z: Array) -> Array:
    """Exact GELU z Φ(z), Φ the standard normal CDF (``ndtr`` is accurate in both tails)."""
    return np.asarray(z * ndtr(z), dtype=np.float64)


def gelu_tanh(z: Array) -> Array:
    """The tanh approximation ½ z (1 + tanh(√(2/π)(z + 0.044715 z³)))."""
    # z³ overflows to ±inf past |z| ≈ 5.6e102, where tanh(±inf) = ±1 gives the right value
    # (z, or −0): the overflow is expected, not a fault
    with np.errstate(over="ignore"):
        return 0.5 * z * (1.0 + np.tanh(_SQRT_2_OVER_PI * (z + 0.044715 * z**3)))


def silu(z: Array) -> Array:
    """SiLU / Swish z·s(z), s the logistic sigmoid (``expit`` does not overflow)."""
    return np.asarray(z * expit(z), dtype=np.float64)


def softplus(z: Array) -> Array:
    """log(1 + e^z), computed as max(z, 0) + log1p(e^{−|z|}) (no overflow)."""
    return np.asarray(np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z))), dtype=np.float64)


def sigmoid(z: Array) -> Array:
    """The logistic sigmoid 1 / (1 + e^{−z})."""
    return np.asarray(expit(z), dtype=np.float64)


def tanh(z: Array) -> Array:
    """tanh z."""
    return np.tanh(z)


def identity(z: Array) -> Array:
    """z (the block is then linear)."""
    return np.asarray(z, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# fused value and derivative, written into preallocated buffers (``unit``)


def _relu_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    np.maximum(z, 0, out=value)
    np.greater(z, 0, out=deriv)


def _relu2_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    np.maximum(z, 0, out=deriv)
    np.multiply(deriv, deriv, out=value)
    deriv *= 2


def _gelu_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    # σ = zΦ(z), σ' = Φ(z) + zφ(z)
    ndtr(z, out=value)
    np.multiply(z, z, out=deriv)
    deriv *= -0.5
    np.exp(deriv, out=deriv)
    deriv *= _INV_SQRT_2PI
    deriv *= z
    deriv += value
    value *= z


def _gelu_tanh_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
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


def _silu_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    # s = logistic(z); σ = z s, σ' = s(1 + z(1 − s))
    expit(z, out=value)
    np.subtract(1, value, out=deriv)
    deriv *= z
    deriv += 1
    deriv *= value
    value *= z


def _tanh_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    np.tanh(z, out=value)
    np.multiply(value, value, out=deriv)
    np.subtract(1, deriv, out=deriv)


def _sigmoid_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    expit(z, out=value)
    np.subtract(1, value, out=deriv)
    deriv *= value


def _softplus_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    # σ = max(z, 0) + log1p(e^{−|z|}) (no overflow), σ' = logistic(z)
    np.abs(z, out=value)
    np.negative(value, out=value)
    np.exp(value, out=value)
    np.log1p(value, out=value)
    value += np.maximum(z, 0)
    expit(z, out=deriv)


def _identity_unit(z: NDArray[Any], value: NDArray[Any], deriv: NDArray[Any]) -> None:
    np.copyto(value, z)
    deriv.fill(1)


# --------------------------------------------------------------------------------------------
# σ′ alone (``derivative``; ReLU′ at 0 taken as 0)


def _d_relu(z: Array) -> Array:
    return (z > 0).astype(np.float64)


def _d_gelu(z: Array) -> Array:
    out: Array = 0.5 * (1 + erf(z / np.sqrt(2.0))) + z * np.exp(-0.5 * z * z) / _SQRT2PI
    return out


def _d_gelu_tanh(z: Array) -> Array:
    inner = _C * (z + 0.044715 * z**3)
    t = np.tanh(inner)
    out: Array = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * _C * (1 + 3 * 0.044715 * z * z)
    return out


def _d_silu(z: Array) -> Array:
    s = 0.5 * (1 + np.tanh(0.5 * z))
    out: Array = s * (1 + z * (1 - s))
    return out


def _d_softplus(z: Array) -> Array:
    out: Array = 0.5 * (1 + np.tanh(0.5 * z))
    return out



@dataclass(frozen=True)
class Activation:
    """One catalog entry; ``fn`` is σ for ungated entries and the gate g for gated ones."""

    name: str
    family: Family
    fn: Callable[[Array], Array]
    degree: float | None
    gate: str | None
    g0: float | None
    odd_part_linear: bool
    verdict: str
    theorems: tuple[str, ...]
    relu_at_infinity: bool = False
    bound: float | None = None
    linear: bool = False
    necessary_direct: bool = False
    checker_name: str | None = None
    lean_name: str | None = None
    config_names: tuple[str, ...] = ()
    unit: UnitFunction | None = None
    derivative: Callable[[Array], Array] | None = None

    def __call__(self, z: Array) -> Array:
        return self.fn(z)

    @property
    def gated(self) -> bool:
        return self.family == "gated"

    @property
    def bounded(self) -> bool:
        """|σ| ≤ ``bound`` everywhere (ungated entries only; THEORY.md, bounded)."""
        return self.bound is not None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "family": self.family,
            "degree": self.degree,
            "gate": self.gate,
            "g0": self.g0,
            "odd_part_linear": self.odd_part_linear,
            "relu_at_infinity": self.relu_at_infinity,
            "bounded": self.bounded,
            "bound": self.bound,
            "linear": self.linear,
            "necessary_direct": self.necessary_direct,
            "verdict": self.verdict,
            "theorems": list(self.theorems),
            "lean_name": self.lean_name,
        }


_INDEX_SET_VERDICT = (
    "absorbable iff W_down[:,S] W_up[S,:] = -A for some index set S (nondegenerate weights; "
    "with or without biases, via bias_blowup); generically not absorbable"
)
_BOUNDED_VERDICT = "never absorbable when A != 0, any width and biases (bounded)"

_BLOWUP_THEOREMS = ("odd_part", "index_set_sufficient", "bias_blowup", "index_set_necessary",
                    "relaxation_certificate")

#: gelu_new, gelu_fast and gelu_pytorch_tanh are all ½z(1 + tanh(√(2/π)(z + 0.044715 z³))).
_TANH_GELU_NAMES = ("gelu_new", "gelu_fast", "gelu_pytorch_tanh")

_ENTRIES = (
    Activation("relu", "homogeneous", relu, 1.0, None, None, True, _INDEX_SET_VERDICT,
               (*_BLOWUP_THEOREMS, "generic_measure_zero"), relu_at_infinity=True,
               necessary_direct=True, checker_name="relu", lean_name="Absorb.relu",
               config_names=("relu",),
               unit=_relu_unit, derivative=_d_relu),
    Activation("gelu", "ungated", gelu, None, None, None, True, _INDEX_SET_VERDICT,
               (*_BLOWUP_THEOREMS, "generic_measure_zero"), relu_at_infinity=True,
               necessary_direct=True, checker_name="gelu", lean_name="Absorb.geluCdf",
               config_names=("gelu",),
               unit=_gelu_unit, derivative=_d_gelu),
    Activation("gelu_tanh", "ungated", gelu_tanh, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True, lean_name="Absorb.geluTanh",
               config_names=_TANH_GELU_NAMES,
               unit=_gelu_tanh_unit, derivative=_d_gelu_tanh),
    Activation("silu", "ungated", silu, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True, lean_name="Absorb.silu",
               config_names=("silu", "swish"),
               unit=_silu_unit, derivative=_d_silu),
    Activation("relu2", "homogeneous", relu2, 2.0, None, None, False,
               "never absorbable without biases (degree, k = 2)", ("degree", "depth_degree"),
               lean_name="Absorb.reluSq", unit=_relu2_unit),
    Activation("tanh", "ungated", tanh, None, None, None, False, _BOUNDED_VERDICT,
               ("bounded",), bound=1.0, unit=_tanh_unit),
    Activation("sigmoid", "ungated", sigmoid, None, None, None, False, _BOUNDED_VERDICT,
               ("bounded",), bound=1.0, lean_name="Absorb.sigmoid", unit=_sigmoid_unit),
    Activation("identity", "homogeneous", identity, 1.0, None, None, False,
               "linear block: absorbable iff rank(A + W_down W_up) <= n", (), linear=True,
               unit=_identity_unit),
    Activation("swiglu", "gated", silu, None, "silu", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization"), lean_name="Absorb.silu",
               config_names=("silu", "swish"),
               unit=_silu_unit, derivative=_d_silu),
    Activation("geglu", "gated", gelu, None, "gelu", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization"), lean_name="Absorb.geluCdf",
               config_names=("gelu",),
               unit=_gelu_unit, derivative=_d_gelu),
    Activation("geglu_tanh", "gated", gelu_tanh, None, "gelu_tanh", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization"), lean_name="Absorb.geluTanh",
               config_names=_TANH_GELU_NAMES,
               unit=_gelu_tanh_unit, derivative=_d_gelu_tanh),
    Activation("reglu", "gated", relu, 2.0, "relu", 0.0, False,
               "never absorbable without biases (degree, k = 2)",
               ("degree", "linearization", "depth_degree"), lean_name="Absorb.relu",
               config_names=("relu",),
               unit=_relu_unit, derivative=_d_relu),
    Activation("glu", "gated", sigmoid, None, "sigmoid", 0.5, False,
               "no theorem applies (g(0) = 1/2); numerical search only", (),
               lean_name="Absorb.sigmoid", config_names=("sigmoid",),
               unit=_sigmoid_unit),
    Activation("softplus", "ungated", softplus, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True, lean_name="Absorb.softplus",
               unit=_softplus_unit, derivative=_d_softplus),
)

CATALOG: Mapping[str, Activation] = MappingProxyType({a.name: a for a in _ENTRIES})


def get_activation(name: str) -> Activation:
    """The catalog entry called ``name``; AbsorbError (listing the known names) otherwise."""
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(CATALOG)
        raise AbsorbError(f"unknown activation {name!r} (known: {known})") from None
