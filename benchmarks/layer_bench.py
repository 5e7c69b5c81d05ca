"""Any layer at GEMM speed: whole planted and random layers beside their prediction and bound.

    python benchmarks/layer_bench.py            # d = 1024 and 2048 (n = 4d), 3 pairs each
    python benchmarks/layer_bench.py --quick    # d = 256 and 512, 2 pairs each
    python benchmarks/layer_bench.py --repeat 5 # more pairs (min and median are printed)

Three tables, every ratio measured in the same run:

1. one float32 GPT-NeoX layer (GELU, biases) at a time, random (``not_absorbed``) and planted
   (an index set S of d units solved for in float64, then rounded to float32:
   ``absorbable_up_to_rounding``), alternately, each ``absorb inspect``-ed in a fresh process:
   the whole layer as a scan times it (reading the tensors, ``decide``, its JSON), the time
   the scan predicted for it (``inspection.layer_cost`` at the GEMM rate the process
   measured) and its GEMM bound — the dense work its decision does (:func:`bound_flops`),
   timed as float64 GEMMs in the same process right after the layer;
2. a scan's plan against its run: 8 small layers serially, on 2 local workers and on a
   2-worker Dask LocalCluster (after one unreported warm-up scan: imports, the GEMM rate);
3. the exact check of an index set (``absorb.exact.product_equals``) against one float64
   GEMM of the same size (``exact_bench.check_table``), pairs interleaved.

Also a section of ``benchmarks/run.py`` (``bench_layers``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from absorb.theory.construction import CHECK_POINTS
from exact_bench import Section, check_table
from scale_bench import bench_scan, work_flops, write_layer
from tables import Table

FULL, QUICK = (1024, 2048), (256, 512)


def bound_flops(d: int, n: int, planted: bool) -> float:
    """The dense work a layer's decision does, in flops (true counts, no efficiency factor):
    the Gram products and the Cholesky factorization (``scale_bench.work_flops``), the
    residual matrix, the certificate check and the storage tolerance (d×n×d products, 6nd²);
    for a planted layer also the repair (its three d×d×d products, 6d³, and the normal
    equations with their Cholesky, solves and refinement, 37d³/3), the exact and tolerance
    checks of S (three d×d×d products, 6d³) and the construction check (f and h at
    CHECK_POINTS inputs per scale, three scales, 24·P·n·d)."""
    base = work_flops(d, n) + 6.0 * n * d * d
    if not planted:
        return base
    dd = float(d)
    return base + 6 * dd**3 + 37 * dd**3 / 3 + 6 * dd**3 + 24.0 * CHECK_POINTS * n * d


#: Side of the square float64 GEMMs that time a layer's bound (as ``matmul_rate``'s).
BOUND_GEMM = 1024


def gemm_seconds(flops: float) -> float:
    """Wall time of float64 GEMMs of side BOUND_GEMM adding up to ``flops``, run now: the
    GEMM bound measured under the same load as the layer just before it."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((BOUND_GEMM, BOUND_GEMM)), rng.standard_normal((BOUND_GEMM,
                                                                                 BOUND_GEMM))
    count = max(1, round(flops / (2.0 * BOUND_GEMM**3)))
    a @ b  # warm-up: thread pool and page faults
    t0 = time.perf_counter()
    for _ in range(count):
        a @ b
    return (time.perf_counter() - t0) * flops / (count * 2.0 * BOUND_GEMM**3)


def child(folder: str, planted: bool) -> None:
    """Inspect the one layer in ``folder`` in this (fresh) process, then time its GEMM bound
    as GEMMs; print the numbers."""
    from absorb.scan.inspect import inspect_checkpoint

    res = inspect_checkpoint(folder)
    (row,) = res["layers"]  # type: ignore[misc]
    bound = gemm_seconds(bound_flops(row["d"], row["n"], planted))
    print(json.dumps({"verdict": row["verdict"], "rate": res["matmul_rate"],
                      "seconds": row["cost"]["seconds"],
                      "predicted": row["cost"]["predicted_seconds"], "bound": bound}))


def measure(folder: Path, planted: bool) -> dict[str, Any]:
    """One layer inspected in a fresh process (its GEMM rate is measured there), and its
    GEMM bound timed right after it."""
    out = subprocess.run([sys.executable, "-X", "faulthandler", __file__, "--child",
                          str(folder)] + (["--planted"] if planted else []),
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"inspect failed ({out.returncode}): {out.stderr[-2000:]}")
    res: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f}"


