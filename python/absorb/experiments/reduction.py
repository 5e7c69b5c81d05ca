"""The ``reduction`` theorem: an invertible skip A reduces to the identity skip (f_A = A·f_red,
same verdict)."""

from __future__ import annotations

import numpy as np

from absorb import theory
from absorb.activations import get_activation
from absorb.blocks import Block, random_block
from absorb.experiments.base import (
    EXACT_TOL,
    Experiment,
    ExperimentResult,
    _invertible,
    _planted,
    _points,
    _rel,
)


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


#: The experiments the manifest files under ``reduction``, in its order.
EXPERIMENTS: tuple[Experiment, ...] = (
    reduction_decisions_agree,
)
