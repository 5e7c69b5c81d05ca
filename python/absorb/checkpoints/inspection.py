"""Inspection, layer by layer: each MLP layer's block, its predicted cost, its row of the
result, and the summary table of a whole inspection (its other text, JSON and exit code are
:class:`absorb.scan.inspect.Inspection`'s).

Before a layer is read, its peak memory and work are predicted from (d, n) alone — the
float relaxation's cost (``certificates.relaxation_cost``) for ungated odd-part-linear
blocks, the weights and one spectral-norm SVD per matrix for the others — and a layer that
would not fit in the available memory is refused with the memory it needs. The time is
predicted from the machine's float64 matmul rate, measured once per run. The layers run
through :mod:`absorb.scan` (serially, on local processes or on Dask, with a result cache).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from absorb.activations import Activation
from absorb.blocks import Block
from absorb.budget import FLOAT_BYTES, Cost, human_seconds
from absorb.certificates import relaxation_cost
from absorb.checkpoints.architectures import Layout
from absorb.checkpoints.detection import LayerSpec, Plan
from absorb.checkpoints.reading import DTYPE_BYTES, Checkpoint
from absorb.formats import coarsest
from absorb.theory.index_sets import decision_cost

# Side of the square float64 GEMM timed for the machine's matmul rate (about 2 GFLOP).
RATE_SIZE = 1024
#: Seconds of every layer that are not arithmetic: opening the checkpoint in the task, its
#: hypotheses, verdict and JSON, Python (measured: a whole d = 16, n = 64 layer in 2.6 ms).
LAYER_OVERHEAD_SECONDS = 0.003
#: Seconds per weight of the passes over the stored tensors (digest, widening to float64,
#: storage-format detection; measured about 10 ns per weight).
SECONDS_PER_WEIGHT = 1e-8


@functools.cache
def matmul_rate(size: int = RATE_SIZE, repeats: int = 5) -> float:
    """Measured float64 GEMM throughput (flop/s): best of ``repeats`` size×size products.

    Measured once per process and size (the machine's rate, not the moment's load).
    """
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((size, size)), rng.standard_normal((size, size))
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * size**3 / max(best, 1e-9)


def layer_cost(spec: LayerSpec, activation: Activation) -> Cost:
    """Predicted peak bytes, flops and overhead of reading one layer and deciding it.

    Reading holds the stored tensor and its float64 copy (plus the transpose of a Conv1D
    weight); the float relaxation (odd-part-linear, ungated) costs ``relaxation_cost`` and
    the rest of the decision ``theory.index_sets.decision_cost`` (the storage tolerance, and
    the repair branch of a layer absorbable up to rounding); a gated block's linearization
    witness takes the spectral norm of each weight (an SVD, about 4nd² flops and one n×d copy
    each). Every layer adds :data:`LAYER_OVERHEAD_SECONDS` and :data:`SECONDS_PER_WEIGHT`
    per stored weight.
    """
    d, n = spec.d, spec.n
    mats = 3 if activation.gated else 2
    stored = max(DTYPE_BYTES.get(dt, FLOAT_BYTES) for dt in spec.dtype.split("/"))
    read = Cost(FLOAT_BYTES * mats * n * d + (stored + FLOAT_BYTES) * n * d, 0.0,
                LAYER_OVERHEAD_SECONDS + SECONDS_PER_WEIGHT * mats * n * d)
    if activation.odd_part_linear and not activation.gated:
        return read + relaxation_cost(d, n) + decision_cost(d, n)
    svd = Cost(FLOAT_BYTES * (mats + 1) * n * d, 4.0 * mats * n * d * min(n, d))
    return read + svd


def load_block(ckpt: Checkpoint, keys: Mapping[str, str], layout: Layout,
               activation: Activation) -> Block:
    """The Block of one layer's tensors (``keys``: role → tensor name, biases where present),
    float64 in the nn.Linear orientation (Conv1D weights transposed), with the storage format
    the headers name (the coarsest of W_up's and W_down's)."""
    def weight(role: str) -> Any:
        w = ckpt.tensor(keys[role])
        return np.ascontiguousarray(w.T) if layout == "conv1d" else w

    def bias(role: str) -> Any:
        key = keys.get(f"{role}_bias")
        return None if key is None else ckpt.tensor(key)

    gate = weight("gate") if "gate" in keys else None
    return Block(activation, weight("up"), weight("down"), gate,
                 b_up=bias("up"), b_down=bias("down"),
                 dtype=coarsest([ckpt.format(keys["up"]), ckpt.format(keys["down"])]))


def load_layer(ckpt: Checkpoint, spec: LayerSpec, plan: Plan) -> Block:
    """The layer's Block as ``inspect`` decides it."""
    return load_block(ckpt, spec.keys, plan.layout, plan.activation)


def layer_row(spec: LayerSpec, verdict: Mapping[str, object], cost: Cost, rate: float,
              seconds: float, cached: bool) -> dict[str, object]:
    """One layer's entry of ``layers``: where it is, its ``check`` object, predicted and
    measured cost (``cached``: the result came from the scan's cache, ``seconds`` being the
    time it took when it was computed)."""
    return {"layer": spec.layer, "stack": spec.stack, "label": spec.label, "keys": spec.keys,
            "dtype": spec.dtype, **verdict,
            "cost": {"predicted_peak_bytes": cost.bytes, "predicted_flops": cost.flops,
                     "predicted_seconds": cost.at(rate), "seconds": seconds,
                     "cached": cached}}


def _fmt(value: object, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec) if isinstance(value, float) \
        else str(value)


def summary_rows(res: Mapping[str, Any]) -> list[list[str]]:
    """The summary table: layer, d, n, verdict, distance (a proven lower bound, over every S,
    of ‖W_down[:,S] W_up[S,:] + A‖_F/‖A‖_F), margin, time."""
    rows = [["layer", "d", "n", "verdict", "distance >=", "margin", "time"]]
    for row in res["layers"]:
        cert = row.get("certificate") or {}
        dual = cert.get("dual") or {}
        rows.append([row["label"], str(row["d"]), str(row["n"]), row["verdict"],
                     _fmt(cert.get("distance")), _fmt(dual.get("margin_float")),
                     human_seconds(row["cost"]["seconds"])])
    return rows
