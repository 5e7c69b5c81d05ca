"""``absorb inspect``: the verdict on every MLP block of a safetensors checkpoint, optionally
written to a scan folder (``--out``) or streamed one layer per line (``--jsonl``)."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from absorb.atomic_files import distinct_outputs, ensure_writable_folder
from absorb.checkpoints.architectures import BY_NAME as ARCHITECTURE_NAMES
from absorb.commands.options import layer_pattern, positive, seed_type, tol_type
from absorb.serialize import write_json

if TYPE_CHECKING:
    from absorb.scan.inspect import Inspection

NAME = "inspect"
HELP = "check every MLP block of a safetensors checkpoint"


class _JsonLines(argparse.Action):
    """``--jsonl``: JSON on stdout (``--json``), one line per layer as it is decided."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        namespace.json = namespace.jsonl = True


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("checkpoint", help="a .safetensors file, a folder, or a sharded "
                   "checkpoint's *.safetensors.index.json (config.json read from beside it), "
                   "or a Hugging Face model id org/name[@revision] read through the Hub cache "
                   "(extra hub: pip install -e \".[hub]\"; a local path of that name wins)")
    p.add_argument("--arch", help="architecture, overriding detection (one of: "
                   f"{', '.join(ARCHITECTURE_NAMES)}) (default: detected)")
    p.add_argument("--up", type=layer_pattern,
                   help="up-projection key pattern, {i} = layer (instead of detection; "
                   "nn.Linear layout) (default: detected)")
    p.add_argument("--down", type=layer_pattern,
                   help="down-projection key pattern, {i} = layer (default: detected)")
    p.add_argument("--gate", type=layer_pattern,
                   help="gate key pattern, {i} = layer (gated activations) (default: "
                   "detected)")
    p.add_argument("--activation", help="a catalog name; needed with --up/--down, else it "
                   "overrides the detected activation (default: detected)")
    p.add_argument("--tol", type=tol_type, default=None,
                   help="relative precision of the stored weights for 'absorbable up to "
                        "rounding', at most 1e-2; never makes a layer absorbed (default: "
                        "the unit roundoff of each layer's storage format)")
    p.add_argument("--search", action="store_true",
                   help="also run the numerical search on undetermined layers (slow)")
    p.add_argument("--seed", type=seed_type, default=0,
                   help="random seed, a non-negative integer (same seed, same output)")
    p.add_argument("--workers", type=positive(int), default=1, metavar="N",
                   help="layers decided at a time by local processes (each gets cores/N BLAS "
                        "threads), capped at the cores and the layers; the plan says when "
                        "workers are predicted to save little and refuses a number that "
                        "would not fit in memory")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run each layer as a task on a Dask distributed cluster, e.g. "
                        "tcp://host:8786 (extra scan: pip install -e \".[scan]\"); workers read "
                        "the weights from the path or their Hub cache (default: local)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="scan folder: inspect.json, summary.html and summary.png (table and "
                        "figure of every layer), and cache/ (per-layer results: a rerun with "
                        "the same DIR resumes) (default: nothing written)")
    p.add_argument("--cache-dir", type=Path, metavar="DIR",
                   help="per-layer result cache, keyed by tensor content, options and version "
                        "(default: DIR/cache with --out, else none)")
    p.add_argument("--keep-witness", action="store_true",
                   help="keep each layer's certificate matrix Y (d x d exact rationals, up to "
                        "about 40 bytes each: 23 MiB at d = 768) in --json/--jsonl/--out, size "
                        "predicted first (default: each layer's digest and the certificate's "
                        "summary, with Y's SHA-256)")
    p.add_argument("--jsonl", action=_JsonLines, nargs=0,
                   help="JSON lines on stdout: one per layer as it is decided, then the rest "
                        "of the --json object")
    p.add_argument("--device", default="cpu",
                   help="where the certificate's dense phases run: cpu (numpy), cpu-torch "
                        "(torch on the CPU) or cuda (torch on a GPU); torch needs the extra "
                        "torch: pip install -e \".[torch]\"")
    p.set_defaults(jsonl=False)


def run(args: argparse.Namespace) -> Inspection:
    from absorb.checkpoints.inspection import summary_rows
    from absorb.scan.inspect import Inspection, inspect_checkpoint
    from absorb.scan.summary import check_out, prepare_out, write_outputs

    distinct_outputs({"--out": args.out, "--cache-dir": args.cache_dir})
    out = None if args.out is None else check_out(args.out)
    cache = args.cache_dir if args.cache_dir is not None else (
        None if out is None else out / "cache")
    if args.cache_dir is not None:
        ensure_writable_folder(args.cache_dir)

    def stream(row: dict[str, object]) -> None:
        write_json(row, sys.stdout)
        sys.stdout.flush()

    res = inspect_checkpoint(
        args.checkpoint, arch=args.arch, up=args.up, down=args.down, gate=args.gate,
        activation=args.activation, search=args.search, tol=args.tol, seed=args.seed,
        progress=True, keep_certificates=args.keep_witness, witness_room=out,
        workers=args.workers, scheduler=args.scheduler, cache_dir=cache, device=args.device,
        on_layer=stream if args.jsonl else None,
        prepare=None if out is None or args.cache_dir is not None else
        lambda: prepare_out(out))
    written = None
    if out is not None:
        prepare_out(out)
        buf = io.StringIO()
        write_json(res, buf)
        written = tuple(write_outputs(out, res, buf.getvalue(), summary_rows))
    return Inspection(res, written, streamed=args.jsonl)
