"""LLM-scale ``absorb inspect``: one d = 4096, n = 16384 layer (Pythia-6.9B / GPT-J size).

    python benchmarks/scale_bench.py            # bfloat16 and float32, d = 4096, n = 16384
    python benchmarks/scale_bench.py --quick    # d = 1024, n = 4096

A random GPT-NeoX-layout layer (biases, GELU, config.json) is written to a temporary
safetensors file and certified by ``inspect`` in a fresh process, so that its peak resident
memory (``getrusage``) is the inspection's alone. Printed beside each run:

* the time the machine's measured float64 GEMM rate allows for the work, counted as the
  Gram products (2 n²d flops each, two of them) plus the Cholesky factorization (n³/3);
* the peak memory ``inspect`` predicted before reading the layer, and the measured one.

Also a section of ``benchmarks/run.py`` (``bench_scale``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

from absorb.budget import human_bytes
from absorb.checkpoints import inspect_checkpoint, matmul_rate
from absorb.checkpoints.writing import save_bf16

FULL, QUICK = (4096, 16384), (1024, 4096)
# GEMM side for the machine's rate: large enough to run at the BLAS's full speed.
RATE_SIZE = 2048
PREFIX = "gpt_neox.layers.0.mlp."


def work_flops(d: int, n: int) -> float:
    """Gram products (2 n²d each, two of them) plus the factorization (n³/3)."""
    return 2 * 2.0 * n * n * d + n**3 / 3.0


def write_layer(folder: Path, d: int, n: int, dtype: str, seed: int = 0) -> None:
    """One GPT-NeoX MLP layer at the usual fan-in scale, with biases, and its config.json."""
    rng = np.random.default_rng(seed)
    # the float64 scalar np.sqrt(d) widens a float32 array: cast back before saving
    tensors = {
        PREFIX + "dense_h_to_4h.weight": rng.standard_normal((n, d), np.float32) / np.sqrt(d),
        PREFIX + "dense_h_to_4h.bias": 0.1 * rng.standard_normal(n, np.float32),
        PREFIX + "dense_4h_to_h.weight": rng.standard_normal((d, n), np.float32) / np.sqrt(n),
        PREFIX + "dense_4h_to_h.bias": 0.1 * rng.standard_normal(d, np.float32),
    }
    tensors = {k: v.astype(np.float32) for k, v in tensors.items()}
    if dtype == "bfloat16":
        save_bf16(tensors, folder / "model.safetensors")
    else:
        save_file(tensors, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": d,
         "intermediate_size": n, "num_hidden_layers": 1, "torch_dtype": dtype}))


def child(folder: str) -> None:
    """Inspect the layer in this process; print the few numbers the parent needs."""
    t0 = time.perf_counter()
    res = inspect_checkpoint(folder)
    total = time.perf_counter() - t0
    (row,) = res["layers"]  # type: ignore[misc]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    print(json.dumps({"verdict": row["verdict"], "theorem": row["theorem"], "d": row["d"],
                      "n": row["n"], "dtype": row["dtype"], "total_seconds": total,
                      "peak_rss_bytes": peak, **row["cost"]}))


def measure(d: int, n: int, dtype: str) -> dict[str, Any]:
    """Write the layer, inspect it in a child process, return its numbers and peak RSS."""
    with tempfile.TemporaryDirectory(prefix="absorb-scale-") as tmp:
        write_layer(Path(tmp), d, n, dtype)
        proc = subprocess.Popen([sys.executable, __file__, "--child", tmp],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"inspect failed ({proc.returncode}): {err.strip()[-500:]}")
    res: dict[str, Any] = json.loads(out)
    return res


def bench_scale(quick: bool) -> Any:
    """The section of benchmarks/run.py: bfloat16 and float32 runs beside the GEMM bound."""
    from run import Table  # benchmarks/run.py, on the path when either script runs

    d, n = QUICK if quick else FULL
    rate = matmul_rate(RATE_SIZE)
    bound = work_flops(d, n) / rate
    table = Table(f"LLM-scale inspect: one GPT-NeoX layer, d = {d}, n = {n}",
                  ["weights", "verdict", "inspect (s)", "GEMM-rate time (s)", "ratio",
                   "predicted peak", "measured peak RSS"])
    for dtype in ("bfloat16", "float32"):
        r = measure(d, n, dtype)
        print(f"{dtype}: {json.dumps(r)}", file=sys.stderr, flush=True)  # kept if interrupted
        table.rows.append([dtype, r["verdict"], f"{r['seconds']:.1f}", f"{bound:.1f}",
                           f"{r['seconds'] / bound:.2f}", human_bytes(r["predicted_peak_bytes"]),
                           human_bytes(r["peak_rss_bytes"])])
    table.notes += [
        f"float64 GEMM rate measured in this run ({RATE_SIZE}x{RATE_SIZE}): {rate / 1e9:.1f} "
        f"GFLOP/s; the work counted is 2·(2n²d) + n³/3 = {work_flops(d, n):.3g} flops",
        "inspect time: reading the layer (memory-mapped, widened to float64) and deciding it "
        "(relaxation, dual certificate, verdict), in a fresh process; the peak RSS is that "
        "process's (getrusage, Python and numpy included), the predicted peak what inspect "
        "required before reading the layer",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"d = {QUICK[0]}, n = {QUICK[1]}")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    print(bench_scale(args.quick).text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
