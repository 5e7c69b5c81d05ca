"""Numerical counterexample search: fit a residual-free block to a skip block.

Given a target skip block f(x) = A x + M(x) (THEORY.md, Setting), fit h of the same kind — the
same activation (gated when f is), biases iff f has them, width w (default: f's width n) —
by full-batch Adam on

    L(V) = (1/|scales|) Σ_scales ‖h(X_s) − f(X_s)‖_F² / ‖f(X_s)‖_F²,   X_s = s·Z, Z ~ N(0, I_d),

so that every input scale counts equally: the degree and linearization arguments live near 0
and far out, where an unnormalized loss would see nothing. Forward and backward passes are
hand-written, vectorized numpy with preallocated buffers (float64 or float32); the result is
the held-out relative error ‖h(X) − f(X)‖_F / ‖f(X)‖_F per scale, best over restarts.

Restart 0 starts from the target's own weights ("warm": the skip block without its skip,
padded with fresh units or truncated to width w); the others from random Gaussian weights at
fan-in scale; ``inits`` adds caller-chosen starting blocks (e.g. the sign-flip construction).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, ndtr
from tqdm import tqdm

from absorb.blocks import Block
from absorb.errors import AbsorbError

__all__ = [
    "DERIVATIVES",
    "AdamFit",
    "SearchResult",
    "fit_residual_free",
    "run_search",
]

Array = NDArray[Any]
ValueAndDerivative = Callable[[Array], tuple[Array, Array]]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_C = 0.044715


# --------------------------------------------------------------------------------------------
# activations with their derivatives, evaluated together (they share intermediates) and in
# the dtype of the input (float32 stays float32); the values agree with absorb.activations.


def _relu(z: Array) -> tuple[Array, Array]:
    return np.maximum(z, 0), (z > 0).astype(z.dtype)


def _relu2(z: Array) -> tuple[Array, Array]:
    r = np.maximum(z, 0)
    return r * r, 2 * r


def _gelu(z: Array) -> tuple[Array, Array]:
    cdf = ndtr(z)
    pdf = np.exp(-0.5 * z * z) * z.dtype.type(_INV_SQRT_2PI)
    return z * cdf, cdf + z * pdf


def _gelu_tanh(z: Array) -> tuple[Array, Array]:
    c, k = z.dtype.type(_SQRT_2_OVER_PI), z.dtype.type(_GELU_TANH_C)
    th = np.tanh(c * (z + k * z**3))
    half = z.dtype.type(0.5)
    return half * z * (1 + th), half * (1 + th) + half * z * (1 - th * th) * c * (1 + 3 * k * z * z)


def _silu(z: Array) -> tuple[Array, Array]:
    s = expit(z)
    return z * s, s * (1 + z * (1 - s))


def _tanh(z: Array) -> tuple[Array, Array]:
    t = np.tanh(z)
    return t, 1 - t * t


def _sigmoid(z: Array) -> tuple[Array, Array]:
    s = expit(z)
    return s, s * (1 - s)


def _identity(z: Array) -> tuple[Array, Array]:
    return z, np.ones_like(z)


DERIVATIVES: dict[str, ValueAndDerivative] = {
    "relu": _relu,
    "relu2": _relu2,
    "gelu": _gelu,
    "gelu_tanh": _gelu_tanh,
    "silu": _silu,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "identity": _identity,
}
"""(σ(z), σ'(z)) keyed by the name of σ (ungated) or of the gate g (gated units)."""


def _unit_function(block: Block) -> ValueAndDerivative:
    act = block.activation
    key = act.gate if act.gated else act.name
    if key is None or key not in DERIVATIVES:
        raise AbsorbError(f"no derivative known for activation {act.name!r}")
    return DERIVATIVES[key]


# --------------------------------------------------------------------------------------------
# the fit engine


_PARAMS = ("V_up", "V_down", "V_gate", "c_up", "c_down")


class AdamFit:
    """Full-batch Adam on the per-scale-normalized squared error of a residual-free block.

    Parameters V_up (w×d), V_down (d×w), V_gate (w×d, gated), c_up (w), c_down (d). With
    Z = X V_upᵀ + c_up, ungated H = σ(Z), gated H = g(X V_gateᵀ) ⊙ Z, Y = H V_downᵀ + c_down,
    R = Y − T and the loss Σ_rows ω_m ‖R_m‖² (ω = per-row weights), the gradients are

        dY = 2ω ⊙ R,  ∇V_down = dYᵀH,  dH = dY V_down,
        ungated: dZ = dH ⊙ σ'(Z);  gated: dZ = dH ⊙ g(Z_g), dZ_g = dH ⊙ Z ⊙ g'(Z_g),
        ∇V_up = dZᵀX,  ∇V_gate = dZ_gᵀX,  ∇c_up = Σ_m dZ,  ∇c_down = Σ_m dY.

    All matrices of size m×w and m×d are allocated once; a step is 10·m·d·w flops of matrix
    multiplication (14·m·d·w gated) plus O(m·w) elementwise work.
    """

    beta1 = 0.9
    beta2 = 0.999
    eps = 1e-12

    def __init__(
        self,
        unit: ValueAndDerivative,
        X: Array,
        T: Array,
        row_weight: Array,
        params: dict[str, Array],
        dtype: type = np.float64,
    ) -> None:
        self.unit = unit
        self.dtype = np.dtype(dtype)
        self.X = np.ascontiguousarray(X, dtype=self.dtype)
        self.T = np.ascontiguousarray(T, dtype=self.dtype)
        self.omega2 = (2 * np.asarray(row_weight, dtype=self.dtype))[:, None]
        self.omega = np.asarray(row_weight, dtype=self.dtype)
        self.p = {k: np.array(v, dtype=self.dtype) for k, v in params.items() if v is not None}
        self.gated = "V_gate" in self.p
        m, d = self.X.shape
        w = self.p["V_up"].shape[0]
        self.m, self.d, self.w = m, d, w
        z = self.dtype
        self.Z = np.empty((m, w), z)
        self.H = np.empty((m, w), z)
        self.dH = np.empty((m, w), z)
        self.Zg = np.empty((m, w), z) if self.gated else None
        self.Y = np.empty((m, d), z)
        self.dY = np.empty((m, d), z)
        self.grad = {k: np.empty_like(v) for k, v in self.p.items()}
        self.m1 = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.m2 = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.tmp = {k: np.empty_like(v) for k, v in self.p.items()}
        self.t = 0

    @property
    def flops_per_step(self) -> int:
        """Matrix-multiplication flops of one step (the elementwise work is not counted)."""
        return (14 if self.gated else 10) * self.m * self.d * self.w

    def loss_and_grad(self) -> float:
        """Forward and backward pass; fills ``self.grad`` and returns the loss."""
        p, g = self.p, self.grad
        np.matmul(self.X, p["V_up"].T, out=self.Z)
        if "c_up" in p:
            self.Z += p["c_up"]
        if self.Zg is None:
            H, dsig = self.unit(self.Z)
            self.H[...] = H
        else:
            np.matmul(self.X, p["V_gate"].T, out=self.Zg)
            gate, dgate = self.unit(self.Zg)
            np.multiply(gate, self.Z, out=self.H)
        np.matmul(self.H, p["V_down"].T, out=self.Y)
        if "c_down" in p:
            self.Y += p["c_down"]
        np.subtract(self.Y, self.T, out=self.dY)  # R
        loss = float(np.einsum("md,md,m->", self.dY, self.dY, self.omega))
        self.dY *= self.omega2  # dY = 2ω ⊙ R
        np.matmul(self.dY.T, self.H, out=g["V_down"])
        if "c_down" in g:
            np.sum(self.dY, axis=0, out=g["c_down"])
        np.matmul(self.dY, p["V_down"], out=self.dH)
        if self.Zg is None:
            self.dH *= dsig  # dZ
        else:
            # dZ_g = dH ⊙ Z ⊙ g'(Z_g) (into H, no longer needed), then dZ = dH ⊙ g(Z_g)
            np.multiply(self.dH, self.Z, out=self.H)
            self.H *= dgate
            np.matmul(self.H.T, self.X, out=g["V_gate"])
            self.dH *= gate
        np.matmul(self.dH.T, self.X, out=g["V_up"])
        if "c_up" in g:
            np.sum(self.dH, axis=0, out=g["c_up"])
        return loss

    def step(self, lr: float) -> float:
        """One Adam step at learning rate ``lr``; returns the loss before the step."""
        loss = self.loss_and_grad()
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        # bias corrections folded into the step size
        alpha = lr * math.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for k, param in self.p.items():
            grad, m1, m2, tmp = self.grad[k], self.m1[k], self.m2[k], self.tmp[k]
            m1 *= b1
            m1 += (1 - b1) * grad
            np.multiply(grad, grad, out=tmp)
            m2 *= b2
            m2 += (1 - b2) * tmp
            np.sqrt(m2, out=tmp)
            tmp += self.eps
            np.divide(m1, tmp, out=tmp)
            tmp *= alpha
            param -= tmp
        return loss


# --------------------------------------------------------------------------------------------
# the search


@dataclass(frozen=True)
class SearchResult:
    """Held-out relative errors ‖h(X) − f(X)‖/‖f(X)‖ per input scale (best over restarts)."""

    width: int
    restarts: int
    steps: int
    samples: int
    scales: tuple[float, ...]
    relative_error: dict[float, float]
    per_restart: list[dict[float, float]]
    init_kinds: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "width": self.width,
            "restarts": self.restarts,
            "steps": self.steps,
            "samples": self.samples,
            "scales": list(self.scales),
            "relative_error": {str(s): e for s, e in self.relative_error.items()},
            "per_restart": [
                {"init": kind, "relative_error": {str(s): e for s, e in row.items()}}
                for kind, row in zip(self.init_kinds, self.per_restart, strict=True)
            ],
        }


