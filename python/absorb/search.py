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
    "UnitFunction",
    "fit_residual_free",
    "run_search",
]

Array = NDArray[Any]
UnitFunction = Callable[[Array, Array, Array], None]

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_TANH_C = 0.044715


# --------------------------------------------------------------------------------------------
# activations with their derivatives: unit(z, value, deriv) writes σ(z) into ``value`` and σ'(z)
# into ``deriv`` (preallocated, dtype of z), sharing intermediates; values agree with
# absorb.activations (tested). Writing into fixed buffers avoids a fresh m×w allocation (and
# its page faults) per call, which otherwise costs as much as the matrix products.


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
    "identity": _identity,
}
"""unit(z, value, deriv) for σ (ungated) or the gate g (gated units), keyed by its name."""


def _unit_function(block: Block) -> UnitFunction:
    act = block.activation
    key = act.gate if act.gated else act.name
    if key is None or key not in DERIVATIVES:
        raise AbsorbError(f"no derivative known for activation {act.name!r}")
    return DERIVATIVES[key]


# --------------------------------------------------------------------------------------------
# the fit engine


class AdamFit:
    """Full-batch Adam on the per-scale-normalized squared error of a residual-free block.

    Parameters V_up (w×d), V_down (d×w), V_gate (w×d, gated), c_up (w), c_down (d). With
    Z = X V_upᵀ + c_up, ungated H = σ(Z), gated H = g(X V_gateᵀ) ⊙ Z, Y = H V_downᵀ + c_down,
    R = Y − T and the loss Σ_rows ω_m ‖R_m‖² (ω = per-row weights), the gradients are

        dY = 2ω ⊙ R,  ∇V_down = dYᵀH,  dH = dY V_down,
        ungated: dZ = dH ⊙ σ'(Z);  gated: dZ = dH ⊙ g(Z_g), dZ_g = dH ⊙ Z ⊙ g'(Z_g),
        ∇V_up = dZᵀX,  ∇V_gate = dZ_gᵀX,  ∇c_up = Σ_m dZ,  ∇c_down = Σ_m dY.

    ``project=True`` (variable projection): the output layer enters linearly, so at every step
    (V_down, c_down) is set to its weighted least-squares optimum for the current H (normal
    equations with a relative ridge), and Adam moves only the inner weights; by the
    envelope theorem the partial gradient above is then the gradient of the projected loss.
    This removes the slow bilinear coupling of the two layers (an exactly representable target
    is fitted to ~1e-9 instead of stalling at ~1e-2).

    All m×w and m×d buffers are allocated once. Matrix flops of a step: 10·m·d·w (plain; 14 gated)
    or 8·m·d·w + m·(w+1)² + (w+1)³/3 (projected; 12·m·d·w + … gated).
    """

    beta1 = 0.9
    beta2 = 0.999
    eps = 1e-8

    def __init__(
        self,
        unit: UnitFunction,
        X: Array,
        T: Array,
        row_weight: Array,
        params: dict[str, Array],
        dtype: type = np.float64,
        *,
        project: bool = False,
    ) -> None:
        self.unit = unit
        self.dtype = np.dtype(dtype)
        z = self.dtype
        self.X = np.ascontiguousarray(X, dtype=z)
        self.T = np.ascontiguousarray(T, dtype=z)
        omega = np.asarray(row_weight, dtype=np.float64)
        self.omega2 = (2 * omega).astype(z)[:, None]
        self.p = {k: np.array(v, dtype=z) for k, v in params.items()}
        self.gated = "V_gate" in self.p
        self.project = project
        m, d = int(self.X.shape[0]), int(self.X.shape[1])
        w = int(self.p["V_up"].shape[0])
        self.m, self.d, self.w = m, d, w
        self.Z = np.empty((m, w), z)
        self.H = np.empty((m, w), z)
        self.dH = np.empty((m, w), z)
        self.D = np.empty((m, w), z)  # σ'(Z), or g'(Z_g) when gated
        self.Zg = np.empty((m, w), z) if self.gated else None
        self.Gv = np.empty((m, w), z) if self.gated else None  # g(Z_g)
        self.Y = np.empty((m, d), z)
        self.dY = np.empty((m, d), z)
        self.trained = [k for k in self.p if not (project and k in ("V_down", "c_down"))]
        self.grad = {k: np.empty_like(self.p[k]) for k in self.trained}
        self.m1 = {k: np.zeros_like(self.p[k]) for k in self.trained}
        self.m2 = {k: np.zeros_like(self.p[k]) for k in self.trained}
        self.tmp = {k: np.empty_like(self.p[k]) for k in self.trained}
        if project:
            self.bias_col = "c_down" in self.p
            k = w + int(self.bias_col)
            self.sqrt_omega = np.sqrt(omega).astype(z)[:, None]
            self.Hs = np.empty((m, k), z)  # √ω ⊙ [H, 1]
            if self.bias_col:
                self.Hs[:, w] = self.sqrt_omega[:, 0]
            self.HsT_T = np.empty((k, d), z)
            self.Ts = self.T * self.sqrt_omega
            self.ridge = 1e-12 if z == np.float64 else 1e-6
        self.t = 0

    @property
    def flops_per_step(self) -> int:
        """Matrix flops of one step (BLAS work; the O(m·w) elementwise work is not counted)."""
        m, d, w = self.m, self.d, self.w
        if not self.project:
            return (14 if self.gated else 10) * m * d * w
        k = w + int(self.bias_col)
        return (12 if self.gated else 8) * m * d * w + m * k * k + k**3 // 3

    def _project_down(self) -> None:
        """(V_down, c_down) ← argmin Σ ω_m ‖[H, 1]_m [V_down, c_down]ᵀ − T_m‖² (with a ridge)."""
        w = self.w
        np.multiply(self.H, self.sqrt_omega, out=self.Hs[:, :w])
        gram = self.Hs.T @ self.Hs  # syrk
        np.matmul(self.Hs.T, self.Ts, out=self.HsT_T)
        gram[np.diag_indices_from(gram)] += self.ridge * float(np.trace(gram)) / len(gram) + 1e-30
        # numpy's LAPACK, not scipy's: scipy links a second OpenBLAS whose idle threads spin
        # against numpy's between calls (measured: 10× slower steps)
        sol = np.linalg.solve(gram, self.HsT_T)
        self.p["V_down"][...] = sol[:w].T
        if self.bias_col:
            self.p["c_down"][...] = sol[w]

    def loss_and_grad(self) -> float:
        """Forward and backward pass; fills ``self.grad`` and returns the loss."""
        p, g = self.p, self.grad
        np.matmul(self.X, p["V_up"].T, out=self.Z)
        if "c_up" in p:
            self.Z += p["c_up"]
        if self.Zg is None or self.Gv is None:
            self.unit(self.Z, self.H, self.D)
        else:
            np.matmul(self.X, p["V_gate"].T, out=self.Zg)
            self.unit(self.Zg, self.Gv, self.D)
            np.multiply(self.Gv, self.Z, out=self.H)
        if self.project:
            self._project_down()
        np.matmul(self.H, p["V_down"].T, out=self.Y)
        if "c_down" in p:
            self.Y += p["c_down"]
        self.Y -= self.T  # R, in place of Y
        np.multiply(self.Y, self.omega2, out=self.dY)  # dY = 2ω ⊙ R
        loss = 0.5 * float(np.vdot(self.dY, self.Y))  # Σ ω‖R‖², a BLAS dot
        if "V_down" in g:
            np.matmul(self.dY.T, self.H, out=g["V_down"])
        if "c_down" in g:
            np.sum(self.dY, axis=0, out=g["c_down"])
        np.matmul(self.dY, p["V_down"], out=self.dH)
        if self.Zg is None or self.Gv is None:
            self.dH *= self.D  # dZ
        else:
            # dZ_g = dH ⊙ Z ⊙ g'(Z_g) (into Z_g, no longer needed), then dZ = dH ⊙ g(Z_g)
            np.multiply(self.dH, self.Z, out=self.Zg)
            self.Zg *= self.D
            np.matmul(self.Zg.T, self.X, out=g["V_gate"])
            self.dH *= self.Gv
        np.matmul(self.dH.T, self.X, out=g["V_up"])
        if "c_up" in g:
            np.sum(self.dH, axis=0, out=g["c_up"])
        return loss

    def step(self, lr: float) -> float:
        """One Adam step at learning rate ``lr``; returns the loss before the step."""
        loss = self.loss_and_grad()
        self.update(lr)
        return loss

    def update(self, lr: float) -> None:
        """The Adam update from the gradient of the last `loss_and_grad`."""
        self.t += 1
        b1, b2 = self.beta1, self.beta2
        # bias corrections folded into the step size
        alpha = lr * math.sqrt(1 - b2**self.t) / (1 - b1**self.t)
        for k in self.trained:
            param, grad, m1, m2, tmp = self.p[k], self.grad[k], self.m1[k], self.m2[k], self.tmp[k]
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


