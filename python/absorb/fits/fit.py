"""Fit residual-free blocks to a skip block: restarts, engines, held-out errors, lower bounds.

Given a target f(x) = A x + M(x) (THEORY.md, Setting), fit h of the same kind — the same
activation (gated when f is), biases iff f has them, width w (default n) — to

    L(h) = Σ_s ‖h(X_s) − f(X_s)‖_F² / (|scales| ‖f(X_s)‖_F²),   X_s = s·Z, Z ~ N(0, I_d),

so every input scale counts by its *relative* error (the degree and linearization arguments
live near 0 and far out, where an unnormalized loss would see nothing).

Engines:

* ``lm`` (default): variable projection + Levenberg–Marquardt with an analytic Jacobian
  (:class:`absorb.fits.lm.VarPro`). Each restart, from random fan-in-scale weights, runs
  (1) LM on the model augmented with a free linear term L x (a continuation aid: the augmented
  model fits the nonlinear part without having to produce the linear part),
  (2) an iterated local search over unit reflections u_i → −u_i (gated units: the gate's
  g_i → −g_i), which changes a unit's linear part (gated: a quadratic form) discretely,
  (3) LM on the true model,
  (4) with ``redraws`` > 0, an iterated local search over single units: one unit's inner
  weights re-drawn at random, the block re-fitted, the move kept when the cost drops
  (:meth:`absorb.fits.lm.VarPro.redraw_search`).
  The restart with the smallest held-out error is polished (LM with 3× the iterations),
  the polish kept only when it lowers the training cost without raising the held-out error.
* ``adam``: full-batch Adam with the output layer projected (:class:`absorb.fits.adam.AdamFit`).

Independence: no start uses the target's weights, its index set or the sign-flip construction,
unless ``init_from_target=True`` (one extra restart from the target's own inner weights,
labelled "from-target (not independent)").

The result carries held-out errors on pairs {x, 2x} per scale and, beside them, the lower
bounds of :mod:`absorb.fits.bounds`; a fit below a bound is flagged as a contradiction.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from threadpoolctl import threadpool_limits
from tqdm import tqdm

from absorb.blocks import INPUT_SCALES, Block
from absorb.errors import AbsorbError
from absorb.fits.adam import AdamFit
from absorb.fits.bounds import contradictions, lower_bounds, pairs
from absorb.fits.lm import VarPro
from absorb.fits.units import Array, unit_function

__all__ = ["ENGINES", "FOUND_TOL", "FitResult", "fit_residual_free"]

ENGINES = ("lm", "adam")
DEFAULT_STEPS = {"lm": 200, "adam": 1500}
#: Adam's initial learning rate (cosine-decayed to 10⁻³ of it; a tenth of it for the polish).
ADAM_LR = 1e-2
FROM_TARGET = "from-target (not independent)"
#: A fit "finds" an exact block below this (max over scales of the held-out relative error):
#: what a positive control must reach, the experiments' and ``absorb search``'s alike.
FOUND_TOL = 1e-8


@dataclass(frozen=True)
class FitResult:
    """Held-out errors of the best restart per scale, every restart's, and the bounds."""

    width: int
    engine: str
    restarts: int
    steps: int
    samples: int
    scales: tuple[float, ...]
    relative_error: dict[float, float]
    sup_relative_error: dict[float, float]
    per_restart: list[dict[float, float]]
    init_kinds: tuple[str, ...]
    seconds: float
    stopped_by_budget: bool
    bounds: list[dict[str, object]] = field(default_factory=list)
    contradictions: list[dict[str, object]] = field(default_factory=list)
    from_target_requested: bool = False
    #: Seconds from the start until each restart had finished (same order as per_restart).
    restart_seconds: list[float] = field(default_factory=list)
    #: The best fitted residual-free block (not part of the JSON).
    block: Block | None = field(default=None, compare=False, repr=False)

    @property
    def worst(self) -> float:
        """The best restart's largest relative error over the scales."""
        return max(self.relative_error.values())

    @property
    def independent(self) -> bool:
        """False as soon as a start from the target's weights was asked for (ran or not)."""
        return not self.from_target_requested and FROM_TARGET not in self.init_kinds

    @property
    def status(self) -> str:
        done = len(self.per_restart)
        if self.stopped_by_budget:
            return f"stopped by time budget after {done} restarts"
        return f"completed {done} restarts"

    def to_json(self) -> dict[str, object]:
        def by_scale(row: dict[float, float]) -> dict[str, float]:
            return {str(s): e for s, e in row.items()}

        return {
            "width": self.width,
            "engine": self.engine,
            "restarts": self.restarts,
            "steps": self.steps,
            "samples": self.samples,
            "scales": list(self.scales),
            "relative_error": by_scale(self.relative_error),
            "sup_relative_error": by_scale(self.sup_relative_error),
            "max_relative_error": self.worst,
            "per_restart": [
                {"init": kind, "relative_error": by_scale(row)}
                for kind, row in zip(self.init_kinds, self.per_restart, strict=False)
            ],
            "independent": self.independent,
            "seconds": self.seconds,
            "restart_seconds": self.restart_seconds,
            "stopped_by_budget": self.stopped_by_budget,
            "status": self.status,
            "lower_bounds": [
                {**b, "per_scale": {str(s): v for s, v in b["per_scale"].items()}}  # type: ignore[attr-defined]
                for b in self.bounds
            ],
            "contradiction": bool(self.contradictions),
            "contradictions": self.contradictions,
        }


