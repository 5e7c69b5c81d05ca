"""Blocks: shapes, evaluation against a per-sample reference, homogeneity, stacks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from absorb.activations import get_activation
from absorb.blocks import Block, random_block, stack_forward
from absorb.errors import AbsorbError


def reference(block: Block, x: np.ndarray) -> np.ndarray:
    """f(x) for one sample, written out unit by unit (independent of Block.mlp)."""
    out = block.skip_matrix() @ x if block.residual else np.zeros(block.d)
    for i in range(block.n):
        pre = block.W_up[i] @ x + (0.0 if block.b_up is None else block.b_up[i])
        if block.W_gate is None:
            hidden = block.activation(np.array([pre]))[0]
        else:
            hidden = block.activation(np.array([block.W_gate[i] @ x]))[0] * pre
        out = out + hidden * block.W_down[:, i]
    return out if block.b_down is None else out + block.b_down


@pytest.mark.parametrize("name", ["relu", "gelu", "tanh", "swiglu", "glu"])
@pytest.mark.parametrize("biases", [False, True])
def test_batch_evaluation_matches_reference(name: str, biases: bool,
                                            rng: np.random.Generator) -> None:
    A = rng.standard_normal((3, 3))
    block = random_block(get_activation(name), 3, 7, rng, biases=biases, skip=A)
    X = rng.standard_normal((5, 3))
    expected = np.array([reference(block, x) for x in X])
    np.testing.assert_allclose(block(X), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(block(X[0]), expected[0], rtol=1e-12, atol=1e-12)
    free = Block(block.activation, block.W_up, block.W_down, block.W_gate, block.b_up,
                 block.b_down, residual=False)
    np.testing.assert_allclose(block(X) - free(X), X @ A.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"W_up": np.ones(3)}, "W_up must be a matrix"),
        ({"W_up": np.ones((0, 3)), "W_down": np.ones((3, 0))}, "zero size"),
        ({"W_down": np.ones((2, 4))}, "W_down has shape 2x4, expected 3x4"),
        ({"b_up": np.ones(3)}, "b_up has shape 3, expected 4"),
        ({"b_down": np.ones((3, 1))}, "b_down has shape 3x1"),
        ({"A_skip": np.ones((3, 2))}, "A_skip has shape 3x2"),
        ({"W_gate": np.ones((4, 3))}, "not gated; W_gate given"),
    ],
)
def test_bad_shapes_are_one_line_errors(kwargs: dict[str, np.ndarray], message: str) -> None:
    weights = {"W_up": np.ones((4, 3)), "W_down": np.ones((3, 4)), **kwargs}
    with pytest.raises(AbsorbError, match=message):
        Block(get_activation("relu"), **weights)


def test_gated_block_needs_its_gate() -> None:
    with pytest.raises(AbsorbError, match="needs W_gate"):
        Block(get_activation("swiglu"), np.ones((4, 3)), np.ones((3, 4)))


def test_random_block_is_deterministic_under_a_seed() -> None:
    act = get_activation("geglu")
    a = random_block(act, 4, 6, np.random.default_rng(7), biases=True)
    b = random_block(act, 4, 6, np.random.default_rng(7), biases=True)
    for key in ("W_up", "W_down", "W_gate", "b_up", "b_down"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key))
    with pytest.raises(AbsorbError, match="sizes must be positive"):
        random_block(act, 0, 6, np.random.default_rng(7))


def test_stack_forward_composes_in_order(rng: np.random.Generator) -> None:
    act = get_activation("relu")
    blocks = [random_block(act, 3, 5, rng) for _ in range(3)]
    X = rng.standard_normal((4, 3))
    np.testing.assert_allclose(stack_forward(blocks, X), blocks[2](blocks[1](blocks[0](X))))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(min_value=0.05, max_value=20.0))
def test_relu2_and_reglu_blocks_are_homogeneous_of_degree_two(seed: int, lam: float) -> None:
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((6, 3))
    for name in ("relu2", "reglu"):
        block = random_block(get_activation(name), 3, 5, gen)
        np.testing.assert_allclose(block.mlp(lam * X), lam**2 * block.mlp(X), rtol=1e-10,
                                   atol=1e-12)
