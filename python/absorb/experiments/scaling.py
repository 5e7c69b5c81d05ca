"""Experiments of the scaling arguments: reduction, degree, linearization and depth."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from absorb import certificates, theory
from absorb.activations import get_activation
from absorb.blocks import Block, random_block, stack_forward
from absorb.errors import AbsorbError
from absorb.experiments.base import (
    AWAY_TOL,
    EXACT_TOL,
    FIT_RESTARTS,
    FIT_SCALES,
    TS,
    Array,
    ExperimentResult,
    _invertible,
    _num,
    _planted,
    _points,
    _rel,
    _residual_free,
    _series,
    budget_fit,
)

# --------------------------------------------------------------------------------------------
# reduction


def reduction_decisions_agree(rng: np.random.Generator) -> ExperimentResult:
    """A-skip block vs the reduced identity-skip block x + (A⁻¹W_down)σ(W_up x).

    Lemma 4: h = f iff A⁻¹h = id + A⁻¹M.  Checked two ways: f_A(x) = A f_red(x) pointwise,
    and ``theory.decide`` returns the same verdict for both blocks (on generic and on planted
    weights, where the reduced block has an index set).
    """
    rows: list[dict[str, object]] = []
    d, n = 3, 8
    cases = [("relu2", False), ("swiglu", False), ("gelu", False), ("relu", True)]
    for name, planted in cases:
        A = _invertible(d, rng)
        reduced = (_planted(name, d, n, rng) if planted
                   else random_block(get_activation(name), d, n, rng))
        full = Block(reduced.activation, reduced.W_up, A @ reduced.W_down, reduced.W_gate,
                     A_skip=A)
        X = _points(rng, d)
        pointwise = _rel(full(X), reduced(X) @ A.T)
        v_full = theory.decide(full, rng=rng)["verdict"]
        v_red = theory.decide(reduced, rng=rng)["verdict"]
        rows.append({"activation": name, "planted S": planted, "verdict (A skip)": v_full,
                     "verdict (reduced)": v_red, "f_A − A·f_red (rel.)": pointwise,
                     "agree": v_full == v_red and pointwise < EXACT_TOL})
    return ExperimentResult(
        "reduction_decisions_agree", "reduction",
        "Invertible skip A vs the reduced identity-skip block with A⁻¹W_down: identical "
        "verdicts and f_A = A·f_red pointwise.",
        all(bool(r["agree"]) for r in rows), rows,
        summary=f"{sum(bool(r['agree']) for r in rows)}/{len(rows)} blocks: same verdict",
    )


# --------------------------------------------------------------------------------------------
# degree


def degree_scaling_witness(rng: np.random.Generator) -> ExperimentResult:
    """f(2x) − 2^k f(x) = (2 − 2^k) A x for ReLU² and ReGLU (k = 2), and 0 for residual-free h.

    The figure follows one ray: ‖f(λx) − λ^k f(x)‖ against |λ − λ^k|·‖Ax‖ over λ ∈ [10⁻², 10²];
    the two curves coincide and vanish only at λ = 1, while every residual-free block gives 0.
    """
    d, n = 4, 8
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    lams = np.logspace(-2, 2, 41)
    for name in ("relu2", "reglu"):
        block = random_block(get_activation(name), d, n, rng)
        h = _residual_free(name, d, n, rng)
        k = float(block.activation.degree or 0.0)
        for _ in range(3):
            x = rng.standard_normal(d)
            w = theory.degree_witness(block, x)
            h_gap = float(np.linalg.norm(h(2 * x) - 2**k * h(x)))
            rows.append({"activation": name, "k": k, "‖f(2x) − 2^k f(x)‖": w["gap_norm"],
                         "discrepancy to (2 − 2^k)Ax": w["discrepancy"],
                         "‖h(2x) − 2^k h(x)‖ (residual-free)": h_gap})
        x = rng.standard_normal(d)
        gaps = np.linalg.norm(block(lams[:, None] * x) - lams[:, None] ** k * block(x), axis=1)
        predicted = np.abs(lams - lams**k) * np.linalg.norm(block.skip_matrix() @ x)
        series.append(_series("measured ‖f(λx) − λ^k f(x)‖", lams, gaps, panel=name,
                              style="line"))
        series.append(_series("predicted |λ − λ^k|·‖Ax‖", lams, predicted, panel=name,
                              style="markers"))
    agrees = all(
        _num(r["discrepancy to (2 − 2^k)Ax"]) < EXACT_TOL * max(1.0, _num(r["‖f(2x) − 2^k f(x)‖"]))
        and _num(r["‖f(2x) − 2^k f(x)‖"]) > AWAY_TOL
        and _num(r["‖h(2x) − 2^k h(x)‖ (residual-free)"]) < EXACT_TOL
        for r in rows
    )
    figure: dict[str, object] = {
        "title": "Degree mismatch along a ray (k = 2)", "xlabel": "λ",
        "ylabel": "‖f(λx) − λ^k f(x)‖", "xscale": "log", "yscale": "log", "series": series,
        "caption": "Look for: in each panel the hollow markers (the prediction |λ − λ^k|·‖Ax‖) "
                   "sit on the line (the measured gap of the skip block), and both vanish only "
                   "at λ = 1. Every residual-free block has gap exactly 0 at every λ (last "
                   "column of the table), so no residual-free block equals the skip block."}
    return ExperimentResult(
        "degree_scaling_witness", "degree",
        "Scaling witness for homogeneous blocks of degree k = 2: the gap equals (2 − 2^k)Ax ≠ 0 "
        "for the skip block and vanishes for every residual-free block.",
        agrees, rows, figure,
        summary="gap = (2 − 2^k)Ax to round-off; residual-free gap 0",
    )


def degree_best_fit(rng: np.random.Generator) -> ExperimentResult:
    """Best same-kind residual-free fit, per activation and width factor, per input scale.

    For k = 2 (ReLU², ReGLU) and for the gated SwiGLU no width makes the fit exact (the degree
    and linearization theorems hold for every width); at the smallest scale the skip term
    dominates and the relative error stays of order one.  ReLU at width n + 2d is exactly
    representable (x = relu(x) − relu(−x)), so its error may drop: that is the width control.
    """
    d, n = 2, 3
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    for name in ("relu2", "reglu", "swiglu", "relu"):
        target = random_block(get_activation(name), d, n, rng)
        # Gated fits cost most at width 3n; two widths already show the error staying put. The
        # ReLU control needs 3n ≥ n + 2d, the width at which the skip is always representable.
        factors = (1, 2, 3) if target.W_gate is None else (1, 2)
        worst: list[float] = []
        for factor in factors:
            res = budget_fit(target, factor * n, rng)
            errs = res.relative_error
            worst.append(max(errs.values()))
            rows.append({"activation": name, "width": factor * n, "width factor": factor,
                         **{f"rel. error @ {s:g}": errs[s] for s in FIT_SCALES}})
        label = (f"{name} — control: absorbable when wide enough (n + 2d = {n + 2 * d} always is)"
                 if name == "relu" else name)
        series.append(_series(label, factors, worst, style="markers"))
    impossible = [r for r in rows if r["activation"] in ("relu2", "reglu", "swiglu")]
    agrees = all(_num(r[f"rel. error @ {FIT_SCALES[0]:g}"]) > AWAY_TOL for r in impossible)
    floor = min(_num(r[f"rel. error @ {FIT_SCALES[0]:g}"]) for r in impossible)
    relu_last = min(_num(r[f"rel. error @ {s:g}"]) for r in rows[-1:] for s in FIT_SCALES)
    figure: dict[str, object] = {
        "title": "Best residual-free fit error per width factor (one fit per marker)",
        "xlabel": "width factor (width of h ÷ n)", "xticks": [1, 2, 3],
        "ylabel": "max over scales of best relative error", "xscale": "linear",
        "yscale": "log", "series": series,
        "caption": f"Look for: ReLU², ReGLU and SwiGLU stay away from 0 at every width: at the "
                   f"smallest input scale their best error is at least {floor:.2g} over "
                   f"{len(impossible)} fits (the theorem holds for every width; their markers "
                   "overlap near the top). The ReLU control drops as the width grows (width "
                   "n + 2d always suffices: x = relu(x) − relu(−x) makes the skip "
                   f"representable); at width factor 3 its smallest per-scale error is "
                   f"{relu_last:.2g}. Each marker is the best of {FIT_RESTARTS} restarts."}
    return ExperimentResult(
        "degree_best_fit", "degree",
        "Numerical search: best held-out relative error of residual-free blocks of the same "
        "kind fitted to a skip block, per input scale and width factor.",
        agrees, rows, figure,
        summary="ReLU², ReGLU, SwiGLU: error at small scale bounded away from 0 at every width",
        table_note="The ReLU rows are the width control, not a test: a ReLU skip block becomes "
                   "absorbable as the width grows (n + 2d always suffices), so only the ReLU², "
                   "ReGLU and SwiGLU rows must stay away from 0.",
    )


def degree_control_identity(rng: np.random.Generator) -> ExperimentResult:
    """Control k = 1: the identity (linear) block and planted ReLU are absorbable.

    Linear block: x + W_down W_up x = V_down V_up x with V_up = [I + W_down W_up; 0],
    V_down = [I, 0] (n ≥ d).  ReLU with a planted S: the sign-flip construction.  The degree
    witness vanishes there, (2 − 2^1)Ax = 0: the hypothesis k ≠ 1 is needed.
    """
    d, n = 3, 6
    rows: list[dict[str, object]] = []
    lin = random_block(get_activation("identity"), d, n, rng)
    V_up = np.zeros((n, d))
    V_up[:d] = np.eye(d) + lin.W_down @ lin.W_up
    V_down = np.zeros((d, n))
    V_down[:, :d] = np.eye(d)
    h_lin = Block(lin.activation, V_up, V_down, residual=False)
    relu = _planted("relu", d, n, rng)
    S = certificates.find_index_set(relu.W_up, relu.W_down).S
    if S is None:
        raise AbsorbError("planted ReLU instance without index set: search inconsistent")
    h_relu = theory.absorbing_block(relu, S)
    for label, f, h in (("identity (linear)", lin, h_lin), ("relu, planted S", relu, h_relu)):
        X = _points(rng, d)
        w = theory.degree_witness(f, rng.standard_normal(d))
        rows.append({"block": label, "k": f.activation.degree, "‖f(2x) − 2f(x)‖": w["gap_norm"],
                     "residual-free h = f (rel. error)": _rel(h(X), f(X))})
    agrees = all(_num(r["residual-free h = f (rel. error)"]) < EXACT_TOL for r in rows)
    return ExperimentResult(
        "degree_control_identity", "degree",
        "Control (k = 1): the degree witness vanishes and explicit residual-free blocks equal "
        "the skip block.", agrees, rows, control=True,
        summary="k = 1: absorbed exactly, as expected",
    )


def degree_control_biases(rng: np.random.Generator) -> ExperimentResult:
    """Control (biases): with biases ReLU² is no longer homogeneous; the scaling identity
    f(2x) − 4f(x) = −2Ax fails, so the degree argument does not apply."""
    d, n = 3, 6
    rows: list[dict[str, object]] = []
    act = get_activation("relu2")
    for biases in (False, True):
        block = random_block(act, d, n, rng, biases=biases)
        x = rng.standard_normal(d)
        gap = block(2 * x) - 4 * block(x)
        rows.append({"biases": biases, "‖f(2x) − 4f(x) + 2x‖": float(np.linalg.norm(gap + 2 * x)),
                     "‖2x‖": float(np.linalg.norm(2 * x))})
    agrees = (_num(rows[0]["‖f(2x) − 4f(x) + 2x‖"]) < EXACT_TOL
              and _num(rows[1]["‖f(2x) − 4f(x) + 2x‖"]) > AWAY_TOL)
    return ExperimentResult(
        "degree_control_biases", "degree",
        "Control (biases): the scaling identity behind the degree theorem holds without biases "
        "and breaks with them.", agrees, rows, control=True,
        summary="with biases the degree witness is no longer valid",
    )


# --------------------------------------------------------------------------------------------
# linearization


def _linear_limit_rows(block: Block, h: Block, x: Array, label: str) -> list[dict[str, object]]:
    t = np.asarray(TS)
    Ax = block.skip_matrix() @ x
    f_gap = np.linalg.norm(block(t[:, None] * x) / t[:, None] - Ax, axis=1)
    h_size = np.linalg.norm(h(t[:, None] * x) / t[:, None], axis=1)
    return [{"block": label, "t": float(ti), "‖f(tx)/t − Ax‖": float(g), "‖h(tx)/t‖": float(s),
             "‖Ax‖": float(np.linalg.norm(Ax))} for ti, g, s in zip(t, f_gap, h_size, strict=True)]


def linearization_gap(rng: np.random.Generator) -> ExperimentResult:
    """SwiGLU and GeGLU: ‖f(tx)/t − Ax‖ → 0 while ‖h(tx)/t‖ → 0 for residual-free h.

    Since ‖Ax‖ stays fixed, for small t the skip block and any residual-free block are ‖Ax‖
    apart; the gap shrinks linearly in t (g(z) = z/2 + O(z²) for SiLU and GELU).
    """
    d, n = 4, 8
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    for name in ("swiglu", "geglu"):
        block = random_block(get_activation(name), d, n, rng)
        h = _residual_free(name, d, n, rng)
        x = rng.standard_normal(d)
        part = _linear_limit_rows(block, h, x, name)
        rows += part
        series.append(_series("‖f(tx)/t − Ax‖ (skip block)", TS,
                              [r["‖f(tx)/t − Ax‖"] for r in part], panel=name))
        series.append(_series("‖h(tx)/t‖ (residual-free)", TS, [r["‖h(tx)/t‖"] for r in part],
                              panel=name))
        series.append(_series("‖Ax‖ (the limit of f(tx)/t)", TS, [r["‖Ax‖"] for r in part],
                              panel=name, style="line"))
    agrees = True
    for name in ("swiglu", "geglu"):
        part = [r for r in rows if r["block"] == name]
        first, last = _num(part[0]["‖f(tx)/t − Ax‖"]), _num(part[-1]["‖f(tx)/t − Ax‖"])
        h_last = _num(part[-1]["‖h(tx)/t‖"])
        agrees &= last < 1e-3 * first and h_last < 1e-3 * _num(part[-1]["‖Ax‖"])
    figure: dict[str, object] = {
        "title": "Linearization gap as t → 0⁺", "xlabel": "t", "ylabel": "norm",
        "xscale": "log", "yscale": "log", "series": series,
        "caption": "Look for: as t → 0⁺ the skip block's f(tx)/t reaches Ax (its gap falls "
                   "linearly with t) while every residual-free h(tx)/t falls to 0, so the two "
                   "stay ‖Ax‖ (the flat line) apart: no residual-free block equals the skip "
                   "block."}
    return ExperimentResult(
        "linearization_gap", "linearization",
        "Gated blocks with g(0) = 0: f(tx)/t → Ax ≠ 0 while every residual-free block has "
        "h(tx)/t → 0.", bool(agrees), rows, figure,
        summary="gap → 0 linearly in t; residual-free blocks vanish at 0",
    )


def linearization_control_glu(rng: np.random.Generator) -> ExperimentResult:
    """Control g(0) = ½ (GLU): residual-free GLU blocks have the linear limit ½V_down V_up x,
    which can match the skip block's limit (I + ½W_down W_up)x; the obstruction disappears."""
    d, n = 3, 6
    block = random_block(get_activation("glu"), d, n, rng)
    target = np.eye(d) + 0.5 * block.W_down @ block.W_up
    V_up = np.zeros((n, d))
    V_up[:d] = 2 * target
    V_down = np.zeros((d, n))
    V_down[:, :d] = np.eye(d)
    h = Block(block.activation, V_up, V_down, rng.standard_normal((n, d)), residual=False)
    x = rng.standard_normal(d)
    t = np.asarray(TS)
    diff = np.linalg.norm((block(t[:, None] * x) - h(t[:, None] * x)) / t[:, None], axis=1)
    rows: list[dict[str, object]] = [{"t": float(ti), "‖(f(tx) − h(tx))/t‖": float(v)}
                                     for ti, v in zip(t, diff, strict=True)]
    agrees = float(diff[-1]) < 1e-3 * float(diff[0]) or float(diff[-1]) < 1e-6
    return ExperimentResult(
        "linearization_control_glu", "linearization",
        "Control (GLU, g(0) = ½): a residual-free GLU block matches the skip block to first "
        "order at 0, so the linearization argument gives no obstruction.",
        agrees, rows, control=True, summary="first-order mismatch → 0: no obstruction",
    )


