"""The ``depth_kink_rays`` theorem (Theorem B, d = 2): count kink rays against 2·L·d.

* kink_rays_count: random injective width-4 stacks of depth L = 2, 3 (weights N(0, σ²) rounded
  to 2⁻⁸, redrawn until every block is injective) have 8L kink rays, more than 2·L·d = 4L, and
  get ``not_absorbed``; the positive control, stacks of paired-row blocks (rows u, −u with equal
  columns, so every block has an index set and the stack is absorbed), has exactly 4L kink
  rays (fewer where pulled-back lines coincide or their jumps cancel) and is never called
  ``not_absorbed``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from absorb.blocks import Block, ExactWeights
from absorb.experiments.base import Experiment, ExperimentResult
from absorb.experiments.depth_injective import RELU, dyadic_block
from absorb.stacks import decide_stack
from absorb.stacks.injective import block_injectivity
from absorb.stacks.kinks import analyse
from absorb.stacks.plane import layers_of

DEPTHS = (2, 3)
STACKS = 4
SIGMA = 0.5


def injective_block(rng: np.random.Generator, sigma: float = SIGMA) -> Block:
    """A d = 2, width-4 dyadic block, redrawn until the winding decision calls it injective."""
    while True:
        block = dyadic_block(rng, 2, 4, sigma)
        if block_injectivity(block, 0).injective:
            return block


def paired_block(rng: np.random.Generator) -> Block:
    """x + w₁|u₁·x| + w₂|u₂·x| as a width-4 block (rows u₁, −u₁, u₂, −u₂, columns w₁, w₁, w₂,
    w₂) with [w₁ w₂] = −[u₁; u₂]⁻¹: the units {0, 2} are an index set, so it is absorbed."""
    while True:
        u = [[Fraction(int(v), 4) for v in rng.integers(-8, 9, size=2)] for _ in range(2)]
        det = u[0][0] * u[1][1] - u[0][1] * u[1][0]
        if det != 0:
            break
    inv = [[u[1][1] / det, -u[0][1] / det], [-u[1][0] / det, u[0][0] / det]]
    U = np.array([u[0], [-v for v in u[0]], u[1], [-v for v in u[1]]], dtype=object)
    W = np.array([[-inv[i][0], -inv[i][0], -inv[i][1], -inv[i][1]] for i in range(2)],
                 dtype=object)
    return Block(RELU, U.astype(np.float64), W.astype(np.float64), exact=ExactWeights(U, W))


def _rows(rng: np.random.Generator, L: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for kind in ("random injective", "paired rows (control)"):
        for _ in range(STACKS):
            stack = ([injective_block(rng) for _ in range(L)] if kind.startswith("random")
                     else [paired_block(rng) for _ in range(L)])
            rays = len(analyse(layers_of(stack)).kinks)
            v = decide_stack(stack, rng=rng, fit=False)
            rows.append({"stack": kind, "L": L, "kink_rays": rays, "bound_2Ld": 4 * L,
                         "verdict": str(v["verdict"]), "theorem": str(v["theorem"])})
    return rows


def kink_rays_count(rng: np.random.Generator) -> ExperimentResult:
    """Theorem B's ray count on injective random stacks and on absorbed paired-row stacks."""
    table = [r for L in DEPTHS for r in _rows(rng, L)]
    random = [r for r in table if r["stack"] == "random injective"]
    control = [r for r in table if r["stack"] != "random injective"]
    agrees = (all(r["verdict"] != "not_absorbed"
                  and int(str(r["kink_rays"])) <= int(str(r["bound_2Ld"])) for r in control)
              and all(r["verdict"] == "not_absorbed" for r in random
                      if int(str(r["kink_rays"])) > int(str(r["bound_2Ld"]))))
    decided = sum(r["verdict"] == "not_absorbed" for r in random)
    return ExperimentResult(
        "kink_rays_count", "depth_kink_rays",
        "d = 2, width 4: random injective stacks (N(0, ¼) rounded to 2⁻⁸) against 2·L·d kink "
        "rays, exact; paired-row stacks (absorbed, an index set per block) as the control.",
        agrees, table,
        summary=(f"{decided} of {len(random)} random injective stacks not_absorbed (by "
                 f"{', '.join(sorted({str(r['theorem']) for r in random}))}; kink rays "
                 f"{sorted({int(str(r['kink_rays'])) for r in random})}); "
                 "paired-row controls: kink rays "
                 f"{sorted({int(str(r['kink_rays'])) for r in control})}"
                 f", verdicts {sorted({str(r['verdict']) for r in control})}"),
        table_note="absorbed paired-row stacks stay at or below 2·L·d = 4L kink rays (generic "
                   "ones reach it): the count must exceed the bound, not merely reach it.")


EXPERIMENTS: tuple[Experiment, ...] = (
    kink_rays_count,
)
