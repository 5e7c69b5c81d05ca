"""Numerical side of stacks: the realization Jacobian and residual-free stack fits.

For a stack of ungated blocks y_l = S_l y_{l−1} + W_l σ(U_l y_{l−1} + b_l) + c_l (S_l = A_l, the
skip matrix, for residual blocks; S_l = 0 for residual-free ones), :func:`stack_jacobian`
returns the outputs on a batch and their Jacobian with respect to every weight, by the chain
rule backwards through the layers: ∂y_L/∂W_l = G_l ⊗ σ(z_l), ∂y_L/∂U_l = (G_l W_l ⊙ σ'(z_l)) ⊗
y_{l−1}, G_{l−1} = G_l (S_l + W_l diag σ'(z_l) U_l), with G_L = I. ``fit_stack`` fits a
residual-free stack of the same widths by Levenberg–Marquardt (:mod:`absorb.marquardt`) on
that Jacobian.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from absorb.activations import CATALOG
from absorb.blocks import INPUT_SCALES, Array, Block, stack_forward
from absorb.budget import FLOAT_BYTES, Cost, require
from absorb.errors import AbsorbError
from absorb.marquardt import marquardt

#: Defaults of a stack fit: training inputs per scale, and Levenberg–Marquardt steps.
STACK_SAMPLES = 128
STACK_STEPS = 200


def _layers(blocks: Sequence[Block]) -> list[list[Array]]:
    return [[b.W_up, b.W_down] + ([b.b_up if b.b_up is not None else np.zeros(b.n),
                                   b.b_down if b.b_down is not None else np.zeros(b.d)]
                                  if b.has_biases else []) for b in blocks]


def flatten(blocks: Sequence[Block]) -> Array:
    """All weights of a stack in one vector (per layer: W_up, W_down, then biases if any)."""
    return np.concatenate([a.ravel() for layer in _layers(blocks) for a in layer])


def unflatten(theta: Array, like: Sequence[Block], residual: bool) -> list[Block]:
    """The stack with ``like``'s shapes and activation and the weights ``theta``."""
    out, pos = [], 0
    for layer, b in zip(_layers(like), like, strict=True):
        parts = []
        for a in layer:
            parts.append(theta[pos:pos + a.size].reshape(a.shape))
            pos += a.size
        biases = parts[2:] if b.has_biases else [None, None]
        out.append(Block(b.activation, parts[0], parts[1], b_up=biases[0], b_down=biases[1],
                         residual=residual))
    return out


def stack_jacobian(blocks: Sequence[Block], X: Array) -> tuple[Array, Array]:
    """(R(X), J): outputs (m, d) and ∂vec R(X)/∂θ, shape (m·d, |θ|), θ = :func:`flatten`."""
    act = blocks[0].activation
    if act.gated or act.derivative is None:
        supported = ", ".join(a.name for a in CATALOG.values()
                              if not a.gated and a.derivative is not None)
        raise AbsorbError(f"stack Jacobians support {supported} (got {act.name})")
    deriv = act.derivative
    ys, zs = [X], []
    for b in blocks:
        z = ys[-1] @ b.W_up.T + (0.0 if b.b_up is None else b.b_up)
        zs.append(z)
        ys.append(b(ys[-1]))
    m, d = X.shape
    G = np.broadcast_to(np.eye(d), (m, d, d)).copy()
    cols: list[list[Array]] = []
    for b, y, z in zip(blocks[::-1], ys[-2::-1], zs[::-1], strict=True):
        T = (G @ b.W_down) * deriv(z)[:, None, :]  # (m, d_out, n)
        layer = [np.einsum("mon,mc->monc", T, y).reshape(m * d, -1),
                 np.einsum("moa,mb->moab", G, act(z)).reshape(m * d, -1)]
        if b.has_biases:
            layer += [T.reshape(m * d, -1), G.reshape(m * d, -1)]
        cols.append(layer)
        G = (G @ b.skip_matrix() if b.residual else 0.0) + T @ b.W_up
    J = np.concatenate([c for layer in cols[::-1] for c in layer], axis=1)
    return ys[-1], J


@dataclass(frozen=True)
class StackFit:
    """Best held-out relative error per input scale over the restarts of a stack fit."""

    widths: tuple[int, ...]
    restarts: int
    relative_error: dict[float, float]
    per_restart: list[dict[float, float]]
    init_kinds: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"widths": list(self.widths), "restarts": self.restarts,
                "relative_error": {str(k): v for k, v in self.relative_error.items()},
                "per_restart": [{str(k): v for k, v in r.items()} for r in self.per_restart],
                "init_kinds": list(self.init_kinds),
                "note": "numerical evidence only: a small error does not prove absorbability "
                        "and a large one does not prove impossibility"}


def _random_like(blocks: Sequence[Block], rng: np.random.Generator) -> Array:
    parts = []
    for layer, b in zip(_layers(blocks), blocks, strict=True):
        parts += [rng.standard_normal(layer[0].size) / np.sqrt(b.d),
                  rng.standard_normal(layer[1].size) / np.sqrt(b.n)]
        parts += [0.5 * rng.standard_normal(a.size) for a in layer[2:]]
    return np.concatenate(parts)


