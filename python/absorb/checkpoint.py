"""``absorb inspect``: the ``check`` verdict for every MLP block of a safetensors checkpoint.

Weights follow PyTorch ``nn.Linear``: the up projection's ``weight`` is n×d, the down
projection's d×n (the gate's n×d). A ``{i}`` in a key pattern stands for the layer index;
layers are the indices for which the patterns match keys. Where a pattern ends in ``.weight``
and the matching ``.bias`` exists, it is read as ``b_up`` / ``b_down``. Every layer has the
identity skip. Tensors are read with numpy only (no torch); bfloat16, which numpy lacks, is
widened to float32 by hand from the raw bytes.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from safetensors import safe_open
from tqdm import tqdm

from absorb.activations import Activation
from absorb.blocks import Array, Block
from absorb.errors import AbsorbError
from absorb.theory import decide

LAYER = "{i}"


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    return re.compile(re.escape(pattern).replace(re.escape(LAYER), r"(\d+)"))


def _bf16(path: Path, key: str) -> NDArray[np.float32]:
    """A BF16 tensor: its 16 bits are the high half of a float32 (safetensors is little-endian)."""
    with path.open("rb") as fh:
        (size,) = struct.unpack("<Q", fh.read(8))
        meta = json.loads(fh.read(size))[key]
        start, end = meta["data_offsets"]
        fh.seek(8 + size + start)
        raw = np.frombuffer(fh.read(end - start), dtype="<u2")
    return (raw.astype(np.uint32) << 16).view(np.float32).reshape(meta["shape"])


class _Reader:
    """Keys and float64 tensors of one safetensors file, with one-line errors."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise AbsorbError(f"{path}: no such file")
        self.path = path
        try:
            self._file = cast(Any, safe_open(str(path), framework="np"))
            self.keys: frozenset[str] = frozenset(self._file.keys())
        except Exception as exc:  # safetensors raises its own error types for bad headers
            raise AbsorbError(f"{path}: not a readable safetensors file ({exc})") from None

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.__exit__(None, None, None)  # releases the memory map

    def tensor(self, key: str) -> Array:
        dtype = self._file.get_slice(key).get_dtype()
        if dtype == "BF16":
            arr: NDArray[Any] = _bf16(self.path, key)
        elif dtype in ("F16", "F32", "F64"):
            arr = self._file.get_tensor(key)
        else:
            raise AbsorbError(f"{key}: unsupported tensor dtype {dtype} (need a float type)")
        if not np.all(np.isfinite(arr)):
            raise AbsorbError(f"{key} contains NaN or Inf")
        return arr.astype(np.float64)

    def optional(self, key: str) -> Array | None:
        return self.tensor(key) if key in self.keys else None


def _layers(keys: frozenset[str], patterns: dict[str, str]) -> list[int | None]:
    """Layer indices present for the patterns; [None] for patterns without ``{i}``."""
    if not any(LAYER in p for p in patterns.values()):
        missing = [p for p in patterns.values() if p not in keys]
        if missing:
            raise AbsorbError(f"no tensor named {missing[0]!r} in the checkpoint")
        return [None]
    found: dict[str, set[int]] = {}
    for role, pattern in patterns.items():
        if LAYER not in pattern:
            raise AbsorbError(f"--{role} pattern {pattern!r} lacks {LAYER} while another has it")
        rx = _pattern_regex(pattern)
        found[role] = {int(m.group(1)) for k in keys if (m := rx.fullmatch(k))}
    every = set().union(*found.values())
    if not every:
        raise AbsorbError(f"no tensor matches the pattern {patterns['up']!r}")
    for role, idx in found.items():
        if idx != every:
            raise AbsorbError(f"layer {min(every - idx)}: no tensor matches "
                              f"--{role} {patterns[role]!r}")
    return [*sorted(every)]


def _bias_key(weight_key: str) -> str | None:
    return weight_key[: -len("weight")] + "bias" if weight_key.endswith(".weight") else None


def _load_layer(reader: _Reader, patterns: dict[str, str], layer: int | None,
                activation: Activation) -> tuple[Block, dict[str, str]]:
    keys = {role: p if layer is None else p.replace(LAYER, str(layer))
            for role, p in patterns.items()}
    bias = {role: b for role, k in keys.items()
            if (b := _bias_key(k)) is not None and b in reader.keys}
    if "gate" in bias:
        raise AbsorbError(f"{bias['gate']}: a gate bias is not supported (g(W_gate x + c))")
    W_gate = reader.tensor(keys["gate"]) if "gate" in keys else None
    block = Block(activation, reader.tensor(keys["up"]), reader.tensor(keys["down"]), W_gate,
                  b_up=reader.optional(bias["up"]) if "up" in bias else None,
                  b_down=reader.optional(bias["down"]) if "down" in bias else None)
    return block, {**keys, **{f"{role}_bias": k for role, k in bias.items()}}


def inspect_checkpoint(
    path: str | Path,
    *,
    up: str,
    down: str,
    gate: str | None = None,
    activation: Activation,
    skip_search: bool = True,
    rng: np.random.Generator | None = None,
    progress: bool = False,
) -> dict[str, object]:
    """``decide`` for every layer matched by the patterns; ``{"checkpoint", ..., "layers"}``.

    ``skip_search`` (the default) attaches no numerical search to ``undetermined`` layers:
    the index-set certificate is O(n²d + n³) per layer, a search far more.
    """
    path = Path(path)
    if activation.gated != (gate is not None):
        need = "needs --gate" if activation.gated else "takes no --gate"
        raise AbsorbError(f"activation {activation.name} {need}")
    patterns = {"up": up, "down": down, **({"gate": gate} if gate is not None else {})}
    rng = np.random.default_rng(0) if rng is None else rng
    layers = []
    with _Reader(path) as reader:
        for layer in tqdm(_layers(reader.keys, patterns), desc="layers", disable=not progress):
            try:
                block, keys = _load_layer(reader, patterns, layer, activation)
            except AbsorbError as exc:
                raise AbsorbError(f"layer {layer}: {exc}") from None
            layers.append({"layer": layer, "keys": keys,
                           **decide(block, rng=rng, search=not skip_search)})
    return {"checkpoint": str(path), "activation": activation.name, "patterns": patterns,
            "layers": layers}
