"""A model scan: plan, hash, look up the cache, run the rest, stream and collect the results.

1. the plan (:mod:`.plan`): every layer's predicted memory and work, the whole scan's per
   worker and in all, refused (exit 2) before anything is read when it would not fit;
2. each layer's content digest (its stored bytes, read at disk speed), the cache key;
3. cached layers are taken from the cache when their verdict re-checks on the stored weights
   (:func:`absorb.scan.cache.confirmed`), the others run as tasks (:mod:`.runners`);
4. each result is written to the cache as it arrives (an interruption loses at most the
   layers running), passed to ``on_layer`` (the JSON lines of ``--jsonl``), and counted on
   the progress bar: layers done / total and the time left, predicted from the cost model and
   corrected by the measured / predicted ratio of the layers computed so far.

Each row carries its layer's content ``digest``. The certificate matrix Y (d² exact
rationals, ~9 MB of JSON at d = 768) stays in a row only with ``keep_certificates``
(``--keep-witness``); otherwise the row keeps the certificate's summary (margin, interval,
how it was verified, distance) and ``Y_sha256``, the SHA-256 of Y's JSON text (its rows of
"p/q" strings, compact separators), which identifies a witness kept elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from absorb.budget import FLOAT_BYTES, Cost, human_bytes, human_seconds
from absorb.certificates.devices import host_bytes
from absorb.checkpoints.detection import LayerSpec, Plan
from absorb.checkpoints.inspection import layer_cost, layer_row, load_layer
from absorb.checkpoints.reading import Checkpoint
from absorb.errors import AbsorbError
from absorb.rationals import RationalMatrix
from absorb.scan.cache import LayerCache, cache_key, confirmed
from absorb.scan.plan import plan_scan, worker_count
from absorb.scan.runners import make_runner
from absorb.scan.tasks import LayerTask, Outcome

Row = dict[str, object]
#: Upper bound on the JSON bytes of one entry of a kept witness Y: a "p/q" string on the
#: finest grid 2^-52 (two runs of at most 16 digits, '/', quotes) and its separator.
WITNESS_ENTRY_BYTES = 40


def witness_sha256(Y: RationalMatrix) -> str:
    """SHA-256 of Y's JSON text (rows of "p/q" strings, compact separators), a row at a time."""
    rows: Iterable[list[str]] = (
        Y.to_json() if Y.grid is None else
        (RationalMatrix(r[None, :], Y.grid).to_json()[0] for r in np.asarray(Y.values)))
    h = hashlib.sha256(b"[")
    for i, row in enumerate(rows):
        h.update((b"," if i else b"") + json.dumps(row, separators=(",", ":")).encode())
    h.update(b"]")
    return h.hexdigest()


def _drop_certificate(row: Row) -> None:
    """Replace the d×d certificate matrix Y of a row by its SHA-256 (its margin and
    verification stay)."""
    cert = row.get("certificate")
    dual = cert.get("dual") if isinstance(cert, dict) else None
    if isinstance(dual, dict) and isinstance(dual.get("Y"), RationalMatrix):
        dual["Y_sha256"] = witness_sha256(dual["Y"])
        dual["Y"] = None


def _witness_room(specs: Sequence[LayerSpec], room: Path | None) -> float:
    """Most JSON bytes the kept witnesses Y of ``specs`` can take (d² entries per layer),
    refused up front (AbsorbError) when the file system of ``room`` has less free space."""
    need = float(sum(WITNESS_ENTRY_BYTES * s.d * s.d for s in specs))
    if room is not None:
        while not room.exists() and room != room.parent:
            room = room.parent
        free = shutil.disk_usage(room).free
        if need > free:
            raise AbsorbError(f"--keep-witness: the layers' certificates Y may take up to "
                              f"{human_bytes(need)}, and {room} has {human_bytes(free)} free; "
                              "drop --keep-witness (nothing was computed or written)")
    return need