def _inputs(rng: np.random.Generator, d: int, samples: int, scales: Sequence[float]) -> Array:
    return np.concatenate([s * rng.standard_normal((samples, d)) for s in scales])


def _random_params(
    target: Block, width: int, rng: np.random.Generator
) -> dict[str, Array | None]:
    d = target.d
    return {
        "V_up": rng.standard_normal((width, d)) / math.sqrt(d),
        "V_down": rng.standard_normal((d, width)) / math.sqrt(width),
        "V_gate": rng.standard_normal((width, d)) / math.sqrt(d) if target.W_gate is not None
        else None,
        "c_up": 0.5 * rng.standard_normal(width) if target.b_up is not None else None,
        "c_down": 0.5 * rng.standard_normal(d) if target.b_down is not None else None,
    }


def _params_of(block: Block, width: int, rng: np.random.Generator) -> dict[str, Array | None]:
    """A block's own weights at width ``width``: truncated, or padded with fresh units.

    Padding comes in antipodal pairs: up-rows (u, −u), down-columns (v, −v)·10⁻², so for an
    odd-part-linear σ the pair adds v uᵀx (σ(z) − σ(−z) = z), a small linear term the optimizer
    can grow into a skip, instead of having to discover two exactly opposite hyperplanes.
    """
    fresh = _random_params(block, width, rng)
    k = min(width, block.n)
    pairs = (width - k) // 2
    out = dict(fresh)
    for name, src, axis in (("V_up", block.W_up, 0), ("V_down", block.W_down, 1),
                            ("V_gate", block.W_gate, 0), ("c_up", block.b_up, 0)):
        if src is None:
            continue
        dst = np.array(fresh[name])
        if axis == 0:
            dst[:k] = src[:k]
            if name == "V_up":
                dst[k + pairs : k + 2 * pairs] = -dst[k : k + pairs]
        else:
            dst[:, :k] = src[:, :k]
            dst[:, k:] *= 1e-2
            dst[:, k + pairs : k + 2 * pairs] = -dst[:, k : k + pairs]
        out[name] = dst
    if block.b_down is not None:
        out["c_down"] = np.array(block.b_down)
    return out


