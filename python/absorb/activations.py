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
  for the σ whose bias-free and biased blocks the checker's theorems speak about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, ndtr

from absorb.errors import AbsorbError

Array = NDArray[np.float64]
Family = Literal["homogeneous", "gated", "ungated", "other"]

_SQRT_2_OVER_PI = float(np.sqrt(2.0 / np.pi))


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
        }


_INDEX_SET_VERDICT = (
    "absorbable iff W_down[:,S] W_up[S,:] = -A for some index set S (nondegenerate weights; "
    "with or without biases, via bias_blowup); generically not absorbable"
)
_BOUNDED_VERDICT = "never absorbable when A != 0, any width and biases (bounded)"

_BLOWUP_THEOREMS = ("odd_part", "index_set_sufficient", "bias_blowup", "index_set_necessary",
                    "relaxation_certificate")

_ENTRIES = (
    Activation("relu", "homogeneous", relu, 1.0, None, None, True, _INDEX_SET_VERDICT,
               (*_BLOWUP_THEOREMS, "generic_measure_zero"), relu_at_infinity=True,
               necessary_direct=True, checker_name="relu"),
    Activation("gelu", "ungated", gelu, None, None, None, True, _INDEX_SET_VERDICT,
               (*_BLOWUP_THEOREMS, "generic_measure_zero"), relu_at_infinity=True,
               necessary_direct=True, checker_name="gelu"),
    Activation("gelu_tanh", "ungated", gelu_tanh, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True),
    Activation("silu", "ungated", silu, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True),
    Activation("relu2", "homogeneous", relu2, 2.0, None, None, False,
               "never absorbable without biases (degree, k = 2)", ("degree", "depth_degree")),
    Activation("tanh", "ungated", tanh, None, None, None, False, _BOUNDED_VERDICT,
               ("bounded",), bound=1.0),
    Activation("sigmoid", "ungated", sigmoid, None, None, None, False, _BOUNDED_VERDICT,
               ("bounded",), bound=1.0),
    Activation("identity", "homogeneous", identity, 1.0, None, None, False,
               "linear block: absorbable iff rank(A + W_down W_up) <= n", (), linear=True),
    Activation("swiglu", "gated", silu, None, "silu", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization")),
    Activation("geglu", "gated", gelu, None, "gelu", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization")),
    Activation("geglu_tanh", "gated", gelu_tanh, None, "gelu_tanh", 0.0, False,
               "never absorbable without biases (linearization, g(0) = 0)",
               ("linearization", "depth_linearization")),
    Activation("reglu", "gated", relu, 2.0, "relu", 0.0, False,
               "never absorbable without biases (degree, k = 2)",
               ("degree", "linearization", "depth_degree")),
    Activation("glu", "gated", sigmoid, None, "sigmoid", 0.5, False,
               "no theorem applies (g(0) = 1/2); numerical search only", ()),
    Activation("softplus", "ungated", softplus, None, None, None, True, _INDEX_SET_VERDICT,
               _BLOWUP_THEOREMS, relu_at_infinity=True),
)

CATALOG: Mapping[str, Activation] = MappingProxyType({a.name: a for a in _ENTRIES})


def get_activation(name: str) -> Activation:
    """The catalog entry called ``name``; AbsorbError (listing the known names) otherwise."""
    try:
        return CATALOG[name]
    except KeyError:
        known = ", ".join(CATALOG)
        raise AbsorbError(f"unknown activation {name!r} (known: {known})") from None
