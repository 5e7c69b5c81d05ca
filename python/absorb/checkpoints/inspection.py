"""Inspection: ``decide`` on every MLP layer of a checkpoint, and its text output.

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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from absorb.activations import Activation
from absorb.blocks import Block
from absorb.budget import FLOAT_BYTES, Cost, human_bytes, human_seconds
from absorb.certificates import relaxation_cost
from absorb.checkpoints.architectures import Layout
from absorb.checkpoints.detection import LayerSpec, Plan, detect, explicit_plan
from absorb.checkpoints.reading import DTYPE_BYTES, Checkpoint
from absorb.errors import AbsorbError
from absorb.theory import check_tol

NOTE = ("each verdict concerns the abstract block x + MLP(x) with the stored MLP weights "
        "(as in the paper); the real layers also hold a LayerNorm (and attention) that the "
        "verdict does not model")
# Side of the square float64 GEMM timed for the machine's matmul rate (about 2 GFLOP).
RATE_SIZE = 1024


@functools.cache
def matmul_rate(size: int = RATE_SIZE, repeats: int = 3) -> float:
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
    """Predicted peak bytes and flops of reading one layer and deciding it.

    Reading holds the stored tensor and its float64 copy (plus the transpose of a Conv1D
    weight); the float relaxation (odd-part-linear, ungated) costs ``relaxation_cost``; a
    gated block's linearization witness takes the spectral norm of each weight (an SVD,
    about 4nd² flops and one n×d copy each).
    """
    d, n = spec.d, spec.n
    mats = 3 if activation.gated else 2
    stored = max(DTYPE_BYTES.get(dt, FLOAT_BYTES) for dt in spec.dtype.split("/"))
    read = Cost(FLOAT_BYTES * mats * n * d + (stored + FLOAT_BYTES) * n * d, 0.0)
    if activation.odd_part_linear and not activation.gated:
        return read + relaxation_cost(d, n)
    svd = Cost(FLOAT_BYTES * (mats + 1) * n * d, 4.0 * mats * n * d * min(n, d))
    return read + svd


def load_block(ckpt: Checkpoint, keys: Mapping[str, str], layout: Layout,
               activation: Activation) -> Block:
    """The Block of one layer's tensors (``keys``: role → tensor name, biases where present),
    float64 in the nn.Linear orientation (Conv1D weights transposed)."""
    def weight(role: str) -> Any:
        w = ckpt.tensor(keys[role])
        return np.ascontiguousarray(w.T) if layout == "conv1d" else w

    def bias(role: str) -> Any:
        key = keys.get(f"{role}_bias")
        return None if key is None else ckpt.tensor(key)

    gate = weight("gate") if "gate" in keys else None
    return Block(activation, weight("up"), weight("down"), gate,
                 b_up=bias("up"), b_down=bias("down"))


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
                     "predicted_seconds": cost.flops / rate, "seconds": seconds,
                     "cached": cached}}


def inspect_checkpoint(
    path: str | Path,
    *,
    arch: str | None = None,
    up: str | None = None,
    down: str | None = None,
    gate: str | None = None,
    activation: str | None = None,
    search: bool = False,
    tol: float | None = None,
    seed: int = 0,
    progress: bool = False,
    memory: int | None = None,
    keep_certificates: bool = True,
    workers: int = 1,
    scheduler: str | None = None,
    cache_dir: str | Path | None = None,
    device: str = "cpu",
    on_layer: Callable[[dict[str, object]], None] | None = None,
    prepare: Callable[[], None] | None = None,
) -> dict[str, object]:
    """``decide`` for every MLP layer of the checkpoint at ``path`` (a file, a folder, an
    index, or a Hugging Face model id ``org/name[@revision]`` from the Hub cache).

    The layout is detected (``arch`` overrides it), or given as explicit ``up``/``down``
    (/``gate``) key patterns with ``activation``; ``activation`` alone overrides the detected
    one. ``search`` attaches the numerical search to ``undetermined`` layers (slow); ``tol``
    overrides the storage tolerance of ``decide`` (default: from the stored dtype); each
    layer's random generator comes from ``seed`` and the layer's content digest.
    ``memory`` replaces the available memory (bytes) in the up-front plan (tests).
    ``keep_certificates=False`` drops each layer's certificate matrix Y once the layer is
    decided (its margin and how it was verified stay): text output never shows Y, and kept
    matrices cost d² floats per layer, which the plan counts.
    ``workers``/``scheduler`` run the layers in parallel (local processes / Dask), ``cache_dir``
    keeps each layer's result for a later run, ``device`` runs the certificate's dense phases
    on torch, ``on_layer`` receives each layer's entry as soon as it is decided, ``prepare``
    is called before the cache's first write (:mod:`absorb.scan`).
    """
    from absorb.certificates.devices import check_device
    from absorb.checkpoints.hub import resolve_checkpoint
    from absorb.scan.driver import scan_layers

    check_tol(tol)  # before any layer is read
    if (up is None) != (down is None) or (gate is not None and up is None):
        raise AbsorbError("give both --up and --down (and --gate for a gated activation)")
    if up is not None and arch is not None:
        raise AbsorbError("--arch and --up/--down exclude each other")
    if up is not None and activation is None:
        raise AbsorbError("--up/--down patterns need --activation")
    check_device(device)
    local = resolve_checkpoint(str(path))
    with Checkpoint(local) as ckpt:
        if up is not None and down is not None and activation is not None:
            plan = explicit_plan(ckpt, up=up, down=down, gate=gate, activation=activation)
        else:
            plan = detect(ckpt, arch=arch, activation=activation)
        rate = matmul_rate()
        specs = list(plan.specs(ckpt))
        layers, scan = scan_layers(
            str(path), local, ckpt, plan, specs, rate=rate, seed=seed, search=search, tol=tol,
            device=device, workers=workers, scheduler=scheduler, cache_dir=cache_dir,
            keep_certificates=keep_certificates, memory=memory, progress=progress,
            on_layer=on_layer, prepare=prepare)
        files = [str(f) for f in ckpt.files]
    return {"checkpoint": str(path), "files": files, **plan.to_json(),
            "matmul_rate": rate, "note": NOTE, "scan": scan, "layers": layers}


def _fmt(value: object, spec: str = ".3g") -> str:
    return "-" if value is None else format(value, spec) if isinstance(value, float) \
        else str(value)


def summary_rows(res: dict[str, Any]) -> list[list[str]]:
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


def text_lines(res: dict[str, Any]) -> list[str]:
    """The human-readable ``inspect`` output: what was detected, each layer, the summary."""
    arch = res["architecture"]
    lines = [f"{res['checkpoint']}: {len(res['layers'])} layers"
             + (f", {arch['name']} ({arch['family']})" if arch else ", explicit patterns"),
             f"layout: {res['layout']}; orientation {res['orientation_checked']}; "
             f"detected from {res['detected_from']}",
             f"activation: {res['activation']} ({res['activation_source']})"]
    if res["activation_note"]:
        lines.append(f"  note: {res['activation_note']}")
    lines.append(f"note: {res['note']}")
    for row in res["layers"]:
        cost = row["cost"]
        biases = [f"{k} ({v})" for k, v in row["keys"].items() if k.endswith("_bias")]
        chain = row.get("chain") or ([row["theorem"]] if row.get("theorem") else [])
        lines.append(f"layer {row['label']}: d={row['d']} n={row['n']} {row['dtype']} "
                     f"{row['verdict']}" + (f" ({' + '.join(chain)})" if chain else ""))
        lines.append(f"  biases used: {', '.join(biases)}" if biases else "  no biases")
        lines.append(f"  why: {row['reason']}")
        for hyp in row.get("unmet_hypotheses", []):
            lines.append(f"  unmet hypothesis: {hyp}")
        proof = (row.get("certificate") or {}).get("proof")
        if proof:
            lines.append(f"  certificate: {proof}")
        if row.get("distance_in_unit_roundoffs") is not None:
            lines.append(f"  index set {row['S']} holds up to "
                         f"{row['distance_in_unit_roundoffs']:.3g} unit roundoffs of the stored "
                         "format, not exactly")
        open_question = (row.get("certificate") or {}).get("up_to_rounding")
        if open_question:
            lines.append(f"  up to rounding: {open_question}")
        lines.append(f"  predicted {human_bytes(cost['predicted_peak_bytes'])}, "
                     f"{human_seconds(cost['predicted_seconds'])}; took "
                     f"{human_seconds(cost['seconds'])}")
    table = summary_rows(res)
    widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
    lines.append("")
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
              for r in table]
    return lines
