"""Numerical counterexample search (absorb.fits): derivatives, both engines, exact recovery of
planted blocks, floors of generic ones, lower bounds and contradictions, the CLI object."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import run_subprocess

from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, planted_block, random_block
from absorb.commands.search import fit_and_explain
from absorb.errors import AbsorbError
from absorb.fits import (
    FROM_TARGET,
    AdamFit,
    UnitFunction,
    contradictions,
    degree_bound,
    fit_residual_free,
    linearization_bound,
)
from absorb.fits import fit as fit_module
from absorb.fits.bounds import pairs
from absorb.fits.lm import VarPro


def unit_of(name: str) -> UnitFunction:
    unit = get_activation(name).unit
    assert unit is not None
    return unit


def evaluate(name: str, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value, deriv = np.full_like(z, np.nan), np.full_like(z, np.nan)
    unit_of(name)(z, value, deriv)
    return value, deriv


@pytest.mark.parametrize("name", sorted({a.gate or a.name for a in CATALOG.values()}))
def test_unit_values_match_catalog_and_derivative_matches_finite_differences(name: str) -> None:
    z = np.linspace(-6.0, 6.0, 2001)
    z = z[np.abs(z) > 1e-3]  # keep away from the kink of relu
    value, deriv = evaluate(name, z)
    np.testing.assert_allclose(value, CATALOG[name].fn(z), rtol=1e-12, atol=1e-14)
    h = 1e-6
    numeric = (evaluate(name, z + h)[0] - evaluate(name, z - h)[0]) / (2 * h)
    np.testing.assert_allclose(deriv, numeric, rtol=1e-6, atol=1e-7)
    # float32 buffers: the same values to float32 accuracy
    v32, d32 = evaluate(name, z.astype(np.float32))
    np.testing.assert_allclose(v32, value, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(d32, deriv, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(CATALOG))
@pytest.mark.parametrize("biases", [False, True])
def test_gradient_matches_finite_differences(name: str, biases: bool) -> None:
    rng = np.random.default_rng(0)
    act = get_activation(name)
    target = random_block(act, 3, 4, rng, biases=biases)
    X = rng.standard_normal((25, 3))
    T = target(X)
    weights = rng.random(25)
    params = {
        "V_up": rng.standard_normal((5, 3)),
        "V_down": rng.standard_normal((3, 5)),
    }
    if act.gated:
        params["V_gate"] = rng.standard_normal((5, 3))
    if biases:
        params["c_up"] = rng.standard_normal(5)
        params["c_down"] = rng.standard_normal(3)
    fit = AdamFit(unit_of(name), X, T, weights, params)
    fit.loss_and_grad()
    analytic = {k: v.copy() for k, v in fit.grad.items()}
    assert set(analytic) == set(params)
    h = 1e-6
    for key, p in fit.p.items():
        numeric = np.zeros_like(p)
        for idx in np.ndindex(p.shape):
            old = p[idx]
            p[idx] = old + h
            up = fit.loss_and_grad()
            p[idx] = old - h
            down = fit.loss_and_grad()
            p[idx] = old
            numeric[idx] = (up - down) / (2 * h)
        scale = max(1.0, float(np.max(np.abs(analytic[key]))))
        assert np.max(np.abs(numeric - analytic[key])) <= 1e-5 * scale, key


def test_projected_output_layer_is_the_least_squares_optimum() -> None:
    rng = np.random.default_rng(1)
    target = random_block(get_activation("gelu"), 3, 6, rng, biases=True)
    X = rng.standard_normal((200, 3))
    T = target(X)
    weights = np.full(200, 1.0 / 200)
    params = {
        k: rng.standard_normal(s)
        for k, s in (("V_up", (6, 3)), ("V_down", (3, 6)), ("c_up", (6,)), ("c_down", (3,)))
    }
    fit = AdamFit(unit_of("gelu"), X, T, weights, params, project=True)
    loss = fit.loss_and_grad()
    assert set(fit.grad) == {"V_up", "c_up"}
    H = CATALOG["gelu"].fn(X @ fit.p["V_up"].T + fit.p["c_up"])
    H1 = np.hstack([H, np.ones((200, 1))])
    sol, *_ = np.linalg.lstsq(H1, T, rcond=None)
    np.testing.assert_allclose(fit.p["V_down"], sol[:6].T, rtol=1e-6, atol=1e-8)
    best = float(np.sum((H1 @ sol - T) ** 2) / 200)
    assert loss == pytest.approx(best, rel=1e-8)


def test_float32_engine_tracks_float64() -> None:
    rng = np.random.default_rng(2)
    target = random_block(get_activation("silu"), 4, 8, rng)
    X = rng.standard_normal((300, 4))
    T = target(X)
    params = {"V_up": rng.standard_normal((8, 4)), "V_down": rng.standard_normal((4, 8))}
    f64 = AdamFit(unit_of("silu"), X, T, np.full(300, 1e-2), params)
    f32 = AdamFit(unit_of("silu"), X, T, np.full(300, 1e-2), params, np.float32)
    assert f32.Z.dtype == np.float32 and f32.p["V_up"].dtype == np.float32
    for _ in range(20):
        l64, l32 = f64.step(1e-3), f32.step(1e-3)
    assert l32 == pytest.approx(l64, rel=1e-4)


# --------------------------------------------------------------------------------------------
# the LM engine: Jacobian, normal equations


def _varpro(name: str, biases: bool, rng: np.random.Generator) -> tuple[VarPro, np.ndarray]:
    """A VarPro problem whose target is a residual-free block of width 4, and its exact θ."""
    act = get_activation(name)
    h = random_block(act, 3, 4, rng, biases=biases)
    X = rng.standard_normal((40, 3))
    unit = unit_of(name)
    vp = VarPro(unit, X, Block(act, h.W_up, h.W_down, h.W_gate, h.b_up, h.b_down,
                               residual=False)(X), rng.random(40) + 0.5, width=4,
                gated=act.gated, up_bias=biases, down_bias=biases)
    p = {"V_up": h.W_up}
    if act.gated:
        assert h.W_gate is not None
        p["V_gate"] = h.W_gate
    if biases:
        assert h.b_up is not None
        p["c_up"] = h.b_up
    return vp, vp.join(p)


@pytest.mark.parametrize("name", ["gelu", "silu", "swiglu", "relu2"])
@pytest.mark.parametrize("biases", [False, True])
def test_jacobian_matches_finite_differences_at_a_zero_residual(name: str, biases: bool) -> None:
    """At a zero residual Kaufman's Jacobian is the exact derivative of the projected residual;
    the structured normal equations equal JᵀJ and Jᵀr of the dense Jacobian anywhere."""
    rng = np.random.default_rng(11)
    vp, theta = _varpro(name, biases, rng)
    assert vp.cost(theta) < 1e-25
    J = vp.jacobian(theta)
    h = 1e-6
    numeric = np.stack([(vp.residual(theta + h * e) - vp.residual(theta - h * e)) / (2 * h)
                        for e in np.eye(theta.size)], axis=1)
    np.testing.assert_allclose(J, numeric, atol=1e-6 * max(1.0, float(np.max(np.abs(J)))))
    away = theta + 0.3 * rng.standard_normal(theta.size)
    J = vp.jacobian(away)
    JtJ, g = vp.normal_equations(away)
    np.testing.assert_allclose(JtJ, J.T @ J, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g, J.T @ vp.residual(away), rtol=1e-10, atol=1e-12)


def test_own_marquardt_and_scipy_least_squares_reach_the_same_zero() -> None:
    rng = np.random.default_rng(12)
    vp, theta = _varpro("gelu", False, rng)
    start = theta + 0.05 * rng.standard_normal(theta.size)
    for solver in ("normal", "scipy"):
        assert vp.cost(vp.levenberg_marquardt(start, 100, solver=solver)) < 1e-24


# --------------------------------------------------------------------------------------------
# the search: planted blocks found, generic blocks stall, controls


def _worst(res: fit_module.FitResult) -> float:
    return max(res.relative_error.values())


@pytest.mark.parametrize("name", ["relu", "gelu"])
def test_planted_blocks_recovered_and_generic_floor_far_above(name: str) -> None:
    """Same width, random starts only: a planted index set (an exact residual-free block exists)
    is fitted to round-off at every scale; a generic block (n < d²: r² > 0, no index set, not
    absorbable) stays at least 10⁴ times higher, with the same code and budget."""
    rng = np.random.default_rng(13)
    d, n = 3, 6
    generic = random_block(get_activation(name), d, n, rng)
    planted = planted_block(generic, rng, size=4)
    settings = {"restarts": 3, "rng": np.random.default_rng(14)}
    found = fit_residual_free(planted, **settings)  # type: ignore[arg-type]
    floor = fit_residual_free(generic, **settings)  # type: ignore[arg-type]
    assert found.independent and set(found.init_kinds) == {"random"}
    assert _worst(found) <= 1e-8
    assert min(floor.relative_error.values()) > 1e4 * _worst(found)
    assert not found.contradictions and not floor.contradictions


def test_width_control_fits_generic_blocks_exactly() -> None:
    """x = σ(x) − σ(−x): at width n + 2d every odd-part-linear skip block is representable."""
    rng = np.random.default_rng(15)
    target = random_block(get_activation("relu"), 2, 3, rng)
    res = fit_residual_free(target, width=3 + 4, restarts=2, rng=rng)
    assert _worst(res) < 1e-8


def test_adam_engine_runs_and_lags() -> None:
    rng = np.random.default_rng(16)
    target = planted_block(random_block(get_activation("relu"), 2, 4, rng), rng)
    res = fit_residual_free(target, engine="adam", restarts=1, steps=50, samples=64, rng=rng)
    assert res.engine == "adam" and len(res.per_restart) == 1 and _worst(res) < 10


def test_determinism_under_seed() -> None:
    block = random_block(get_activation("gelu"), 2, 4, np.random.default_rng(17))
    a = fit_and_explain(block, restarts=2, steps=40, seed=3)
    b = fit_and_explain(block, restarts=2, steps=40, seed=3)
    for out in (a, b):
        out.pop("seconds")
        out.pop("restart_seconds")
        assert isinstance(out["control"], dict)
        out["control"].pop("seconds")
    assert a == b


def test_time_budget_stops_cleanly_and_says_so() -> None:
    block = random_block(get_activation("relu"), 3, 6, np.random.default_rng(18))
    res = fit_residual_free(block, restarts=50, rng=np.random.default_rng(0), time_budget=0.2)
    assert res.stopped_by_budget and res.restarts == 50
    assert 1 <= len(res.per_restart) < 50
    assert res.status == f"stopped by time budget after {len(res.per_restart)} restarts"
    assert res.to_json()["stopped_by_budget"] is True


def test_init_from_target_is_labelled_not_independent() -> None:
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(19))
    res = fit_residual_free(block, restarts=1, steps=20, rng=np.random.default_rng(0),
                            init_from_target=True)
    assert res.init_kinds == ("random", FROM_TARGET) and not res.independent
    assert res.to_json()["independent"] is False
    out = fit_and_explain(block, restarts=1, steps=20, init_from_target=True, control=False)
    assert str(out["independence"]).startswith("NOT independent")
    assert fit_and_explain(block, restarts=1, steps=20, control=False)["independent"] is True


# --------------------------------------------------------------------------------------------
# lower bounds


def _held(rng: np.random.Generator, d: int) -> list[tuple[float, np.ndarray]]:
    return [(s, s * rng.standard_normal((64, d))) for s in (0.01, 1.0, 100.0)]


def _errors(h: Block, f: Block, held: list[tuple[float, np.ndarray]]
            ) -> dict[str, dict[float, float]]:
    fro, sup = fit_module.held_out_errors(h, f, held)
    return {"relative_error": fro, "sup_relative_error": sup}


def test_degree_bound_formula_and_validity() -> None:
    """ReLU² (k = 2): the bound equals 2‖AZ‖/√17 / ‖f(P)‖ (Frobenius) and
    (2/5) max‖Ax‖ / max‖f(p)‖ (sup); the residual-free block with the target's own weights
    (error exactly A x) and random residual-free blocks of any width all stay above it."""
    rng = np.random.default_rng(20)
    f = random_block(get_activation("relu2"), 3, 5, rng)
    held = _held(rng, 3)
    bound = degree_bound(f, held)
    assert bound is not None
    per_scale = bound["per_scale"]
    assert isinstance(per_scale, dict)
    for s, Z in held:
        fP = np.linalg.norm(f(pairs(Z)), axis=1)
        Ax = np.linalg.norm(Z, axis=1)  # A = I
        assert per_scale[s]["relative_error"] == pytest.approx(
            2 * np.linalg.norm(Ax) / np.sqrt(17) / np.linalg.norm(fP), rel=1e-12)
        assert per_scale[s]["sup_relative_error"] == pytest.approx(
            0.4 * np.max(Ax) / np.max(fP), rel=1e-12)
    own = Block(f.activation, f.W_up, f.W_down, residual=False)
    others = [own] + [Block(f.activation, b.W_up, b.W_down, residual=False)
                      for b in (random_block(f.activation, 3, w, rng) for w in (5, 12))]
    for h in others:
        assert contradictions([bound], _errors(h, f, held)) == []
    assert degree_bound(random_block(get_activation("relu"), 3, 5, rng), held) is None
    assert degree_bound(random_block(f.activation, 3, 5, rng, biases=True), held) is None


def test_linearization_bound_holds_for_random_fits() -> None:
    rng = np.random.default_rng(21)
    f = random_block(get_activation("swiglu"), 3, 5, rng)
    held = _held(rng, 3)
    for w in (5, 9):
        b = random_block(f.activation, 3, w, rng)
        h = Block(f.activation, b.W_up, b.W_down, b.W_gate, residual=False)
        bounds = linearization_bound(f, h, held)
        assert bounds[0]["norms"] == "the fit's own"
        assert bounds[0]["applies_to_fit"] is True
        small = bounds[0]["per_scale"][0.01]  # type: ignore[index]
        assert small["relative_error"] > 0.5  # near 0 the skip dominates: a large bound
        assert contradictions(bounds, _errors(h, f, held)) == []


def test_fabricated_fit_below_the_bound_is_a_contradiction(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A fit reported below the degree bound (here: errors faked to 10⁻¹²) must be flagged,
    in the result, in JSON and in the text of ``absorb search``."""
    rng = np.random.default_rng(22)
    f = random_block(get_activation("relu2"), 2, 3, rng)

    def fake(h: Block, target: Block, held: object) -> tuple[dict[float, float], ...]:
        tiny = {s: 1e-12 for s in (0.01, 1.0, 100.0)}
        return tiny, tiny

    monkeypatch.setattr(fit_module, "held_out_errors", fake)
    res = fit_residual_free(f, restarts=1, steps=5, rng=rng)
    assert res.contradictions and all(c["error"] < c["bound"] for c in res.contradictions)
    assert res.to_json()["contradiction"] is True
    out = fit_and_explain(f, restarts=1, steps=5, control=False)
    assert out["contradiction"] is True and str(out["summary"]).startswith("CONTRADICTION")