def _random_params(target: Block, width: int, rng: np.random.Generator) -> dict[str, Array | None]:
    d = target.d
    return {
        "V_up": rng.standard_normal((width, d)) / math.sqrt(d),
        "V_down": rng.standard_normal((d, width)) / math.sqrt(width),
        "V_gate": rng.standard_normal((width, d)) / math.sqrt(d)
        if target.W_gate is not None
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
    for name, src, axis in (
        ("V_up", block.W_up, 0),
        ("V_down", block.W_down, 1),
        ("V_gate", block.W_gate, 0),
        ("c_up", block.b_up, 0),
    ):
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


def _relative_errors(
    h: Block, f: Block, X_by_scale: Sequence[tuple[float, Array]]
) -> dict[float, float]:
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
    project: bool = True,
) -> SearchResult:
    """Fit residual-free blocks of ``target``'s kind to ``target`` (see the module docstring).

    ``samples`` training (and as many held-out) inputs per scale. Restart 0 is warm (target's
    weights), restarts 1..restarts−1 random, then one restart per block in ``inits``. Adam at
    learning rate ``lr`` with cosine decay; ``project`` solves the output layer by least squares
    at every step (see `AdamFit`).
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
    bar = tqdm(
        total=len(starts) * steps, desc="search", file=sys.stderr, disable=not progress, leave=False
    )
    try:
        for kind, params in starts:
            fit = AdamFit(
                unit,
                X,
                T,
                omega,
                {k: v for k, v in params.items() if v is not None},
                dtype,
                project=project,
            )
            best_loss, best_p = math.inf, fit.p
            for i in range(steps):
                loss = fit.loss_and_grad()
                # keep the best iterate: Adam's fixed-size steps can leave a good point
                if loss < best_loss:
                    best_loss, best_p = loss, {k: v.copy() for k, v in fit.p.items()}
                fit.update(_lr(i, steps, lr))
                if (i + 1) % 50 == 0 or i + 1 == steps:
                    bar.update(50 if (i + 1) % 50 == 0 else (i + 1) % 50)
                    bar.set_postfix(init=kind, loss=f"{loss:.3g}", refresh=False)
            per_restart.append(_relative_errors(_as_block(target, best_p), target, held))
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
    res = fit_residual_free(
        block,
        width=width,
        restarts=restarts,
        steps=steps,
        samples=samples,
        rng=np.random.default_rng(seed),
        progress=progress,
    )
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