# --------------------------------------------------------------------------------------------
# starting points


def random_params(target: Block, width: int, rng: np.random.Generator) -> dict[str, Array]:
    """Gaussian inner and outer weights at fan-in scale (nothing of the target but its kind)."""
    d = target.d
    p = {"V_up": rng.standard_normal((width, d)) / math.sqrt(d),
         "V_down": rng.standard_normal((d, width)) / math.sqrt(width)}
    if target.W_gate is not None:
        p["V_gate"] = rng.standard_normal((width, d)) / math.sqrt(d)
    if target.b_up is not None:
        p["c_up"] = 0.5 * rng.standard_normal(width)
    if target.b_down is not None:
        p["c_down"] = 0.5 * rng.standard_normal(d)
    return p


def target_params(target: Block, width: int, rng: np.random.Generator) -> dict[str, Array]:
    """The target's own weights at width ``width`` (truncated, or padded with random units):
    the opt-in, not independent start."""
    p = random_params(target, width, rng)
    k = min(width, target.n)
    p["V_up"][:k] = target.W_up[:k]
    p["V_down"][:, :k] = target.W_down[:, :k]
    if target.W_gate is not None:
        p["V_gate"][:k] = target.W_gate[:k]
    if target.b_up is not None:
        p["c_up"][:k] = target.b_up[:k]
    if target.b_down is not None:
        p["c_down"] = target.b_down.copy()
    return p


def as_block(target: Block, p: dict[str, Array]) -> Block:
    """The residual-free block of ``target``'s kind with weights ``p``."""
    return Block(target.activation, np.asarray(p["V_up"], dtype=np.float64),
                 np.asarray(p["V_down"], dtype=np.float64), W_gate=p.get("V_gate"),
                 b_up=p.get("c_up"), b_down=p.get("c_down"), residual=False)


# --------------------------------------------------------------------------------------------
# evaluation


def held_out_errors(h: Block, f: Block, held: Sequence[tuple[float, Array]]
                    ) -> tuple[dict[float, float], dict[float, float]]:
    """Relative Frobenius and relative sup errors of h against f on the pairs of each scale."""
    fro, sup = {}, {}
    for s, Z in held:
        P = pairs(Z)
        fP = f(P)
        e = np.linalg.norm(h(P) - fP, axis=1)
        fn = np.linalg.norm(fP, axis=1)
        fro[s] = float(np.linalg.norm(e) / np.linalg.norm(fn))
        sup[s] = float(np.max(e) / np.max(fn))
    return fro, sup


# --------------------------------------------------------------------------------------------
# engines: one restart each, returning the fitted weights and the training cost


