"""Exact stack decisions: time to decide a d = 2, 3, 4 stack against its predicted cost.

    python benchmarks/stack_bench.py            # full sizes (a minute or two on 2 cores)
    python benchmarks/stack_bench.py --quick    # smaller sizes

One table, every ratio from the same run: random bias-free ReLU stacks (weights N(0, 1) rounded
to 2⁻⁸, seeded), the predicted size of the exact enumeration (sectors in d = 2,
:func:`absorb.stacks.kinks.predicted_sectors`; candidate points in d ≥ 3,
:func:`absorb.stacks.pieces.predicted_points`), the decision's wall time (``decide_stack``
without the search), the time per predicted unit, and the verdict. Past the budget the decision
refuses with the predicted figure; the enumeration itself is then timed directly (full run only)
so the budget can be read against what it would cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from absorb.experiments.depth_injective import dyadic_block
from absorb.stacks import decide_stack
from absorb.stacks.kinks import MAX_SECTORS, predicted_sectors
from absorb.stacks.pieces import MAX_POINTS, analyse_depth_two, predicted_points
from tables import Table, section_main


def _once(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _predicted(d: int, widths: list[int]) -> tuple[int, int]:
    if d == 2:
        return predicted_sectors(widths), MAX_SECTORS
    return predicted_points(d, widths[0], widths[1]), MAX_POINTS


def stack_table(quick: bool) -> Table:
    rng = np.random.default_rng(26)
    cases: list[tuple[int, list[int]]] = [(2, [4, 4]), (2, [4, 4, 4]), (2, [6, 6]), (3, [6, 6])]
    if not quick:
        cases += [(2, [4, 4, 4, 4]), (3, [6, 3]), (4, [8, 8]), (4, [8, 1])]
    rows = []
    for d, widths in cases:
        stack = [dyadic_block(rng, d, n, 1.0) for n in widths]
        predicted, budget = _predicted(d, widths)
        seconds, verdict = _once(lambda s=stack: decide_stack(s, rng=rng, fit=False))
        within = predicted <= budget
        direct = "—"
        if not within and not quick and len(widths) == 2:
            t, _ = _once(lambda s=stack: analyse_depth_two(s))
            direct = f"{t:.3g}"
        rows.append([str(d), str(widths), str(predicted), "yes" if within else "refused",
                     f"{seconds:.3g}", f"{1e6 * seconds / predicted:.3g}", direct,
                     f"{verdict['verdict']} ({verdict['theorem']})"])
    return Table("Exact stack decisions against their predicted cost",
                 ["d", "widths", "predicted", "within budget", "decide (s)",
                  "µs per predicted unit", "enumeration alone (s)", "verdict"], rows,
                 [f"predicted: sectors (d = 2, budget {MAX_SECTORS}) or candidate points "
                  f"(d ≥ 3, depth 2, budget {MAX_POINTS}); an upper bound, the enumeration "
                  "visits fewer",
                  "decide: absorb.stacks.decide_stack without the search (index sets, image "
                  "cone, injectivity tests, then the kink enumeration when within budget)",
                  "enumeration alone: absorb.stacks.pieces.analyse_depth_two timed past the "
                  "budget (full run only)"])


def main(argv: list[str] | None = None) -> int:
    return section_main(__doc__ or "", stack_table, argv)


if __name__ == "__main__":
    raise SystemExit(main())