# --------------------------------------------------------------------------------------------
# depth


def _stack_limits(name: str, rng: np.random.Generator, L: int = 3) -> list[dict[str, object]]:
    d, n = 3, 6
    act = get_activation(name)
    R = [random_block(act, d, n, rng) for _ in range(L)]
    H = [_residual_free(name, d, n, rng) for _ in range(L)]
    x = rng.standard_normal(d)
    t = np.asarray(TS)
    R_gap = np.linalg.norm(stack_forward(R, t[:, None] * x) / t[:, None] - x, axis=1)
    H_size = np.linalg.norm(stack_forward(H, t[:, None] * x) / t[:, None], axis=1)
    return [{"activation": name, "L": L, "t": float(ti), "‖R(tx)/t − x‖": float(r),
             "‖H(tx)/t‖": float(h), "‖x‖": float(np.linalg.norm(x))}
            for ti, r, h in zip(t, R_gap, H_size, strict=True)]


def _limits_agree(rows: Sequence[dict[str, object]]) -> bool:
    last = rows[-1]
    xn = _num(last["‖x‖"])
    return (_num(last["‖R(tx)/t − x‖"]) < 1e-3 * xn
            and _num(last["‖H(tx)/t‖"]) < 1e-3 * xn)


def _depth_figure(rows: Sequence[dict[str, object]], title: str, rate: str
                  ) -> dict[str, object]:
    series = []
    for name in dict.fromkeys(str(r["activation"]) for r in rows):
        part = [r for r in rows if r["activation"] == name]
        series.append(_series("‖R(tx)/t − x‖ (residual stack)", TS,
                              [r["‖R(tx)/t − x‖"] for r in part], panel=name))
        series.append(_series("‖H(tx)/t‖ (residual-free stack)", TS,
                              [r["‖H(tx)/t‖"] for r in part], panel=name))
    return {"title": title, "xlabel": "t", "ylabel": "norm", "xscale": "log", "yscale": "log",
            "series": series,
            "caption": "Look for: both curves fall to 0 as t → 0⁺, but they say opposite things. "
                       "R(tx)/t − x → 0 means the residual stack tends to the identity near 0, "
                       f"while H(tx)/t → 0 ({rate}) means the residual-free stack tends to the "
                       "zero map: near 0 they differ by about ‖x‖, so they are not equal. The "
                       "plotted values are the table's, unclipped."}