class _Engine:
    def __init__(self, target: Block, width: int, X: Array, T: Array, omega: Array,
                 steps: int, rng: np.random.Generator, redraws: int) -> None:
        self.target, self.width, self.steps, self.rng = target, width, steps, rng
        self.redraws = redraws
        self.X, self.T, self.omega = X, T, omega
        self.unit = unit_function(target)
        self.deadline = math.inf

    def _varpro(self, aux: bool) -> VarPro:
        t = self.target
        return VarPro(self.unit, self.X, self.T, np.sqrt(self.omega), width=self.width,
                      gated=t.W_gate is not None, up_bias=t.b_up is not None,
                      down_bias=t.b_down is not None, aux_linear=aux)

    # built on first use: only the LM engine needs them (and their size check)
    @functools.cached_property
    def vp(self) -> VarPro:
        return self._varpro(False)

    @functools.cached_property
    def vp_aux(self) -> VarPro:
        return self._varpro(True)

    def lm(self, p: dict[str, Array], polish: bool = False) -> tuple[dict[str, Array], float]:
        vp = self.vp
        vp.deadline = self.vp_aux.deadline = self.deadline
        theta = vp.join(p)
        if not polish:
            theta = self.vp_aux.levenberg_marquardt(theta, self.steps)
        theta = vp.reflection_search(theta, self.rng, kicks=2 * self.width)
        theta = vp.levenberg_marquardt(theta, self.steps * (3 if polish else 1))
        if self.redraws and not polish:
            theta = vp.redraw_search(theta, self.rng, self.redraws, self.steps)
        return vp.params(theta), vp.cost(theta)

    def adam(self, p: dict[str, Array], polish: bool = False) -> tuple[dict[str, Array], float]:
        fit = AdamFit(self.unit, self.X, self.T, self.omega, p, project=True)
        steps = self.steps * (3 if polish else 1)
        best_loss, best_p = math.inf, fit.p
        lr0 = ADAM_LR * (0.1 if polish else 1.0)
        for i in range(steps):
            if time.perf_counter() > self.deadline:
                break
            loss = fit.loss_and_grad()
            # keep the best iterate: Adam's fixed-size steps can leave a good point
            if loss < best_loss:
                best_loss, best_p = loss, {k: v.copy() for k, v in fit.p.items()}
            fit.update(_cosine(i, steps, lr0))
        return {k: np.asarray(v, dtype=np.float64) for k, v in best_p.items()}, 0.5 * best_loss


def _cosine(step: int, steps: int, lr0: float) -> float:
    """Cosine decay from lr0 to lr0·10⁻³."""
    lo = lr0 * 1e-3
    return lo + 0.5 * (lr0 - lo) * (1 + math.cos(math.pi * step / max(1, steps - 1)))


def _check_arguments(w: int, restarts: int, steps: int, samples: int,
                     scales: tuple[float, ...], engine: str, time_budget: float | None) -> None:
    if w < 1 or restarts < 1 or steps < 1 or samples < 1:
        raise AbsorbError("width, restarts, steps and samples must be positive")
    if not scales or any(not (s > 0 and math.isfinite(s)) for s in scales):
        raise AbsorbError(f"scales must be positive and finite, got {scales}")
    if engine not in ENGINES:
        raise AbsorbError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if time_budget is not None and not (time_budget > 0 and math.isfinite(time_budget)):
        raise AbsorbError(f"time budget must be positive, got {time_budget}")


def default_samples(target: Block, width: int, engine: str) -> int:
    """Training samples per scale: 8 per unit, at least 256 (a ReLU unit's hyperplane is only
    pinned down where samples fall on both sides of it nearby: with 64 samples per scale a
    planted d = 2, n = 3 block was fitted exactly on the training set yet off by 1e-5 on
    held-out points), at most 512; 2048 for Adam."""
    if engine == "adam":
        return 2048
    return int(min(512, max(256, 8 * width)))


def fit_residual_free(
    target: Block,
    *,
    width: int | None = None,
    restarts: int = 4,
    steps: int | None = None,
    samples: int | None = None,
    scales: tuple[float, ...] = INPUT_SCALES,
    rng: np.random.Generator,
    engine: str = "lm",
    progress: bool = False,
    init_from_target: bool = False,
    time_budget: float | None = None,
    stop_below: float | None = None,
    redraws: int = 0,
) -> FitResult:
    """Fit residual-free blocks of ``target``'s kind to ``target`` (see the module docstring).

    ``steps``: LM iterations per stage (``lm``) or Adam steps (``adam``) per restart;
    ``samples``: training inputs per scale (held-out: as many pairs); ``time_budget``: seconds
    after which the fit stops cleanly (between or inside restarts) and says so;
    ``stop_below``: no further restarts once one reaches this held-out error at every scale;
    ``redraws``: single-unit re-draw moves per restart (``lm`` only; see the module docstring).
    """
    w = target.n if width is None else width
    steps = DEFAULT_STEPS.get(engine, 1) if steps is None else steps
    samples = default_samples(target, w, engine) if samples is None else samples
    _check_arguments(w, restarts, steps, samples, scales, engine, time_budget)
    if redraws < 0:
        raise AbsorbError(f"redraws must be non-negative, got {redraws}")
    # One BLAS thread: with two, OpenBLAS's reductions can round differently from run to run,
    # and a last-bit difference can steer a restart to another minimum; determinism under
    # --seed is worth more than the second thread on these small fits.
    with threadpool_limits(limits=1, user_api="blas"):
        return _fit(target, w, restarts, steps, samples, scales, rng, engine, progress,
                    init_from_target, time_budget, stop_below, redraws)


