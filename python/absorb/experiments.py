"""Cross-validation experiments: every theorem of the manifest, tested on seeded random instances.

Each experiment takes a :class:`numpy.random.Generator` and returns an :class:`ExperimentResult`:
whether the numbers agree with what the theory predicts, an evidence table (a list of row dicts),
optionally the data of a figure, and whether the experiment is a *control* (a hypothesis is
dropped and the conclusion is shown to fail or the argument to break) or an exploration of an
*open* question (no theorem is claimed; ``agrees`` then says whether the numbers behave as the
report's text describes).

Sizes are small on purpose: the whole registry runs in well under a minute on two cores, so the
report (:mod:`absorb.report`) stays a few-minutes command.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from absorb import certificates, theory
from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, random_block, stack_forward
from absorb.errors import AbsorbError

Array = NDArray[np.float64]

#: Thresholds of "agrees": a construction or identity holds when its relative error is below
#: EXACT_TOL (float64 round-off on O(1) weights is ~1e-15; 1e-9 leaves room for conditioning),
#: and a quantity counts as "bounded away from zero" above AWAY_TOL.
EXACT_TOL = 1e-9
AWAY_TOL = 1e-3
#: The t sequence of the linearization and depth limits (t → 0⁺).
TS: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)
#: Budget of the numerical fits (kept small: the report must run in minutes).
FIT_RESTARTS, FIT_STEPS, FIT_SAMPLES = 2, 300, 256
FIT_SCALES: tuple[float, ...] = (0.01, 1.0, 100.0)


@dataclass(frozen=True)
class ExperimentResult:
    """Outcome of one experiment.

    ``figure``, when present, is ``{"title", "xlabel", "ylabel", "xscale", "yscale",
    "series": [{"label", "x", "y"}]}`` with plain lists, plotted by the report.
    """

    name: str
    theorem_id: str
    description: str
    agrees: bool
    table: list[dict[str, object]]
    figure: dict[str, object] | None = None
    control: bool = False
    open: bool = False
    summary: str = field(default="")

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "theorem": self.theorem_id,
            "description": self.description,
            "summary": self.summary,
            "agrees": self.agrees,
            "control": self.control,
            "open": self.open,
            "table": self.table,
            "figure": self.figure,
        }


Experiment = Callable[[np.random.Generator], ExperimentResult]


# --------------------------------------------------------------------------------------------
# helpers


def _num(value: object) -> float:
    """A table cell as a float (cells hold plain numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _rel(a: Array, b: Array) -> float:
    """max |a − b| / max(|b|, tiny): relative sup-norm error of a against b."""
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def _points(rng: np.random.Generator, d: int, m: int = 64) -> Array:
    """m Gaussian inputs at each of the scales 1e-2, 1, 1e2 (the scales the arguments use)."""
    return np.concatenate([s * rng.standard_normal((m, d)) for s in (1e-2, 1.0, 1e2)])


def _planted(name: str, d: int, n: int, rng: np.random.Generator, *, biases: bool = False,
             skip: Array | None = None) -> Block:
    """A random block with W_down[:,S] W_up[S,:] = −A for S = {0..d−1}.

    W_up[S] is a random (well-conditioned) d×d matrix B and W_down[:,S] = −A B⁻¹; the other
    units stay random, so S is planted in otherwise generic weights.
    """
    base = random_block(get_activation(name), d, n, rng, biases=biases, skip=skip)
    A = base.skip_matrix()
    B = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    W_up, W_down = base.W_up.copy(), base.W_down.copy()
    W_up[:d] = B
    W_down[:, :d] = -A @ np.linalg.inv(B)
    return Block(base.activation, W_up, W_down, base.W_gate, base.b_up, base.b_down, skip)


def _residual_free(name: str, d: int, n: int, rng: np.random.Generator) -> Block:
    b = random_block(get_activation(name), d, n, rng)
    return Block(b.activation, b.W_up, b.W_down, b.W_gate, residual=False)


def _invertible(d: int, rng: np.random.Generator) -> Array:
    """I + a small Gaussian perturbation: invertible and well-conditioned with high probability."""
    A: Array = np.eye(d) + 0.4 * rng.standard_normal((d, d)) / np.sqrt(d)
    return A


def _series(label: str, x: Sequence[object] | Array, y: Sequence[object] | Array
            ) -> dict[str, object]:
    return {"label": label, "x": np.asarray(x, dtype=np.float64).tolist(),
            "y": np.asarray(y, dtype=np.float64).tolist()}


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
        v_full = theory.decide(full, rng=rng, search=False)["verdict"]
        v_red = theory.decide(reduced, rng=rng, search=False)["verdict"]
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
        series.append(_series(f"{name}: skip block", lams, gaps))
        series.append(_series(f"{name}: |λ − λ^k|·‖Ax‖", lams, predicted))
    agrees = all(
        _num(r["discrepancy to (2 − 2^k)Ax"]) < EXACT_TOL * max(1.0, _num(r["‖f(2x) − 2^k f(x)‖"]))
        and _num(r["‖f(2x) − 2^k f(x)‖"]) > AWAY_TOL
        and _num(r["‖h(2x) − 2^k h(x)‖ (residual-free)"]) < EXACT_TOL
        for r in rows
    )
    figure: dict[str, object] = {"title": "Degree mismatch along a ray", "xlabel": "λ",
              "ylabel": "‖f(λx) − λ^k f(x)‖", "xscale": "log", "yscale": "log",
              "series": series}
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
    from absorb.search import fit_residual_free

    d, n = 3, 4
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    factors = (1, 2, 3)
    for name in ("relu2", "reglu", "swiglu", "relu"):
        target = random_block(get_activation(name), d, n, rng)
        worst: list[float] = []
        for factor in factors:
            res = fit_residual_free(target, width=factor * n, scales=FIT_SCALES, rng=rng,
                                    restarts=FIT_RESTARTS, steps=FIT_STEPS, samples=FIT_SAMPLES)
            errs = res.relative_error
            worst.append(max(errs.values()))
            rows.append({"activation": name, "width": factor * n, "width factor": factor,
                         **{f"rel. error @ {s:g}": errs[s] for s in FIT_SCALES}})
        series.append(_series(name, factors, worst))
    impossible = [r for r in rows if r["activation"] in ("relu2", "reglu", "swiglu")]
    agrees = all(_num(r[f"rel. error @ {FIT_SCALES[0]:g}"]) > AWAY_TOL for r in impossible)
    figure: dict[str, object] = {
              "title": "Best residual-free fit error vs width factor", "xlabel": "width factor",
              "ylabel": "max over scales of best relative error", "xscale": "linear",
              "yscale": "log", "series": series}
    return ExperimentResult(
        "degree_best_fit", "degree",
        "Numerical search: best held-out relative error of residual-free blocks of the same "
        "kind fitted to a skip block, per input scale and width factor.",
        agrees, rows, figure,
        summary="ReLU², ReGLU, SwiGLU: error at small scale bounded away from 0 at every width",
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
        series.append(_series(f"{name}: ‖f(tx)/t − Ax‖", TS, [r["‖f(tx)/t − Ax‖"] for r in part]))
        series.append(_series(f"{name}: ‖h(tx)/t‖", TS, [r["‖h(tx)/t‖"] for r in part]))
        series.append(_series(f"{name}: ‖Ax‖ (the limit of f(tx)/t)", TS,
                              [r["‖Ax‖"] for r in part]))
    agrees = True
    for name in ("swiglu", "geglu"):
        part = [r for r in rows if r["block"] == name]
        first, last = _num(part[0]["‖f(tx)/t − Ax‖"]), _num(part[-1]["‖f(tx)/t − Ax‖"])
        h_last = _num(part[-1]["‖h(tx)/t‖"])
        agrees &= last < 1e-3 * first and h_last < 1e-3 * _num(part[-1]["‖Ax‖"])
    figure: dict[str, object] = {
              "title": "Linearization gap as t → 0⁺", "xlabel": "t", "ylabel": "norm",
              "xscale": "log", "yscale": "log", "series": series}
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


def _depth_figure(rows: Sequence[dict[str, object]], title: str) -> dict[str, object]:
    series = []
    for name in dict.fromkeys(str(r["activation"]) for r in rows):
        part = [r for r in rows if r["activation"] == name]
        series.append(_series(f"{name}: ‖R(tx)/t − x‖", TS, [r["‖R(tx)/t − x‖"] for r in part]))
        series.append(_series(f"{name}: ‖H(tx)/t‖", TS, [r["‖H(tx)/t‖"] for r in part]))
    return {"title": title, "xlabel": "t", "ylabel": "norm", "xscale": "log", "yscale": "log",
            "series": series}


def depth_stack_limits(rng: np.random.Generator) -> ExperimentResult:
    """Depth 3, ReLU² (k = 2): R(tx)/t → x while H(tx)/t = t^{2^L − 1} H(x) → 0."""
    rows = _stack_limits("relu2", rng)
    return ExperimentResult(
        "depth_stack_limits", "depth_degree",
        "Residual ReLU² stack vs residual-free stack of the same depth and width as t → 0⁺.",
        _limits_agree(rows), rows, _depth_figure(rows, "Depth-3 ReLU² stacks as t → 0⁺"),
        summary="R(tx)/t → x, H(tx)/t → 0",
    )


def depth_gated_stack_limits(rng: np.random.Generator) -> ExperimentResult:
    """Depth 3, SwiGLU and GeGLU: R(tx)/t → x while H(tx)/t → 0."""
    rows = _stack_limits("swiglu", rng) + _stack_limits("geglu", rng)
    agrees = _limits_agree(rows[: len(TS)]) and _limits_agree(rows[len(TS) :])
    return ExperimentResult(
        "depth_gated_stack_limits", "depth_linearization",
        "Residual gated stacks vs residual-free gated stacks of the same depth and width as "
        "t → 0⁺.", agrees, rows, _depth_figure(rows, "Depth-3 gated stacks as t → 0⁺"),
        summary="R(tx)/t → x, H(tx)/t → 0",
    )


def depth_open_relu_gelu(rng: np.random.Generator) -> ExperimentResult:
    """OPEN (no theorem): deep ReLU and GELU stacks.  Shows why the arguments give nothing.

    ReLU stacks (k = 1, the case depth_degree excludes) are homogeneous of degree 1 in both
    forms, so R(λx) = λR(x) and H(λx) = λH(x): no scaling mismatch.  GELU stacks have linear
    parts at 0: R'(0) = Π(I + ½W_down W_up), H'(0) = Π ½V_down V_up, and a residual-free stack
    matches R'(0) exactly (first layer V_up = [2R'(0); 0], V_down = [I, 0], the others 2×the
    identity padded), so the small-t limit gives no obstruction either.
    """
    d, n, L = 3, 6, 2
    rows: list[dict[str, object]] = []
    relu = [random_block(get_activation("relu"), d, n, rng) for _ in range(L)]
    X = rng.standard_normal((32, d))
    rows.append({"stack": "relu, L = 2", "check": "‖R(3x) − 3R(x)‖ / ‖R(x)‖ (degree-1)",
                 "value": _rel(stack_forward(relu, 3 * X), 3 * stack_forward(relu, X))})
    gelu = [random_block(get_activation("gelu"), d, n, rng) for _ in range(L)]
    lin = np.eye(d)
    for b in gelu:
        lin = (np.eye(d) + 0.5 * b.W_down @ b.W_up) @ lin
    pad_up = np.zeros((n, d))
    pad_down = np.zeros((d, n))
    pad_down[:, :d] = np.eye(d)
    H = []
    for ell in range(L):
        V_up = pad_up.copy()
        V_up[:d] = 2 * lin if ell == 0 else 2 * np.eye(d)
        H.append(Block(get_activation("gelu"), V_up, pad_down.copy(), residual=False))
    x = rng.standard_normal(d)
    t = 1e-5
    first_order = float(np.linalg.norm((stack_forward(gelu, t * x) - stack_forward(H, t * x)) / t))
    rows.append({"stack": "gelu, L = 2", "check": "‖(R(tx) − H(tx))/t‖ at t = 1e-5",
                 "value": first_order})
    agrees = _num(rows[0]["value"]) < EXACT_TOL and first_order < 1e-3
    return ExperimentResult(
        "depth_open_relu_gelu", "depth_degree",
        "OPEN (paper): deep ReLU/GELU stacks. The degree and linearization arguments give no "
        "obstruction here; whether such stacks are generically not replicable is open.",
        agrees, rows, open=True,
        summary="open: no scaling or first-order obstruction exists; no theorem is claimed",
    )


# --------------------------------------------------------------------------------------------
# odd part


def odd_part_catalog(rng: np.random.Generator) -> ExperimentResult:
    """max_z |σ(z) − σ(−z) − z| on a grid in [−20, 20] (plus random points) for the catalog.

    The ungated entries and the gates of the gated ones; the flag ``odd_part_linear`` of the
    catalog must agree with the numbers (tanh, ReLU², sigmoid and the identity are controls).
    """
    z = np.concatenate([np.linspace(-20, 20, 4001), 20 * rng.standard_normal(256)])
    rows: list[dict[str, object]] = []
    series: list[dict[str, object]] = []
    zz = np.linspace(-4, 4, 161)
    for act in CATALOG.values():
        if act.gated:
            continue
        err = float(np.max(np.abs(act(z) - act(-z) - z)))
        rows.append({"activation": act.name, "catalog: odd-part-linear": act.odd_part_linear,
                     "max |σ(z) − σ(−z) − z|": err,
                     "agree": (err < EXACT_TOL) == act.odd_part_linear})
        series.append(_series(act.name, zz, act(zz) - act(-zz) - zz))
    figure: dict[str, object] = {
              "title": "σ(z) − σ(−z) − z (zero for odd-part-linear σ)", "xlabel": "z",
              "ylabel": "σ(z) − σ(−z) − z", "xscale": "linear", "yscale": "linear",
              "series": series}
    return ExperimentResult(
        "odd_part_catalog", "odd_part",
        "Odd part of every ungated catalog activation: z/2 exactly for ReLU, GELU, GELU-tanh, "
        "SiLU; not for tanh, ReLU², sigmoid (controls).",
        all(bool(r["agree"]) for r in rows), rows, figure,
        summary=f"{sum(bool(r['agree']) for r in rows)}/{len(rows)} activations match the catalog",
    )


# --------------------------------------------------------------------------------------------
# index sets


def index_set_construction(rng: np.random.Generator) -> ExperimentResult:
    """Planted S: the search finds an index set and the sign-flip block equals f to ~1e-12.

    ReLU, GELU, GELU-tanh, SiLU; without and with biases; identity and a random invertible A.
    """
    d, n = 3, 7
    rows: list[dict[str, object]] = []
    for name in ("relu", "gelu", "gelu_tanh", "silu"):
        for biases, general in ((False, False), (True, False), (False, True)):
            skip = _invertible(d, rng) if general else None
            f = _planted(name, d, n, rng, biases=biases, skip=skip)
            search = certificates.find_index_set(f.W_up, f.W_down, f.A_skip)
            err = float("nan")
            if search.S is not None:
                h = theory.absorbing_block(f, search.S)
                X = _points(rng, d)
                err = _rel(h(X), f(X))
            rows.append({"activation": name, "biases": biases, "skip": "A" if general else "I",
                         "search": search.status, "S": list(search.S or ()),
                         "max |h − f| / max |f|": err})
    agrees = all(r["search"] == "found" and _num(r["max |h − f| / max |f|"]) < EXACT_TOL
                 for r in rows)
    return ExperimentResult(
        "index_set_construction", "index_set_sufficient",
        "Planted index sets: found by the exact search; the sign-flip residual-free block "
        "reproduces the skip block to round-off.", agrees, rows,
        summary="construction error at round-off level for every planted instance",
    )


def index_set_control_width(rng: np.random.Generator) -> ExperimentResult:
    """Control (width): with n + 2d units every odd-part-linear skip block is absorbed.

    x = σ(x) − σ(−x), so V_up = [W_up; I; −I], V_down = [W_down, I, −I] gives a residual-free
    block of width n + 2d equal to f, even for generic weights with r² > 0 (no index set at
    width n): the same-width hypothesis is essential.
    """
    d, n = 3, 6
    rows: list[dict[str, object]] = []
    for name in ("relu", "gelu", "silu"):
        f = random_block(get_activation(name), d, n, rng)
        rel = certificates.relaxation(f.W_up, f.W_down)
        eye = np.eye(d)
        h = Block(f.activation, np.vstack([f.W_up, eye, -eye]),
                  np.hstack([f.W_down, eye, -eye]), residual=False)
        X = _points(rng, d)
        rows.append({"activation": name, "r² at width n": rel.residual, "width of h": n + 2 * d,
                     "max |h − f| / max |f|": _rel(h(X), f(X))})
    agrees = all(_num(r["r² at width n"]) > AWAY_TOL
                 and _num(r["max |h − f| / max |f|"]) < EXACT_TOL for r in rows)
    return ExperimentResult(
        "index_set_control_width", "index_set_sufficient",
        "Control (width n + 2d): no index set at width n, yet an explicit wider residual-free "
        "block equals the skip block.", agrees, rows, control=True,
        summary="wider blocks absorb generic skips exactly",
    )


def index_set_necessary_search(rng: np.random.Generator) -> ExperimentResult:
    """Numerical evidence for the 'only if' half (not formalized): on generic ReLU/GELU weights
    (no index set) the best same-width residual-free fit stays away from 0, while on a planted
    instance the sign-flip construction is exact."""
    from absorb.search import fit_residual_free

    d, n = 2, 3
    rows: list[dict[str, object]] = []
    for name in ("relu", "gelu"):
        for planted in (False, True):
            f = (_planted(name, d, n, rng) if planted
                 else random_block(get_activation(name), d, n, rng))
            search = certificates.find_index_set(f.W_up, f.W_down)
            row: dict[str, object] = {"activation": name, "planted S": planted,
                                      "index set": search.status,
                                      "r²": search.relaxation.residual}
            if search.S is not None:
                h = theory.absorbing_block(f, search.S)
                X = _points(rng, d)
                row["construction rel. error"] = _rel(h(X), f(X))
            else:
                res = fit_residual_free(f, scales=FIT_SCALES, rng=rng, restarts=FIT_RESTARTS,
                                        steps=FIT_STEPS, samples=FIT_SAMPLES)
                row["best fit rel. error (max over scales)"] = max(res.relative_error.values())
            rows.append(row)
    agrees = all(
        (r["index set"] == "found") == bool(r["planted S"])
        and (_num(r["construction rel. error"]) < EXACT_TOL
             if r["planted S"]
             else _num(r["best fit rel. error (max over scales)"]) > AWAY_TOL)
        for r in rows
    )
    return ExperimentResult(
        "index_set_necessary_search", "index_set_necessary",
        "Search evidence (no formal proof): generic weights have no index set and no good "
        "same-width fit; planted index sets give exact residual-free blocks.", agrees, rows,
        summary="no index set ⇒ fit error bounded away from 0 (evidence only)",
    )


def generic_random_draws(rng: np.random.Generator) -> ExperimentResult:
    """Fraction of Gaussian weight draws with an index set: 0 (a null set is never hit)."""
    rows: list[dict[str, object]] = []
    draws = 100
    for d, n in ((2, 4), (2, 6), (3, 6)):
        found = 0
        r2 = []
        for _ in range(draws):
            W_up = rng.standard_normal((n, d))
            W_down = rng.standard_normal((d, n))
            res = certificates.find_index_set(W_up, W_down)
            found += res.status == "found"
            r2.append(res.relaxation.residual)
        rows.append({"weights": "Gaussian", "d": d, "n": n, "draws": draws,
                     "fraction with index set": found / draws, "min r²": float(np.min(r2))})
    agrees = all(r["fraction with index set"] == 0.0 for r in rows)
    return ExperimentResult(
        "generic_random_draws", "generic_measure_zero",
        "Weights drawn from a density: no draw admits an index set.", agrees, rows,
        summary="fraction 0 for every size",
    )


def generic_control_discrete(rng: np.random.Generator) -> ExperimentResult:
    """Control (no density): weights uniform on {−1, 0, 1} hit the null set with positive
    probability, so the density hypothesis of Corollary 11 matters.  Decided exactly (ℚ)."""
    d, n, draws = 2, 4, 100
    found = 0
    for _ in range(draws):
        W_up = np.vectorize(Fraction, otypes=[object])(rng.integers(-1, 2, size=(n, d)))
        W_down = np.vectorize(Fraction, otypes=[object])(rng.integers(-1, 2, size=(d, n)))
        found += certificates.find_index_set(W_up, W_down).status == "found"
    rows: list[dict[str, object]] = [{"weights": "uniform on {−1, 0, 1}", "d": d, "n": n,
                                      "draws": draws, "fraction with index set": found / draws}]
    return ExperimentResult(
        "generic_control_discrete", "generic_measure_zero",
        "Control (no density): discrete weights admit index sets with positive frequency.",
        found > 0, rows, control=True, summary=f"{found}/{draws} discrete draws absorbable",
    )


def relaxation_generic_vs_planted(rng: np.random.Generator) -> ExperimentResult:
    """r² > 0 on generic weights, r² = 0 on planted ones (float and exact), and r² equal to an
    independent least-squares minimization of ‖W_down diag(s) W_up + A‖_F² over s ∈ ℝⁿ."""
    rows: list[dict[str, object]] = []
    # n < d² so that the d² equations are overdetermined and generic r² > 0.
    for d, n in ((2, 3), (3, 8), (4, 12)):
        for planted in (False, True):
            f = _planted("relu", d, n, rng) if planted else random_block(
                get_activation("relu"), d, n, rng)
            rel = certificates.relaxation(f.W_up, f.W_down)
            # Σ_i s_i vec(a_i b_iᵀ) = −vec(I): the d²×n design matrix, solved independently.
            design = np.einsum("ai,ib->abi", f.W_down, f.W_up).reshape(d * d, n)
            s, *_ = np.linalg.lstsq(design, -np.eye(d).ravel(), rcond=None)
            direct = float(np.sum((design @ s + np.eye(d).ravel()) ** 2))
            rows.append({"d": d, "n": n, "planted S": planted, "r²": rel.residual,
                         "r² (direct lstsq)": direct, "counts as zero": rel.is_zero})
    exact = _planted("relu", 2, 4, rng)
    to_q = np.vectorize(lambda v: Fraction(v).limit_denominator(1 << 20), otypes=[object])
    B = to_q(exact.W_up[:2])
    W_up_q = to_q(exact.W_up)
    W_down_q = to_q(exact.W_down)
    inv = _exact_inverse_2x2(B)
    W_down_q[:, :2] = -inv
    rel_q = certificates.relaxation(W_up_q, W_down_q)
    rows.append({"d": 2, "n": 4, "planted S": True, "r²": float(rel_q.residual),
                 "r² (direct lstsq)": float("nan"), "counts as zero": rel_q.is_zero,
                 "exact r²": str(rel_q.residual_exact)})
    agrees = all(
        bool(r["counts as zero"]) == bool(r["planted S"])
        and (r["r² (direct lstsq)"] != r["r² (direct lstsq)"]  # nan: the exact row
             or abs(_num(r["r²"]) - _num(r["r² (direct lstsq)"])) < 1e-8)
        for r in rows
    ) and rel_q.residual_exact == 0
    return ExperimentResult(
        "relaxation_generic_vs_planted", "relaxation_certificate",
        "Relaxation residual r² = d − cᵀG⁺c: positive on generic weights, zero on planted "
        "ones (exactly 0 in rational arithmetic), equal to a direct least-squares solve.",
        agrees, rows, summary="r² > 0 generic, r² = 0 planted, matches direct lstsq",
    )


def _exact_inverse_2x2(B: Any) -> Any:
    """Inverse of a 2×2 matrix of Fractions (Cramer's rule), as an object array."""
    a, b, c, e = B[0, 0], B[0, 1], B[1, 0], B[1, 1]
    det = a * e - b * c
    return np.array([[e / det, -b / det], [-c / det, a / det]], dtype=object)


# --------------------------------------------------------------------------------------------
# registry

EXPERIMENTS: Mapping[str, Experiment] = MappingProxyType({
    fn.__name__: fn
    for fn in (
        reduction_decisions_agree,
        degree_scaling_witness,
        degree_best_fit,
        degree_control_identity,
        degree_control_biases,
        linearization_gap,
        linearization_control_glu,
        depth_stack_limits,
        depth_gated_stack_limits,
        depth_open_relu_gelu,
        odd_part_catalog,
        index_set_construction,
        index_set_control_width,
        index_set_necessary_search,
        generic_random_draws,
        generic_control_discrete,
        relaxation_generic_vs_planted,
    )
})


def run_experiment(name: str, seed: int = 0) -> ExperimentResult:
    """Run one registered experiment with its own generator, seeded from ``seed`` and the
    experiment's name (so adding or reordering experiments leaves the others unchanged)."""
    try:
        fn = EXPERIMENTS[name]
    except KeyError:
        raise AbsorbError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}") from None
    return fn(experiment_rng(name, seed))


def experiment_rng(name: str, seed: int) -> np.random.Generator:
    """The generator of experiment ``name`` under ``seed``: independent streams per name."""
    key = [int(b) for b in name.encode("utf-8")]
    return np.random.default_rng(np.random.SeedSequence([seed, *key]))