def scan_layers(source: str, path: Path, ckpt: Checkpoint, plan: Plan,
                specs: Sequence[LayerSpec], *, rate: float, seed: int, search: bool,
                tol: float | None, device: str, workers: int, scheduler: str | None,
                cache_dir: str | Path | None, keep_certificates: bool, memory: int | None,
                progress: bool, on_layer: Callable[[Row], None] | None,
                prepare: Callable[[], None] | None = None,
                witness_room: Path | None = None) -> tuple[list[Row], dict[str, object]]:
    """The rows of ``specs`` (in their order) and what the scan did (plan, cache use).
    ``witness_room``: a folder whose file system must hold the kept witnesses."""
    start = time.perf_counter()
    act = plan.activation
    # Y (d×d) exists only for not_absorbed verdicts of the relaxation (ungated, odd part
    # linear); kept for the JSON output, every one of them at once in the worst case
    certifies = act.odd_part_linear and not act.gated
    # held during the relaxation, on top of its peak (Cost's + is for jobs in sequence)
    extra = [host_bytes(device, spec.n) if certifies else 0.0 for spec in specs]
    costs = [Cost(c.bytes + e, c.flops, c.overhead) for c, e in
             zip((layer_cost(spec, act) for spec in specs), extra, strict=True)]
    kept = float(sum(FLOAT_BYTES * s.d * s.d for s in specs)) \
        if keep_certificates and certifies else 0.0
    witness = _witness_room(specs, witness_room) if keep_certificates and certifies else 0.0
    labels = [f"layer {s.label} (d={s.d}, n={s.n})" for s in specs]
    count, notes = (workers, ()) if scheduler is not None else \
        worker_count(workers, len(specs))
    with make_runner(count, scheduler) as runner:
        scan_plan = plan_scan(list(zip(labels, costs, strict=True)), kept, runner.workers(),
                              runner.where, rate, memory=memory, notes=notes)
        if progress:
            print(scan_plan.text(), file=sys.stderr)
            if witness:
                print(f"witnesses kept (--keep-witness): up to {human_bytes(witness)} of JSON",
                      file=sys.stderr)
        # an absolute path: a Dask worker may run in another folder
        tasks = [LayerTask(source, str(path.absolute()), s.label, dict(s.keys), plan.layout,
                           act.name, ckpt.digest(s.keys), seed, search, tol, device)
                 for s in specs]
        cache = None if cache_dir is None else LayerCache(cache_dir, prepare)
        keys = [cache_key(t) for t in tasks]
        rows: list[Row | None] = [None] * len(specs)

        def finish(i: int, outcome: Outcome, cached: bool) -> None:
            row = layer_row(specs[i], outcome.verdict, costs[i], rate, outcome.seconds, cached)
            row["digest"] = tasks[i].digest
            if not keep_certificates:  # d² entries per layer add up over a large model
                _drop_certificate(row)
            if on_layer is not None:
                on_layer(row)
            rows[i] = row

        pending = []
        for i, key in enumerate(keys):
            hit = None if cache is None else cache.get(key, tasks[i].digest)
            if hit is not None and confirmed(hit.verdict, load_layer(ckpt, specs[i], plan), tol):
                finish(i, hit, True)
            else:
                pending.append(i)
        bar = tqdm(total=len(specs), initial=len(specs) - len(pending), unit="layer",
                   desc=f"{Path(source).name or source} layers", disable=not progress,
                   file=sys.stderr)
        todo = math.fsum(costs[i].flops for i in pending) or 1.0
        left_flops, done_predicted, done_measured = todo, 0.0, 0.0
        remaining = len(pending)
        try:
            for j, outcome in runner.run([tasks[i] for i in pending]):
                i = pending[j]
                if cache is not None:
                    cache.put(keys[i], tasks[i].digest, outcome)  # first: the work is saved
                finish(i, outcome, False)
                left_flops -= costs[i].flops
                remaining -= 1
                done_predicted += costs[i].at(rate)
                done_measured += outcome.seconds
                ratio = done_measured / done_predicted if done_predicted > 0 else 1.0
                # the subtractions leave round-off (8.8e-16 s) once every layer is done
                left = (scan_plan.wall_seconds * max(left_flops, 0.0) / todo * ratio
                        if remaining else 0.0)
                # the layer's name and its count change together, then one forced redraw:
                # update() alone may skip its redraw (tqdm's minimum interval), which left the
                # bar showing a layer's name beside the count from before it
                bar.set_postfix_str(f"{specs[i].label} {outcome.verdict.get('verdict')}; "
                                    f"about {human_seconds(left)} left", refresh=False)
                bar.update()
                bar.refresh()
        finally:
            bar.close()
    done = [r for r in rows if r is not None]
    assert len(done) == len(specs)  # every position was filled by the cache or a task
    return done, {"plan": scan_plan.to_json(), "runner": runner.where, "device": device,
                  "cache": None if cache is None else str(cache.folder),
                  "cached_layers": len(specs) - len(pending), "computed_layers": len(pending),
                  "witness_bytes_predicted": witness,
                  "seconds": time.perf_counter() - start}