def _fit(target: Block, w: int, restarts: int, steps: int, samples: int,
         scales: tuple[float, ...], rng: np.random.Generator, engine: str, progress: bool,
         init_from_target: bool, time_budget: float | None, stop_below: float | None,
         redraws: int) -> FitResult:
    """The body of :func:`fit_residual_free`, arguments checked."""
    t0 = time.perf_counter()
    X = np.concatenate([s * rng.standard_normal((samples, target.d)) for s in scales])
    T = target(X)
    norms = np.array([np.sum(T[i * samples:(i + 1) * samples] ** 2) for i in range(len(scales))])
    if np.any(norms == 0):
        raise AbsorbError("the target block is zero on the inputs of some scale")
    omega = np.repeat(1.0 / (len(scales) * norms), samples)
    held = [(s, s * rng.standard_normal(((samples + 1) // 2, target.d))) for s in scales]
    eng = _Engine(target, w, X, T, omega, steps, rng, redraws)
    eng.deadline = math.inf if time_budget is None else t0 + time_budget
    run = eng.lm if engine == "lm" else eng.adam
    starts = [("random", random_params(target, w, rng)) for _ in range(restarts)]
    if init_from_target:
        starts.append((FROM_TARGET, target_params(target, w, rng)))
    fits: list[tuple[float, dict[str, Array]]] = []  # (training cost, weights) per restart
    per_restart: list[dict[float, float]] = []
    finished: list[float] = []
    bar = tqdm(total=len(starts), desc=f"search ({engine})", unit="restart", file=sys.stderr,
               disable=not progress, leave=False)
    try:
        for _kind, p in starts:
            # the first restart always runs (cut short by the deadline if need be)
            if fits and (time.perf_counter() > eng.deadline or (
                    stop_below is not None and max(per_restart[-1].values()) <= stop_below)):
                break
            params, cost = run(p)
            fits.append((cost, params))
            per_restart.append(held_out_errors(as_block(target, params), target, held)[0])
            finished.append(time.perf_counter() - t0)
            bar.update(1)
            bar.set_postfix(best=f"{min(max(r.values()) for r in per_restart):.2g}",
                            refresh=False)
    finally:
        bar.close()
    stopped = time.perf_counter() > eng.deadline
    # The restart with the smallest held-out error, training cost breaking ties: two restarts
    # can both fit the training set to round-off while one is off by 1e-5 on held-out points (a
    # thin wedge between near-parallel ReLU hyperplanes that no training sample hit), and the
    # lower training cost then picked the wrong one.
    best = min(range(len(fits)), key=lambda i: (max(per_restart[i].values()), fits[i][0]))
    best_cost, best_params = fits[best]
    if not stopped:
        params, cost = run(best_params, polish=True)
        polished = max(held_out_errors(as_block(target, params), target, held)[0].values())
        if cost <= best_cost and polished <= max(per_restart[best].values()):
            best_params = params
        stopped = time.perf_counter() > eng.deadline
    h = as_block(target, best_params)
    fro, sup = held_out_errors(h, target, held)
    bounds = lower_bounds(target, h, held)
    return FitResult(
        width=w, engine=engine, restarts=len(starts), steps=steps, samples=samples,
        scales=tuple(scales), relative_error=fro, sup_relative_error=sup,
        per_restart=per_restart, init_kinds=tuple(k for k, _ in starts[: len(per_restart)]),
        seconds=time.perf_counter() - t0, stopped_by_budget=stopped, bounds=bounds,
        contradictions=contradictions(bounds, {"relative_error": fro, "sup_relative_error": sup}),
        from_target_requested=init_from_target, block=h, restart_seconds=finished,
    )