def _as_block(target: Block, p: dict[str, Array]) -> Block:
    as64 = {k: np.asarray(v, dtype=np.float64) for k, v in p.items()}
    return Block(
        target.activation,
        as64["V_up"],
        as64["V_down"],
        W_gate=as64.get("V_gate"),
        b_up=as64.get("c_up"),
        b_down=as64.get("c_down"),
        residual=False,
    )


def _relative_errors(h: Block, f: Block, X_by_scale: Sequence[tuple[float, Array]]) -> dict[
    float, float
]:
    out = {}
    for s, X in X_by_scale:
        fx = f(X)
        out[s] = float(np.linalg.norm(h(X) - fx) / np.linalg.norm(fx))
    return out


def _lr(step: int, steps: int, lr0: float) -> float:
    """Cosine decay from lr0 to lr0·10⁻³."""
    lo = lr0 * 1e-3
    return lo + 0.5 * (lr0 - lo) * (1 + math.cos(math.pi * step / max(1, steps - 1)))


def fit_residual_free(
    target: Block,
    *,
    width: int | None = None,
    restarts: int = 4,
    steps: int = 1500,
    samples: int = 2048,
    scales: tuple[float, ...] = (0.01, 1.0, 100.0),
    rng: np.random.Generator,
    dtype: type = np.float64,
    progress: bool = False,
    inits: Sequence[Block] = (),
    lr: float = 1e-2,
) -> SearchResult:
    """Fit residual-free blocks of ``target``'s kind to ``target`` (see the module docstring).

    ``samples`` training (and as many held-out) inputs per scale. Restart 0 is warm (target's
    weights), restarts 1..restarts−1 random, then one restart per block in ``inits``.
    """
    w = target.n if width is None else width
    if w < 1 or restarts < 1 or steps < 1 or samples < 1:
        raise AbsorbError("width, restarts, steps and samples must be positive")
    if not scales or any(not (s > 0 and math.isfinite(s)) for s in scales):
        raise AbsorbError(f"scales must be positive and finite, got {scales}")
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise AbsorbError(f"dtype must be float32 or float64, got {dtype}")
    unit = _unit_function(target)
    X = _inputs(rng, target.d, samples, scales)
    T = target(X)
    # per-row weight 1/(|scales|·‖f(X_s)‖²): every scale contributes its relative error
    norms = np.array([np.sum(T[i * samples : (i + 1) * samples] ** 2) for i in range(len(scales))])
    if np.any(norms == 0):
        raise AbsorbError("the target block is zero on the inputs of some scale")
    omega = np.repeat(1.0 / (len(scales) * norms), samples)
    held = [(s, s * rng.standard_normal((samples, target.d))) for s in scales]
    starts: list[tuple[str, dict[str, Array | None]]] = [("warm", _params_of(target, w, rng))]
    starts += [("random", _random_params(target, w, rng)) for _ in range(restarts - 1)]
    for blk in inits:
        if blk.n != w or blk.activation != target.activation:
            raise AbsorbError("an initial block must have the search's width and activation")
        starts.append(("given", _params_of(blk, w, rng)))
    per_restart: list[dict[float, float]] = []
    bar = tqdm(total=len(starts) * steps, desc="search", file=sys.stderr, disable=not progress,
               leave=False)
    try:
        for kind, params in starts:
            fit = AdamFit(unit, X, T, omega, {k: v for k, v in params.items() if v is not None},
                          dtype)
            for i in range(steps):
                loss = fit.step(_lr(i, steps, lr))
                if (i + 1) % 50 == 0 or i + 1 == steps:
                    bar.update(50 if (i + 1) % 50 == 0 else (i + 1) % 50)
                    bar.set_postfix(init=kind, loss=f"{loss:.3g}", refresh=False)
            per_restart.append(_relative_errors(_as_block(target, fit.p), target, held))
    finally:
        bar.close()
    best = {s: min(row[s] for row in per_restart) for s in scales}
    return SearchResult(
        width=w,
        restarts=len(starts),
        steps=steps,
        samples=samples,
        scales=tuple(scales),
        relative_error=best,
        per_restart=per_restart,
        init_kinds=tuple(kind for kind, _ in starts),
    )


def run_search(
    block: Block,
    *,
    width_factor: float = 1.0,
    restarts: int = 4,
    steps: int = 1500,
    samples: int = 2048,
    seed: int = 0,
    progress: bool = False,
) -> dict[str, object]:
    """``absorb search``: fit at width ⌈width_factor·n⌉ and report it as a JSON object.

    width_factor = 1 + 2d/n is the control where ReLU/GELU skips are exactly representable
    (x = σ(x) − σ(−x) needs 2d extra units).
    """
    if not (width_factor > 0 and math.isfinite(width_factor)):
        raise AbsorbError(f"width factor must be positive, got {width_factor}")
    width = max(1, math.ceil(width_factor * block.n - 1e-9))
    res = fit_residual_free(block, width=width, restarts=restarts, steps=steps, samples=samples,
                            rng=np.random.default_rng(seed), progress=progress)
    return {
        "target": {
            "activation": block.activation.name,
            "d": block.d,
            "n": block.n,
            "gated": block.W_gate is not None,
            "biases": block.has_biases,
            "skip": "identity" if block.A_skip is None else "matrix",
        },
        "width_factor": width_factor,
        **res.to_json(),
    }
