"""The ``depth_linearization`` theorem: residual gated stacks tend to the identity at 0,
residual-free gated stacks to 0."""

from __future__ import annotations

import numpy as np

from absorb.experiments.base import (
    TS,
    Experiment,
    ExperimentResult,
    _depth_figure,
    _limits_agree,
    _stack_limits,
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


#: The experiments the manifest files under ``depth_linearization``, in its order.
EXPERIMENTS: tuple[Experiment, ...] = (
    depth_gated_stack_limits,
)
