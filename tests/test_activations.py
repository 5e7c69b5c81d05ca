"""The activation catalog: formulas, structural flags, verdict texts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from absorb.activations import CATALOG, get_activation
from absorb.errors import AbsorbError

NAMES = ("relu", "gelu", "gelu_tanh", "silu", "relu2", "tanh", "sigmoid", "identity",
         "swiglu", "geglu", "geglu_tanh", "reglu", "glu", "softplus")
GRID = np.linspace(-8.0, 8.0, 2001)
reals = st.floats(min_value=-50.0, max_value=50.0, allow_nan=False)


def test_catalog_has_every_entry() -> None:
    assert tuple(CATALOG) == NAMES
    assert {a.name for a in CATALOG.values() if a.gated} == {"swiglu", "geglu", "geglu_tanh",
                                                             "reglu", "glu"}


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(AbsorbError, match="known: relu, gelu") as info:
        get_activation("swish")
    assert "\n" not in str(info.value)


def test_gelu_matches_erf_formula() -> None:
    expected = np.array([0.5 * z * (1.0 + math.erf(z / math.sqrt(2.0))) for z in GRID])
    np.testing.assert_allclose(get_activation("gelu")(GRID), expected, rtol=1e-13, atol=1e-15)


def test_gelu_tanh_is_close_to_gelu_but_not_equal() -> None:
    diff = np.abs(get_activation("gelu_tanh")(GRID) - get_activation("gelu")(GRID))
    assert 0.0 < diff.max() < 1e-3


def test_silu_and_sigmoid_are_stable_in_the_tails() -> None:
    z = np.array([-1e4, -800.0, 800.0, 1e4])
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(get_activation("silu")(z), [-0.0, -0.0, 800.0, 1e4])
        np.testing.assert_array_equal(get_activation("sigmoid")(z), [0.0, 0.0, 1.0, 1.0])


@pytest.mark.parametrize("name", [n for n in NAMES if not CATALOG[n].gated])
def test_odd_part_flag_matches_numerics(name: str) -> None:
    act = get_activation(name)
    odd_part_is_linear = np.allclose(act(GRID) - act(-GRID), GRID, rtol=0, atol=1e-12)
    assert odd_part_is_linear == act.odd_part_linear


@given(reals)
def test_odd_part_identity_property(z: float) -> None:
    for name in ("relu", "gelu", "gelu_tanh", "silu"):
        act = get_activation(name)
        zz = np.array([z])
        assert act(zz)[0] - act(-zz)[0] == pytest.approx(z, abs=1e-12)


@given(reals, st.floats(min_value=0.01, max_value=100.0))
def test_degree_is_the_homogeneity_of_sigma(z: float, lam: float) -> None:
    for name in ("relu", "relu2", "identity"):
        act = get_activation(name)
        assert act.degree is not None
        zz = np.array([z])
        assert act(lam * zz)[0] == pytest.approx(lam**act.degree * act(zz)[0], rel=1e-12,
                                                 abs=1e-300)


@pytest.mark.parametrize("name", ["swiglu", "geglu", "geglu_tanh", "reglu", "glu"])
def test_gated_entries_record_their_gate(name: str) -> None:
    act = get_activation(name)
    assert act.gate is not None
    np.testing.assert_array_equal(act(GRID), get_activation(act.gate)(GRID))
    assert act.g0 == act(np.zeros(1))[0]


def test_to_json_carries_the_verdict_text() -> None:
    for act in CATALOG.values():
        row = act.to_json()
        assert row["name"] == act.name and row["family"] == act.family
        assert isinstance(row["verdict"], str) and row["verdict"]
    assert "degree" in CATALOG["relu2"].to_json()["verdict"]
    assert "linearization" in CATALOG["swiglu"].to_json()["verdict"]
    assert "bounded" in CATALOG["tanh"].to_json()["verdict"]
    assert "no theorem" in CATALOG["glu"].to_json()["verdict"]


def test_bound_flag_matches_numerics() -> None:
    """``bound`` is sup |σ| for the bounded ungated entries and None for the others (no gated
    entry carries one: a bounded gate times a linear value is unbounded)."""
    z = np.concatenate([GRID, [-1e6, 1e6]])
    for act in CATALOG.values():
        if act.bound is None:
            assert act.gated or float(np.max(np.abs(act(z)))) > 1e3, act.name
        else:
            assert not act.gated and float(np.max(np.abs(act(z)))) <= act.bound, act.name
            assert float(np.max(np.abs(act(z)))) == pytest.approx(act.bound), act.name