def test_real_relu2_fit_respects_the_bound() -> None:
    f = random_block(get_activation("relu2"), 2, 3, np.random.default_rng(23))
    res = fit_residual_free(f, restarts=2, rng=np.random.default_rng(0))
    assert res.bounds and not res.contradictions
    bound = res.bounds[0]["per_scale"][0.01]  # type: ignore[index]
    assert res.relative_error[0.01] >= bound["relative_error"] > 0.1


# --------------------------------------------------------------------------------------------
# arguments, progress, CLI


@pytest.mark.parametrize(
    "kwargs",
    [{"width": 0}, {"steps": 0}, {"scales": (0.0, 1.0)}, {"scales": ()}, {"engine": "sgd"},
     {"time_budget": -1.0}],
)
def test_bad_arguments_raise(kwargs: dict[str, object]) -> None:
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(0))
    with pytest.raises(AbsorbError):
        fit_residual_free(block, rng=np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]


def test_progress_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(0))
    fit_residual_free(block, restarts=1, steps=10, rng=np.random.default_rng(0), progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "search (lm)" in err


def test_cli_search_json_explains_itself() -> None:
    res = run_subprocess(["search", "--activation", "relu", "--d", "3", "--n", "6",
                          "--restarts", "2", "--json"])
    assert res.code == 0, res.err
    out = res.json()
    assert out["width"] == 6 and out["engine"] == "lm" and out["independent"] is True
    pred = out["prediction"]
    assert isinstance(pred, dict) and pred["expect"] == "floor"
    ctrl = out["control"]
    assert isinstance(ctrl, dict) and ctrl["kind"].startswith("planted")
    assert ctrl["max_relative_error"] < 1e-8 < 1e-4 < float(out["max_relative_error"])  # type: ignore[arg-type]
    assert out["contradiction"] is False and out["lower_bounds"] == []
    assert set(out["relative_error"]) == {"0.01", "1.0", "100.0"}  # type: ignore[arg-type]


def test_cli_search_width_control_bounds_and_budget() -> None:
    wide = run_subprocess(["search", "--activation", "gelu", "--d", "2", "--n", "3",
                           "--width-factor", "2.34", "--restarts", "1", "--no-control",
                           "--json"]).json()
    assert wide["width"] == 8 and wide["control"] is None
    assert "always absorbable" in str(wide["prediction"]["text"])  # type: ignore[index]
    # A budget of one nanosecond is spent by the first restart (which always runs) on any
    # machine, so the second start is cut whatever the load.
    deg = run_subprocess(["search", "--activation", "relu2", "--d", "2", "--n", "3",
                          "--restarts", "1", "--no-control", "--time-budget", "1e-9",
                          "--init-from-target"])
    assert deg.code == 0, deg.err
    assert "lower bound (degree" in deg.out
    assert "stopped by time budget after 1 restarts" in deg.out
    assert "NOT independent" in deg.out


def test_adam_is_not_refused_by_the_lm_engines_size_check() -> None:
    """The LM engine's normal equations are sized only when LM runs (d = 64, n = 256 would need
    6 GiB of them at 64 samples per scale; Adam needs a fraction of that)."""
    block = random_block(get_activation("relu"), 64, 256, np.random.default_rng(0))
    res = fit_residual_free(block, width=256, rng=np.random.default_rng(0), engine="adam",
                            samples=64, steps=3, restarts=1)
    assert res.engine == "adam" and all(np.isfinite(v) for v in res.relative_error.values())