def fit_cost(target: Sequence[Block], *, restarts: int, samples: int, steps: int) -> Cost:
    """A lower bound on a stack fit's needs: the Jacobian (rows = 3·samples·d residuals, one
    column per weight) and, as large again, the chain rule's per-layer temporaries; at least
    one rows×P² Gram product JᵀJ per Levenberg–Marquardt step, for every step and restart."""
    rows = len(INPUT_SCALES) * samples * target[0].d
    params = int(flatten(target).size)
    return Cost(2.0 * FLOAT_BYTES * rows * params,
                float(restarts) * steps * rows * params * params)


def fit_stack(target: Sequence[Block], *, rng: np.random.Generator, restarts: int = 3,
              samples: int = STACK_SAMPLES, steps: int = STACK_STEPS,
              init_from_target: bool = False,
              extra_starts: Sequence[tuple[str, Array]] = ()) -> StackFit:
    """Fit residual-free stacks of ``target``'s widths to it from random starts at fan-in scale;
    every scale weighs by its relative error. The search stays independent of the theory it
    checks: only with ``init_from_target`` does restart 0 start from the target's own weights
    (labelled ``from_target`` in the output). ``extra_starts`` are further labelled starting
    points (e.g. built from per-block fits of the target's function). Refused up front
    (AbsorbError) when :func:`fit_cost` does not fit the budget."""
    if restarts < 1 or samples < 1 or steps < 1:
        raise AbsorbError("restarts, samples and steps must be positive")
    require(fit_cost(target, restarts=restarts, samples=samples, steps=steps),
            f"a stack fit with {samples} samples per scale, {restarts} restarts x "
            f"{steps} Levenberg-Marquardt steps")
    d = target[0].d
    X = np.concatenate([s * rng.standard_normal((samples, d)) for s in INPUT_SCALES])
    T = stack_forward(target, X)
    norms = np.repeat([np.sqrt(np.mean(T[i * samples:(i + 1) * samples] ** 2)) + 1e-300
                       for i in range(len(INPUT_SCALES))], samples)[:, None]
    held = [(s, Xs, stack_forward(target, Xs))
            for s, Xs in ((s, s * rng.standard_normal((samples, d))) for s in INPUT_SCALES)]

    def residual(theta: Array) -> Array:
        out = stack_forward(unflatten(theta, target, False), X)
        return np.asarray(((out - T) / norms).ravel())

    def cost(theta: Array) -> float:
        return 0.5 * float(np.sum(residual(theta) ** 2))

    def normal_equations(theta: Array) -> tuple[Array, Array]:
        H = unflatten(theta, target, False)
        out, J = stack_jacobian(H, X)
        J /= np.repeat(norms.ravel(), d)[:, None]
        r = ((out - T) / norms).ravel()
        return J.T @ J, J.T @ r

    starts = [("from_target", flatten(target))] if init_from_target else []
    starts += [("random", _random_like(target, rng)) for _ in range(restarts - len(starts))]
    starts += list(extra_starts)
    per_restart = []
    # One BLAS thread: with two, OpenBLAS's reductions can round differently from run to run,
    # and a last-bit difference can send Levenberg–Marquardt to another minimum (same seed,
    # other numbers). Stack fits are small; determinism under --seed is worth more.
    with threadpool_limits(limits=1, user_api="blas"):
        for _, theta0 in starts:
            H = unflatten(marquardt(cost, normal_equations, theta0, steps), target, False)
            per_restart.append({
                s: float(np.max(np.abs(stack_forward(H, Xs) - TXs)))
                / max(float(np.max(np.abs(TXs))), 1e-300)
                for s, Xs, TXs in held})
    best = {s: min(r[s] for r in per_restart) for s in INPUT_SCALES}
    return StackFit(tuple(b.n for b in target), len(starts), best, per_restart,
                    tuple(k for k, _ in starts))


def layerwise_start(target: Sequence[Block], rng: np.random.Generator) -> tuple[str, Array]:
    """A labelled start for :func:`fit_stack` built from the target's *functions*, not its
    weights: each block fitted alone by the single-block search (random starts, unit
    reflections and re-draws, :func:`absorb.fits.fit_residual_free`), then stacked. When every
    block is absorbable on its own the stack of the fits already equals the target, so a
    planted control never depends on a lucky joint start. 1024 samples per scale: a ReLU
    unit's hyperplane is pinned down only by samples on both sides of it nearby, and a block
    fitted exactly on 256 samples per scale was measured off by 1e-5 on held-out points (a thin
    wedge between two near-parallel hyperplanes that no training sample hit)."""
    from absorb.fits import fit_residual_free

    fits = [fit_residual_free(b, restarts=2, steps=100, samples=1024, redraws=2 * b.n, rng=rng,
                              stop_below=1e-12).block for b in target]
    return "layer-wise", flatten([h for h in fits if h is not None])
