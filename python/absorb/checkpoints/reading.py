"""Reading safetensors checkpoints lazily: one tensor at a time, memory-mapped.

A checkpoint is a single ``.safetensors`` file, a sharded one (``*.safetensors.index.json``,
whose ``weight_map`` names the shard holding each tensor), or a folder holding either. The
``config.json`` beside the weights, when there is one, is read too. Shapes and dtypes come
from the file headers without touching the data; a tensor is read only when asked for and
returned as float64 (exact), its storage format the one its header names
(:meth:`Checkpoint.format`). bfloat16 (which numpy lacks) is widened by hand: its 16 bits are the
high half of a float32, read from a memory map of the file.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from safetensors import safe_open

from absorb.blocks import Array
from absorb.errors import AbsorbError

INDEX_SUFFIX = ".safetensors.index.json"
FLOAT_DTYPES = ("BF16", "F16", "F32", "F64")
#: The storage format (:mod:`absorb.formats`) each header dtype names.
FORMATS = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}
# Bytes per stored element, for the memory a read needs before widening to float64.
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AbsorbError(f"{path}: not a readable {what} ({exc})") from None


def _header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte little-endian length, then JSON)."""
    try:
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            return cast(dict[str, Any], json.loads(fh.read(size))) | {"__size__": size}
    except (OSError, struct.error, ValueError, TypeError) as exc:
        raise AbsorbError(f"{path}: unreadable safetensors header ({exc})") from None


class _Shard:
    """One safetensors file, opened with ``safe_open`` (a memory map) on first use."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._file = cast(Any, safe_open(str(path), framework="np"))
            self.keys: frozenset[str] = frozenset(self._file.keys())
        except Exception as exc:  # safetensors raises its own error types for bad headers
            raise AbsorbError(f"{path}: not a readable safetensors file ({exc})") from None
        self._offsets: dict[str, Any] | None = None

    def close(self) -> None:
        self._file.__exit__(None, None, None)  # releases the memory map

    def info(self, key: str) -> tuple[str, tuple[int, ...]]:
        piece = self._file.get_slice(key)
        return str(piece.get_dtype()), tuple(int(s) for s in piece.get_shape())

    def _span(self, key: str) -> tuple[int, int]:
        """(file offset, byte length) of a tensor's stored data, from the header."""
        if self._offsets is None:
            self._offsets = _header(self.path)
        start, end = self._offsets[key]["data_offsets"]
        return 8 + self._offsets["__size__"] + start, end - start

    def stored_bytes(self, key: str) -> NDArray[np.uint8]:
        """The tensor's bytes exactly as stored (a read-only memory map, nothing decoded)."""
        offset, size = self._span(key)
        if size == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.memmap(self.path, dtype=np.uint8, mode="r", offset=offset, shape=(size,))

    def raw(self, key: str) -> NDArray[Any]:
        dtype, shape = self.info(key)
        if dtype != "BF16":
            return cast(NDArray[Any], self._file.get_tensor(key))
        offset, _ = self._span(key)
        bits = np.memmap(self.path, dtype="<u2", mode="r", offset=offset, shape=shape)
        wide = bits.astype(np.uint32)
        wide <<= 16  # in place: one n×d uint32 temporary, not two
        return wide.view(np.float32)


