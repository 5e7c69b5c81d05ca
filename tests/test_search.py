"""Numerical counterexample search (absorb.search): gradients, the fit engine, the controls."""

from __future__ import annotations

import numpy as np
import pytest

from absorb.activations import CATALOG, get_activation
from absorb.blocks import Block, random_block
from absorb.errors import AbsorbError
from absorb.search import (
    DERIVATIVES,
    AdamFit,
    UnitFunction,
    fit_residual_free,
    run_search,
)
from absorb.theory import absorbing_block


def unit_of(name: str) -> UnitFunction:
    act = get_activation(name)
    return DERIVATIVES[act.gate if act.gated else act.name]


def evaluate(name: str, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value, deriv = np.full_like(z, np.nan), np.full_like(z, np.nan)
    DERIVATIVES[name](z, value, deriv)
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


@pytest.mark.parametrize("name", ["relu", "gelu"])
def test_control_skip_is_representable_with_2d_extra_units(name: str) -> None:
    """x = σ(x) − σ(−x): at width n + 2d an odd-part-linear skip block is exactly representable
    and the search must find it (a failed search at width n means something only then)."""
    rng = np.random.default_rng(3)
    d, n = 4, 8
    target = random_block(get_activation(name), d, n, rng)
    res = fit_residual_free(
        target, width=n + 2 * d, restarts=2, steps=600, samples=256, rng=np.random.default_rng(4)
    )
    assert res.width == n + 2 * d
    assert res.relative_error[1.0] < 1e-3
    assert max(res.relative_error.values()) < 1e-3


def test_planted_index_set_same_width_fit() -> None:
    """On an absorbable (planted) target the same-width fit gets close from the target's own
    weights and random starts, and to ~0 from the sign-flip construction; report both."""
    rng = np.random.default_rng(5)
    relu = get_activation("relu")
    d, n, k = 3, 10, 5
    base = random_block(relu, d, n, rng)
    W_up, W_down = base.W_up.copy(), base.W_down.copy()
    S = np.sort(rng.choice(n, size=k, replace=False))
    T, rest = S[:d], S[d:]
    W_down[:, T] = (-np.eye(d) - W_down[:, rest] @ W_up[rest]) @ np.linalg.inv(W_up[T])
    target = Block(relu, W_up, W_down)
    construction = absorbing_block(target, [int(i) for i in S])
    res = fit_residual_free(
        target,
        restarts=2,
        steps=800,
        samples=256,
        rng=np.random.default_rng(6),
        inits=[construction],
    )
    assert res.init_kinds == ("warm", "random", "given")
    searched = [
        row[1.0]
        for row, kind in zip(res.per_restart, res.init_kinds, strict=True)
        if kind != "given"
    ]
    assert min(searched) < 0.1  # close, without the construction
    assert res.per_restart[-1][1.0] < 1e-8  # the construction is an exact absorber


def test_relu2_degree_obstruction_keeps_error_large() -> None:
    """Degree 2 ≠ 1: f(2x) − 4f(x) = −2x while h(2x) − 4h(x) = 0, so near 0 (where f ≈ x) no
    residual-free ReLU² block can fit; far out the skip term still leaves a visible gap."""
    rng = np.random.default_rng(7)
    target = random_block(get_activation("relu2"), 4, 8, rng)
    res = fit_residual_free(
        target, restarts=2, steps=600, samples=256, rng=np.random.default_rng(8)
    )
    assert res.relative_error[0.01] > 0.5
    assert res.relative_error[100.0] > 0.05


def test_run_search_json_and_determinism() -> None:
    block = random_block(get_activation("swiglu"), 3, 4, np.random.default_rng(9))
    a = run_search(block, width_factor=1.5, restarts=2, steps=30, samples=64, seed=3)
    b = run_search(block, width_factor=1.5, restarts=2, steps=30, samples=64, seed=3)
    assert a == b
    assert a["width"] == 6 and a["width_factor"] == 1.5
    assert a["target"] == {
        "activation": "swiglu",
        "d": 3,
        "n": 4,
        "gated": True,
        "biases": False,
        "skip": "identity",
    }
    rows = a["per_restart"]
    assert isinstance(rows, list) and len(rows) == 2
    errs = a["relative_error"]
    assert isinstance(errs, dict) and set(errs) == {"0.01", "1.0", "100.0"}
    for s, e in errs.items():
        assert e == min(r["relative_error"][s] for r in rows)


def test_progress_bar_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(0))
    fit_residual_free(
        block, restarts=1, steps=100, samples=16, rng=np.random.default_rng(0), progress=True
    )
    out, err = capsys.readouterr()
    assert out == "" and "search" in err


@pytest.mark.parametrize(
    "kwargs",
    [{"width": 0}, {"steps": 0}, {"scales": (0.0, 1.0)}, {"scales": ()}, {"dtype": np.int64}],
)
def test_bad_arguments_raise(kwargs: dict[str, object]) -> None:
    block = random_block(get_activation("relu"), 2, 3, np.random.default_rng(0))
    with pytest.raises(AbsorbError):
        fit_residual_free(block, rng=np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]
