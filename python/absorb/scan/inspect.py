"""``decide`` on every MLP layer of a checkpoint: the layout detected (or given), the layers
planned and scanned (:mod:`absorb.scan.driver`), the whole result in one object.

Per-layer pieces (cost, block, row, text) are in :mod:`absorb.checkpoints.inspection`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from absorb.certificates.devices import check_device
from absorb.checkpoints.detection import detect, explicit_plan
from absorb.checkpoints.hub import resolve_checkpoint
from absorb.checkpoints.inspection import matmul_rate
from absorb.checkpoints.reading import Checkpoint
from absorb.errors import AbsorbError
from absorb.scan.driver import scan_layers
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