def depth_stack_limits(rng: np.random.Generator) -> ExperimentResult:
    """Depth 3, ReLU² (k = 2): R(tx)/t → x while H(tx)/t = t^{2^L − 1} H(x) → 0."""
    rows = _stack_limits("relu2", rng)
    return ExperimentResult(
        "depth_stack_limits", "depth_degree",
        "Residual ReLU² stack vs residual-free stack of the same depth and width as t → 0⁺.",
        _limits_agree(rows), rows,
        _depth_figure(rows, "Depth-3 ReLU² stacks as t → 0⁺", "like t^(2^L − 1) = t⁷"),
        summary="R(tx)/t → x, H(tx)/t → 0",
    )


def depth_gated_stack_limits(rng: np.random.Generator) -> ExperimentResult:
    """Depth 3, SwiGLU and GeGLU: R(tx)/t → x while H(tx)/t → 0."""
    rows = _stack_limits("swiglu", rng) + _stack_limits("geglu", rng)
    agrees = _limits_agree(rows[: len(TS)]) and _limits_agree(rows[len(TS) :])
    return ExperimentResult(
        "depth_gated_stack_limits", "depth_linearization",
        "Residual gated stacks vs residual-free gated stacks of the same depth and width as "
        "t → 0⁺.", agrees, rows,
        _depth_figure(rows, "Depth-3 gated stacks as t → 0⁺",
                      "like t⁷: each gated block is quadratic near 0"),
        summary="R(tx)/t → x, H(tx)/t → 0",
    )


EXPERIMENTS_SCALING = (
    reduction_decisions_agree,
    degree_scaling_witness,
    degree_best_fit,
    degree_control_identity,
    degree_control_biases,
    linearization_gap,
    linearization_control_glu,
    depth_stack_limits,
    depth_gated_stack_limits,
)
