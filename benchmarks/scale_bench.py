"""LLM-scale ``absorb inspect``: one d = 4096, n = 16384 layer (Pythia-6.9B / GPT-J size).

    python benchmarks/scale_bench.py            # bfloat16 and float32, d = 4096, n = 16384
    python benchmarks/scale_bench.py --quick    # d = 1024, n = 4096
    python benchmarks/scale_bench.py --devices  # dense phases: numpy, torch CPU, CUDA, H200
    python benchmarks/scale_bench.py --scan     # an 8-layer model: serial, 2 workers, Dask

A random GPT-NeoX-layout layer (biases, GELU, config.json) is written to a temporary
safetensors file and certified by ``inspect`` in a fresh process, so that its peak resident
memory (``getrusage``) is the inspection's alone. Printed beside each run:

* the time the machine's measured float64 GEMM rate allows for the work, counted as the
  Gram products (2 n²d flops each, two of them) plus the Cholesky factorization (n³/3);
* the peak memory ``inspect`` predicted before reading the layer, and the measured one.

Also a section of ``benchmarks/run.py`` (``bench_scale``).

``--devices`` times the certificate's dense phases (the Gram matrix and its Cholesky factor)
on each available device side by side, and prints the time an H200-class GPU would take,
predicted from NVIDIA's published rates (marked as predicted: no such GPU here).
``--scan`` scans an 8-layer checkpoint serially, on 2 local workers and on a 2-worker Dask
LocalCluster, checks that the verdicts agree, and prints each run's predicted and measured time.
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
from absorb.checkpoints import matmul_rate
from absorb.checkpoints.writing import save_bf16
from absorb.scan.inspect import inspect_checkpoint

FULL, QUICK = (4096, 16384), (1024, 4096)
# GEMM side for the machine's rate: large enough to run at the BLAS's full speed.
RATE_SIZE = 2048
PREFIX = "gpt_neox.layers.0.mlp."


def work_flops(d: int, n: int) -> float:
    """Gram products (2 n²d each, two of them) plus the factorization (n³/3)."""
    return 2 * 2.0 * n * n * d + n**3 / 3.0


def write_layer(folder: Path, d: int, n: int, dtype: str, seed: int = 0,
                planted: bool = False) -> None:
    """One GPT-NeoX MLP layer at the usual fan-in scale, with biases, and its config.json;
    ``planted``: W_down[:,S] for S = the first d units solved for in float64 so that
    W_down[:,S] W_up[S,:] = −I before the weights are rounded to ``dtype`` (absorbable up to
    rounding)."""
    rng = np.random.default_rng(seed)
    W_up = rng.standard_normal((n, d)) / np.sqrt(d)
    W_down = rng.standard_normal((d, n)) / np.sqrt(n)
    if planted:
        W_down[:, :d] = (-np.eye(d) - W_down[:, d:2 * d] @ W_up[d:2 * d]) \
            @ np.linalg.inv(W_up[:d])
    tensors = {
        PREFIX + "dense_h_to_4h.weight": W_up,
        PREFIX + "dense_h_to_4h.bias": 0.1 * rng.standard_normal(n),
        PREFIX + "dense_4h_to_h.weight": W_down,
        PREFIX + "dense_4h_to_h.bias": 0.1 * rng.standard_normal(d),
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
        proc = subprocess.Popen([sys.executable, "-X", "faulthandler", __file__, "--child", tmp],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        if proc.returncode != 0:
            # a crash's Python stack (faulthandler) comes before its list of extension modules
            trace = err.split("\nExtension modules:")[0].strip()
            raise RuntimeError(f"inspect failed ({proc.returncode}): {trace[-2000:]}")
    res: dict[str, Any] = json.loads(out)
    return res


def bench_scale(quick: bool) -> Any:
    """The section of benchmarks/run.py: bfloat16 and float32 runs beside the GEMM bound."""
    from tables import Table  # benchmarks/tables.py, on the path when either script runs

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


#: NVIDIA H200 SXM, published: FP64 Tensor Core 67 TFLOP/s; PCIe Gen5 host link 128 GB/s
#: both ways, so 64 GB/s each way.
H200_FP64 = 67e12
H200_HOST_LINK = 64e9


def bench_devices(quick: bool) -> Any:
    """The dense phases (G = (W_downᵀW_down) ⊙ (W_up W_upᵀ), Cholesky of G) per device."""
    import scipy.linalg as sla

    from absorb.certificates import gram
    from absorb.certificates.devices import FACTORIZATION_THREADS, cholesky, using_device
    from tables import Table  # benchmarks/tables.py, on the path when either script runs

    d, n = (512, 2048) if quick else (1024, 4096)
    rng = np.random.default_rng(0)
    W_up = rng.standard_normal((n, d)) / np.sqrt(d)
    W_down = rng.standard_normal((d, n)) / np.sqrt(n)
    flops = 2 * 2.0 * n * n * d + n**3 / 3.0
    table = Table(f"Certificate dense phases per device, d = {d}, n = {n} (float64)",
                  ["device", "Gram (s)", "Cholesky (s)", "total (s)", "max abs(G - G numpy)"])
    t0 = time.perf_counter()
    G_ref = gram(W_up, W_down)
    t_gram = time.perf_counter() - t0
    t0 = time.perf_counter()
    sla.lapack.dpotrf(G_ref.copy().T, lower=1, clean=0, overwrite_a=1)
    t_default = time.perf_counter() - t0
    table.rows.append(["cpu (numpy, LAPACK with the default BLAS threads)", f"{t_gram:.2f}",
                       f"{t_default:.2f}", f"{t_gram + t_default:.2f}", "0"])
    t0 = time.perf_counter()
    cholesky(G_ref.copy())
    t_chol = time.perf_counter() - t0
    table.rows.append([f"cpu (numpy, Cholesky threads: {FACTORIZATION_THREADS})",
                       f"{t_gram:.2f}", f"{t_chol:.2f}", f"{t_gram + t_chol:.2f}", "0"])
    try:
        import torch
    except ImportError:
        torch = None
    for device in ("cpu-torch", "cuda"):
        if torch is None or (device == "cuda" and not torch.cuda.is_available()):
            continue
        with using_device(device):
            t0 = time.perf_counter()
            G = gram(W_up, W_down)
            t_gram = time.perf_counter() - t0
            t0 = time.perf_counter()
            cholesky(G)
            t_chol = time.perf_counter() - t0
        table.rows.append([device, f"{t_gram:.2f}", f"{t_chol:.2f}", f"{t_gram + t_chol:.2f}",
                           f"{np.max(np.abs(G - G_ref)):.1e}"])
    moved = 8.0 * (2 * n * d + 3 * n * n)  # weights up; G down, up again; L down
    for dd, nn in ((d, n), (4096, 16384), (8192, 32768)):
        fl = 2 * 2.0 * nn * nn * dd + nn**3 / 3.0
        by = 8.0 * (2 * nn * dd + 3 * nn * nn)
        table.rows.append([f"H200 PREDICTED d={dd} n={nn}", "-", "-",
                           f"{fl / H200_FP64 + by / H200_HOST_LINK:.3g}", "-"])
    table.notes += [
        f"work 2·(2n²d) + n³/3 = {flops:.3g} flops; measured in one run on this machine",
        "H200 rows are PREDICTED, not measured: the same work at the published FP64 Tensor "
        f"Core rate ({H200_FP64 / 1e12:.0f} TFLOP/s) plus the host transfers of this "
        f"implementation (weights up, G down and up, L down: 8·(2nd + 3n²) bytes, "
        f"{moved / 1e9:.2f} GB here) at {H200_HOST_LINK / 1e9:.0f} GB/s; the phases left on "
        "the CPU (the residual and the certificate's rigorous check, about 8nd² flops) are "
        "not included",
    ]
    return table


def bench_scan(quick: bool, warm_up: bool = False, size: tuple[int, int] | None = None) -> Any:
    """An 8-layer GPT-NeoX checkpoint scanned serially, on 2 local workers, on Dask
    (``warm_up``: after one scan that is not reported, which pays the imports and the GEMM
    rate's measurement; ``size``: (d, n) of its layers)."""
    import distributed

    from tables import Table  # benchmarks/tables.py, on the path when either script runs

    d, n = size or ((128, 512) if quick else (256, 1024))
    layers = 8
    rng = np.random.default_rng(0)
    tensors: dict[str, np.ndarray] = {}
    for i in range(layers):
        p = f"gpt_neox.layers.{i}.mlp."
        tensors[p + "dense_h_to_4h.weight"] = rng.standard_normal((n, d)) / np.sqrt(d)
        tensors[p + "dense_h_to_4h.bias"] = 0.1 * rng.standard_normal(n)
        tensors[p + "dense_4h_to_h.weight"] = rng.standard_normal((d, n)) / np.sqrt(n)
        tensors[p + "dense_4h_to_h.bias"] = 0.1 * rng.standard_normal(d)
    table = Table(f"Model scan, {layers} GELU layers of d = {d}, n = {n} "
                  "(`scale_bench.py --scan`)",
                  ["runner", "verdicts", "predicted (s)", "measured (s)", "measured / predicted",
                   "same as serial"])
    with tempfile.TemporaryDirectory(prefix="absorb-scan-") as tmp:
        save_file({k: v.astype(np.float32) for k, v in tensors.items()},
                  str(Path(tmp) / "model.safetensors"))
        (Path(tmp) / "config.json").write_text(json.dumps(
            {"model_type": "gpt_neox", "hidden_act": "gelu", "hidden_size": d,
             "intermediate_size": n}))

        def run(label: str, **kw: Any) -> list[Any]:
            t0 = time.perf_counter()
            res = inspect_checkpoint(tmp, **kw)
            took = time.perf_counter() - t0
            rows = [(r["verdict"], r.get("certificate", {}).get("distance"))
                    for r in res["layers"]]  # type: ignore[attr-defined]
            plan = res["scan"]["plan"]  # type: ignore[index]
            table.rows.append([label, ", ".join(sorted({v for v, _ in rows})),
                               f"{plan['predicted_seconds']:.2f}", f"{took:.2f}",
                               f"{took / plan['predicted_seconds']:.2f}",
                               "yes" if not serial or rows == serial[0] else "NO"])
            return rows

        serial: list[Any] = []
        if warm_up:
            inspect_checkpoint(tmp)
        serial.append(run("serial" if warm_up else "serial (first in the process)"))
        run("2 local workers", workers=2)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                      dashboard_address=None) as cluster:
            run("Dask LocalCluster, 2 workers", scheduler=cluster.scheduler_address)
        cache = Path(tmp) / "cache"
        run("serial, filling a cache", cache_dir=cache)
        run("serial, all from the cache", cache_dir=cache)
    table.notes += [
        "measured end to end in this process, including the digests (each layer's stored "
        "bytes hashed once) and, for the pool and Dask, starting the worker processes",
        "predicted: the scan plan's time (cost model at the GEMM rate measured in this "
        "process, layers spread over the workers longest first, worker start-up included)",
    ]
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=f"d = {QUICK[0]}, n = {QUICK[1]}")
    ap.add_argument("--devices", action="store_true", help="the dense phases per device")
    ap.add_argument("--scan", action="store_true", help="a model scan per runner")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.devices or args.scan:
        for table in ([bench_devices(args.quick)] if args.devices else []) + (
                [bench_scan(args.quick)] if args.scan else []):
            print(table.text(), flush=True)
            print(table.markdown())
        return 0
    print(bench_scale(args.quick).text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