class Checkpoint:
    """The tensors of a checkpoint (file, shards or folder) and its ``config.json``.

    Use as a context manager: the memory maps are released on exit.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.files = _shard_files(self.path)
        self.config: Mapping[str, Any] | None = _config(self.path)
        self._shards: dict[Path, _Shard] = {}
        self._where: dict[str, Path] = {}
        index = self.path if self.path.is_file() and self.path.name.endswith(INDEX_SUFFIX) \
            else _single_index(self.path)
        if index is not None:
            self._where = _weight_map(index)
        else:
            for file in self.files:
                for key in self._shard(file).keys:
                    if key in self._where:
                        raise AbsorbError(f"tensor {key!r} is in both {self._where[key].name} "
                                          f"and {file.name}")
                    self._where[key] = file
        self.keys: frozenset[str] = frozenset(self._where)

    def __enter__(self) -> Checkpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        for shard in self._shards.values():
            shard.close()
        self._shards.clear()

    def _shard(self, file: Path) -> _Shard:
        if file not in self._shards:
            self._shards[file] = _Shard(file)
        return self._shards[file]

    def _locate(self, key: str) -> _Shard:
        if key not in self._where:
            raise AbsorbError(f"no tensor named {key!r} in the checkpoint")
        shard = self._shard(self._where[key])
        if key not in shard.keys:
            raise AbsorbError(f"{shard.path.name} does not hold {key!r}, which the index "
                              "maps to it")
        return shard

    def info(self, key: str) -> tuple[str, tuple[int, ...]]:
        """(dtype, shape) of a tensor, from its file's header only."""
        return self._locate(key).info(key)

    def digest(self, keys: Mapping[str, str]) -> str:
        """SHA-256 (hex) of the named tensors' stored content: for each role in sorted order,
        the role, dtype, shape and the stored bytes. Equal digests mean equal stored numbers
        in the same roles, whatever the tensors are called or which file holds them (the key
        of a model scan's result cache). Reads the bytes once, at disk speed; decodes nothing.
        """
        h = hashlib.sha256()
        for role in sorted(keys):
            dtype, shape = self.info(keys[role])
            h.update(json.dumps([role, dtype, list(shape)]).encode())
            h.update(self._locate(keys[role]).stored_bytes(keys[role]).data)
        return h.hexdigest()

    def format(self, key: str) -> str:
        """The storage format of a tensor, as its header names it (never guessed from the
        values), refused unless it is a float type."""
        dtype, _ = self.info(key)
        if dtype not in FLOAT_DTYPES:
            raise AbsorbError(f"{key}: unsupported tensor dtype {dtype} (need a float type)")
        return FORMATS[dtype]

    def tensor(self, key: str) -> Array:
        """The tensor as float64 (exact: every stored float type widens without rounding)."""
        self.format(key)  # a float type: widening to float64 keeps every value
        arr = self._locate(key).raw(key).astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise AbsorbError(f"{key} contains NaN or Inf")
        return arr


def _single_index(path: Path) -> Path | None:
    if not path.is_dir():
        return None
    found = sorted(path.glob(f"*{INDEX_SUFFIX}"))
    if len(found) > 1:
        raise AbsorbError(f"{path}: several sharded-checkpoint indexes "
                          f"({', '.join(p.name for p in found)}); pass one of them")
    return found[0] if found else None


def _weight_map(index: Path) -> dict[str, Path]:
    data = _read_json(index, "sharded-checkpoint index")
    wmap = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        raise AbsorbError(f"{index}: no weight_map (tensor name -> shard file) in the index")
    where = {str(k): index.parent / v for k, v in wmap.items()}
    for file in sorted(set(where.values())):
        if not file.is_file():
            raise AbsorbError(f"{index}: shard {file.name} named in the weight_map is missing")
    return where


def _shard_files(path: Path) -> list[Path]:
    """The safetensors files of a checkpoint path, in a fixed order."""
    if path.is_file():
        if path.name.endswith(INDEX_SUFFIX):
            return sorted(set(_weight_map(path).values()))
        return [path]
    if not path.exists():
        raise AbsorbError(f"{path}: no such file or folder")
    index = _single_index(path)
    if index is not None:
        return sorted(set(_weight_map(index).values()))
    files = sorted(path.glob("*.safetensors"))
    if not files:
        others = sorted(p.name for p in path.iterdir() if p.suffix in (".bin", ".pt", ".pth"))
        hint = f" (found {', '.join(others)}: convert to safetensors first)" if others else ""
        raise AbsorbError(f"{path}: no .safetensors file in this folder{hint}")
    return files


def _config(path: Path) -> Mapping[str, Any] | None:
    """``config.json`` in the folder, or beside the file or index; None where there is none."""
    folder = path if path.is_dir() else path.parent
    file = folder / "config.json"
    if not file.is_file():
        return None
    data = _read_json(file, "config.json")
    if not isinstance(data, dict):
        raise AbsorbError(f"{file}: expected a JSON object")
    return data