def layer_table(quick: bool, repeat: int) -> Table:
    """Random and planted layers alternately, each pair side by side."""
    table = Table("Whole layer: planted and random float32 layers against their prediction "
                  "and the GEMM bound",
                  ["d×n", "layer", "verdict", "measured (s), min / median",
                   "predicted (s)", "GEMM bound (s)", "measured / predicted, min / median",
                   "measured / bound, min / median", "planted / random, min / median"])
    load = [os.getloadavg()[0]]
    for d in QUICK if quick else FULL:
        n = 4 * d
        runs: dict[str, list[dict[str, Any]]] = {"random": [], "planted": []}
        with tempfile.TemporaryDirectory(prefix="absorb-layer-") as tmp:
            for kind in runs:
                (Path(tmp) / kind).mkdir()
                write_layer(Path(tmp) / kind, d, n, "float32", planted=kind == "planted")
            for _ in range(repeat):
                for kind in runs:
                    r = measure(Path(tmp) / kind, kind == "planted")
                    runs[kind].append(r)
                    print(f"{d}x{n} {kind}: {json.dumps(r)}", file=sys.stderr, flush=True)
        load.append(os.getloadavg()[0])
        pairs = [p["seconds"] / r["seconds"] for p, r in
                 zip(runs["planted"], runs["random"], strict=True)]
        for kind, rs in runs.items():
            table.rows.append([
                f"{d}×{n}", kind, ", ".join(sorted({r["verdict"] for r in rs})),
                _spread([r["seconds"] for r in rs]),
                f"{statistics.median(r['predicted'] for r in rs):.2f}",
                f"{statistics.median(r['bound'] for r in rs):.2f}",
                _spread([r["seconds"] / r["predicted"] for r in rs]),
                _spread([r["seconds"] / r["bound"] for r in rs]),
                _spread(pairs) if kind == "planted" else "—"])
    table.notes += [
        f"{repeat} runs of each layer, random and planted alternately, each in a fresh process "
        "(`absorb inspect` of a one-layer GPT-NeoX checkpoint: GELU, biases, float32, "
        "n = 4d); every ratio is taken within one run (a layer against its prediction and "
        "its bound in its own process, a planted run against the random run just before it), "
        "and the minimum and median over the runs are given",
        "measured: the scan's time for the layer (reading its tensors, deciding it, its JSON); "
        "predicted: the time the scan predicted before reading it (inspection.layer_cost at "
        "the measured GEMM rate: relaxation, storage tolerance, the repair branch of a layer "
        "absorbable up to rounding, overhead); GEMM bound: the dense work of the layer's "
        f"decision as float64 GEMMs of side {BOUND_GEMM}, timed in the same process right "
        "after the layer (so under the same load), true flop counts — Gram products and "
        "Cholesky 2·(2n²d) + n³/3, residual, certificate check and storage tolerance 6nd², "
        "and for a planted layer the repair (6d³ + 37d³/3), the checks of S (6d³) and the "
        f"construction check (24·{CHECK_POINTS}·nd)",
        "planted: W_down[:,S] for S = the first d units solved for in float64 so that "
        "W_down[:,S]W_up[S,:] = −I, then every weight rounded to float32 (the set holds up to "
        "rounding only; the repair and the construction check run)",
        "load average (1 min) at the start and after each size: "
        + ", ".join(f"{v:.1f}" for v in load) + " (2 cores shared with other jobs)",
    ]
    return table


def check_section() -> Table:
    """The exact check against one GEMM at d = 512 (and 1024)."""
    header, rows, notes = check_table(quick=True)
    return Table("Exact check of an index set against one float64 GEMM (pairs interleaved)",
                 header, rows, notes)


def bench_layers(quick: bool, repeat: int = 3) -> Section:
    """The three tables as one section of benchmarks/run.py."""
    small, large = ((32, 128), (128, 512)) if quick else ((64, 256), (256, 1024))
    return Section([layer_table(quick, repeat), bench_scan(quick, True, small),
                    bench_scan(quick, True, large), check_section()])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="d = 256 and 512")
    ap.add_argument("--repeat", type=int, default=None, help="pairs per size (3; quick: 2)")
    ap.add_argument("--markdown", type=Path, help="also write the section's markdown here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--planted", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, args.planted)
        return 0
    t0 = time.perf_counter()
    section = bench_layers(args.quick, args.repeat or (2 if args.quick else 3))
    print(section.text())
    print(f"total {time.perf_counter() - t0:.0f} s")
    if args.markdown is not None:
        args.markdown.write_text(section.markdown(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
