"""The ``bounded`` theorem on seeded random blocks: tanh and sigmoid skip blocks are unbounded
along a ray, every residual-free block of the kind is bounded, and ``check`` says
``impossible`` with that witness."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.activations import CATALOG
from absorb.blocks import random_block
from absorb.experiments.base import Experiment, ExperimentResult


def bounded_unbounded_ray(rng: np.random.Generator) -> ExperimentResult:
    """For each bounded catalog σ, with and without biases: ``decide`` gives ``impossible``
    (bounded), and at t = 10·t* the measured ‖f(tv)‖_max exceeds the bound C that every
    residual-free block with no larger weights obeys (‖h‖_max ≤ C everywhere)."""
    from absorb.theory import decide

    rows: list[dict[str, object]] = []
    for act in (a for a in CATALOG.values() if a.bound is not None):
        for biases in (False, True):
            block = random_block(act, 3, 8, rng, biases=biases)
            v = decide(block, rng=rng)
            w = v.to_json()["witness"]
            assert isinstance(w, dict)
            C = float(Fraction(str(w["residual_free_bound"])))
            step = w["steps"][1]
            rows.append({"activation": act.name, "biases": biases, "verdict": v.kind,
                         "theorem": v.theorem, "C": C, "t": step["t"],
                         "|f(tv)|_max": step["f_norm"]})
    agrees = all(r["verdict"] == "impossible" and r["theorem"] == "bounded"
                 and float(str(r["|f(tv)|_max"])) > float(str(r["C"])) for r in rows)
    return ExperimentResult(
        "bounded_unbounded_ray", "bounded",
        "Bounded σ (tanh, sigmoid), with and without biases: check says impossible (bounded), "
        "and along v the block exceeds the bound C of every residual-free block with no larger "
        "weights.", agrees, rows,
        summary=f"{sum(r['verdict'] == 'impossible' for r in rows)}/{len(rows)} bounded blocks "
                "impossible, each unbounded along its witness ray")


#: The experiments the manifest files under ``bounded``, in its order.
EXPERIMENTS: tuple[Experiment, ...] = (
    bounded_unbounded_ray,
)
