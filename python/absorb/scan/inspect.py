"""``decide`` on every MLP layer of a checkpoint: the layout detected (or given), the layers
planned and scanned (:mod:`absorb.scan.driver`), the whole result in one object, and
``absorb inspect``'s outcome (:class:`Inspection`: its JSON, text and exit code).

Per-layer pieces (cost, block, row, the summary table) are in
:mod:`absorb.checkpoints.inspection`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from absorb.budget import human_bytes, human_seconds
from absorb.certificates.devices import check_device
from absorb.checkpoints.detection import detect, explicit_plan
from absorb.checkpoints.hub import resolve_checkpoint
from absorb.checkpoints.inspection import matmul_rate, summary_rows
from absorb.checkpoints.reading import Checkpoint
from absorb.errors import AbsorbError
from absorb.scan.driver import scan_layers
from absorb.scan.runners import check_runner
from absorb.verdicts import check_tol

NOTE = ("each verdict concerns the abstract block x + MLP(x) with the stored MLP weights "
        "(as in the paper); the real layers also hold a LayerNorm (and attention) that the "
        "verdict does not model")


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
    witness_room: Path | None = None,
) -> dict[str, object]:
    """``decide`` for every MLP layer of the checkpoint at ``path`` (a file, a folder, an
    index, or a Hugging Face model id ``org/name[@revision]`` from the Hub cache).

    The layout is detected (``arch`` overrides it), or given as explicit ``up``/``down``
    (/``gate``) key patterns with ``activation``; ``activation`` alone overrides the detected
    one. ``search`` attaches the numerical search to ``undetermined`` layers (slow); ``tol``
    overrides the storage tolerance of ``decide`` (default: from the stored dtype); each
    layer's random generator comes from ``seed`` and the layer's content digest.
    ``memory`` replaces the available memory (bytes) in the up-front plan (tests).
    ``keep_certificates=False`` replaces each layer's certificate matrix Y by its SHA-256 once
    the layer is decided (its margin and how it was verified stay): text output never shows
    Y, and kept matrices cost d² floats per layer, which the plan counts, and up to d² "p/q"
    strings of JSON, which must fit on the file system of ``witness_room`` (when given).
    ``workers``/``scheduler`` run the layers in parallel (local processes / Dask), ``cache_dir``
    keeps each layer's result for a later run, ``device`` runs the certificate's dense phases
    on torch, ``on_layer`` receives each layer's entry as soon as it is decided, ``prepare``
    is called before the cache's first write (:mod:`absorb.scan`).
    """
    check_tol(tol)  # before any layer is read
    if (up is None) != (down is None) or (gate is not None and up is None):
        raise AbsorbError("give both --up and --down (and --gate for a gated activation)")
    if up is not None and arch is not None:
        raise AbsorbError("--arch and --up/--down exclude each other")
    if up is not None and activation is None:
        raise AbsorbError("--up/--down patterns need --activation")
    check_device(device)
    check_runner(workers, scheduler)  # a bad address or a closed port: one line, in seconds
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
            on_layer=on_layer, prepare=prepare, witness_room=witness_room)
        files = [str(f) for f in ckpt.files]
    return {"checkpoint": str(path), "files": files, **plan.to_json(),
            "matmul_rate": rate, "note": NOTE, "scan": scan, "layers": layers}


@dataclass(frozen=True)
class Inspection:
    """What ``absorb inspect`` found: :func:`inspect_checkpoint`'s object (``result``), the
    files of the scan folder when one was written (``written``, ``--out``), and whether each
    layer already went to stdout as a JSON line (``streamed``, ``--jsonl``). Exit code 0: the
    command did its job, whatever the layers' verdicts (as for one block's verdict)."""

    result: Mapping[str, Any]
    written: tuple[str, ...] | None = None
    streamed: bool = False
    exit_code: ClassVar[int] = 0

    def to_json(self) -> dict[str, Any]:
        """The object, with ``written``; streamed layers are not repeated (the last line
        holds the rest)."""
        out = {k: v for k, v in self.result.items() if not (self.streamed and k == "layers")}
        if self.written is not None:
            out["written"] = list(self.written)
        return out

    def text_lines(self) -> list[str]:
        """What was detected, each layer, the summary table, how the scan ran, the files."""
        res = self.result
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
            lines += _layer_lines(row)
        table = summary_rows(res)
        widths = [max(len(r[c]) for r in table) for c in range(len(table[0]))]
        lines.append("")
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
                  for r in table]
        scan = res["scan"]
        cache_text = f" {scan['cache']}" if scan["cache"] else ""
        lines.append(f"scan: {scan['computed_layers']} layers decided by {scan['runner']} "
                     f"(device {scan['device']}), {scan['cached_layers']} read from the "
                     f"cache{cache_text}, in {scan['seconds']:.3g} s; predicted "
                     f"{scan['plan']['predicted_seconds']:.3g} s")
        lines += [f"written: {f}" for f in self.written or ()]
        return lines


def _layer_lines(row: Mapping[str, Any]) -> list[str]:
    """One layer of the text: where and what, its verdict and why, its cost."""
    cost = row["cost"]
    biases = [f"{k} ({v})" for k, v in row["keys"].items() if k.endswith("_bias")]
    chain = row.get("chain") or ([row["theorem"]] if row.get("theorem") else [])
    lines = [f"layer {row['label']}: d={row['d']} n={row['n']} {row['dtype']} "
             f"{row['verdict']}" + (f" ({' + '.join(chain)})" if chain else ""),
             f"  biases used: {', '.join(biases)}" if biases else "  no biases",
             f"  why: {row['reason']}"]
    lines += [f"  unmet hypothesis: {hyp}" for hyp in row.get("unmet_hypotheses", [])]
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
    return lines
