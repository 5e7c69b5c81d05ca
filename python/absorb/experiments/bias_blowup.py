"""The ``bias_blowup`` theorem: σ(tz + c)/t → ReLU(z) uniformly for the entries that are ReLU at
infinity, and the controls where the limit fails."""

from __future__ import annotations

import numpy as np

from absorb.activations import get_activation, relu
from absorb.experiments.base import Array, Experiment, ExperimentResult, _series

#: The t sequence of the blow-up limit (t → ∞).
BLOWUP_TS: tuple[float, ...] = (1.0, 1e1, 1e2, 1e3, 1e4)


_Z = np.linspace(-3.0, 3.0, 121)


_C = np.linspace(-2.0, 2.0, 9)


# sup|σ − ReLU| is attained near 0 for every entry below; a wide fine grid finds it.
_SUP_GRID = np.linspace(-60.0, 60.0, 240_001)


def _elu(z: Array) -> Array:
    """ELU (α = 1): ReLU at infinity, not odd-part-linear (a control, not in the catalog)."""
    return np.where(z > 0, z, np.expm1(np.minimum(z, 0.0)))


def _blowup_error(fn: object, t: float) -> float:
    """max over the (z, c) grid of |σ(tz + c)/t − ReLU(z)|."""
    Z, C = np.meshgrid(_Z, _C)
    return float(np.max(np.abs(fn(t * Z + C) / t - relu(Z))))  # type: ignore[operator]


def blowup_uniform_limit(rng: np.random.Generator) -> ExperimentResult:
    """σ(tz + c)/t → ReLU(z) with error ≤ (|c| + sup|σ − ReLU|)/t, per activation, and the
    block-level limit: f(tx)/t → A x + W_down ReLU(W_up x) for a biased block."""
    rows: list[dict[str, object]] = []
    series = []
    c_max = float(np.max(np.abs(_C)))
    for name in ("relu", "gelu", "gelu_tanh", "silu", "softplus"):
        act = get_activation(name)
        sup = float(np.max(np.abs(act(_SUP_GRID) - relu(_SUP_GRID))))
        errs = [_blowup_error(act, t) for t in BLOWUP_TS]
        bounds = [(c_max + sup) / t for t in BLOWUP_TS]
        rows.append({"activation": name, "ReLU at infinity (catalog)": act.relu_at_infinity,
                     "sup|σ − ReLU|": sup, "error at t = 1e4": errs[-1],
                     "bound at t = 1e4": bounds[-1],
                     "within bound at every t": all(e <= b * (1 + 1e-9) + 1e-12
                                                   for e, b in zip(errs, bounds, strict=True))})
        series.append(_series(name, BLOWUP_TS, np.maximum(errs, 1e-300)))
    # the block-level statement: biased GELU block, (f(tx) − ...)/t → A x + W_down ReLU(W_up x)
    d, n = 3, 6
    W_up, W_down = rng.standard_normal((n, d)), rng.standard_normal((d, n)) / np.sqrt(n)
    b_up, b_down = rng.standard_normal(n), rng.standard_normal(d)
    X = rng.standard_normal((32, d))
    gelu = get_activation("gelu")
    limit = X + relu(X @ W_up.T) @ W_down.T
    block_errs = []
    for t in BLOWUP_TS:
        f = t * X + gelu(t * X @ W_up.T + b_up) @ W_down.T + b_down
        block_errs.append(float(np.max(np.abs(f / t - limit))))
    rows.append({"activation": "biased gelu block (d=3, n=6)", "ReLU at infinity (catalog)": True,
                 "sup|σ − ReLU|": float("nan"), "error at t = 1e4": block_errs[-1],
                 "bound at t = 1e4": float("nan"),
                 "within bound at every t": bool(block_errs[-1] < 1e-3 * block_errs[0])})
    agrees = all(bool(r["within bound at every t"]) and bool(r["ReLU at infinity (catalog)"])
                 for r in rows)
    figure: dict[str, object] = {
              "title": "Blow-up limit: max |σ(tz + c)/t − ReLU(z)| over z ∈ [−3, 3], |c| ≤ 2",
              "xlabel": "t", "ylabel": "max error", "xscale": "log", "yscale": "log",
              "series": series,
              "caption": "Every line falls like 1/t (ReLU's line is 0 at c = 0 only and falls "
                         "like |c|/t): biases divided by t vanish, which is why biases never "
                         "help absorb the skip."}
    return ExperimentResult(
        "blowup_uniform_limit", "bias_blowup",
        "σ(tz + c)/t → ReLU(z) uniformly, within (|c| + sup|σ − ReLU|)/t, for ReLU, GELU, "
        "tanh-GELU, SiLU and softplus; a biased GELU block blows up to the bias-free ReLU block.",
        agrees, rows, figure=figure,
        summary="error ≤ (|c| + sup|σ − ReLU|)/t for every activation and t",
    )


def blowup_control_not_relu_at_infinity(rng: np.random.Generator) -> ExperimentResult:
    """Control: tanh, sigmoid, ReLU², identity are not ReLU at infinity (the limit is not
    ReLU), and ELU is ReLU at infinity but not odd-part-linear, so bias_blowup gives only the
    "only if" direction for it."""
    del rng  # deterministic grids
    rows: list[dict[str, object]] = []
    for name in ("tanh", "sigmoid", "relu2", "identity"):
        act = get_activation(name)
        err = _blowup_error(act, BLOWUP_TS[-1])
        rows.append({"activation": name, "ReLU at infinity (catalog)": act.relu_at_infinity,
                     "error at t = 1e4": err, "odd-part-linear": act.odd_part_linear,
                     "as predicted": (not act.relu_at_infinity) and err > 0.5})
    elu_err = _blowup_error(_elu, BLOWUP_TS[-1])
    z = np.linspace(-5.0, 5.0, 101)
    elu_odd = float(np.max(np.abs(_elu(z) - _elu(-z) - z)))
    rows.append({"activation": "elu (not in the catalog)", "ReLU at infinity (catalog)": True,
                 "error at t = 1e4": elu_err, "odd-part-linear": elu_odd < 1e-12,
                 "as predicted": elu_err < 1e-3 and elu_odd > 0.1})
    return ExperimentResult(
        "blowup_control_not_relu_at_infinity", "bias_blowup",
        "Control: for tanh, sigmoid, ReLU² and the identity σ(tz + c)/t does not tend to "
        "ReLU(z); ELU does, but is not odd-part-linear (only the 'only if' half transfers).",
        all(bool(r["as predicted"]) for r in rows), rows, control=True,
        summary="the limit fails exactly where the catalog says it does",
    )


#: The experiments the manifest files under ``bias_blowup``, in its order.
EXPERIMENTS: tuple[Experiment, ...] = (
    blowup_uniform_limit,
    blowup_control_not_relu_at_infinity,
)
