"""Reading safetensors checkpoints lazily: one tensor at a time, memory-mapped.

A checkpoint is a single ``.safetensors`` file, a sharded one (``*.safetensors.index.json``,
whose ``weight_map`` names the shard holding each tensor), or a folder holding either. The
``config.json`` beside the weights, when there is one, is read too. Shapes and dtypes come
from the file headers without touching the data; a tensor is read only when asked for and
returned as float64 (exact), its storage format the one its header names
(:meth:`Checkpoint.format`). bfloat16 (which numpy lacks) is widened by hand: its 16 bits are the
high half of a float32, read from a memory map of the file.

What is read (README, "Security and files"): the path the user named, and, when it is a folder
or an index, only files inside that folder — a shard name of an index or a file found in the
folder must be a relative name without ``..`` whose real path (symlinks followed) lies inside
the folder's real path; in a Hugging Face cache snapshot (``…/models--ORG--NAME/snapshots/REV``)
it may also lie in that repository's ``blobs/`` (the Hub's own ``file -> ../../blobs/HASH``
links). Only regular files are opened (a FIFO or a device is refused before ``open``), and
JSON documents (``config.json``, the index) are bounded in size, nesting and integer length
(:func:`absorb.numbers.loads_document`).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray
from safetensors import safe_open

from absorb.blocks import Array
from absorb.errors import AbsorbError
from absorb.numbers import loads_document

INDEX_SUFFIX = ".safetensors.index.json"
#: The single-file checkpoint name transformers loads first when a folder also holds an index.
SINGLE_FILE = "model.safetensors"
#: Largest config.json or shard index read (a 7B model's index is about 30 KiB).
MAX_JSON_BYTES = 64 << 20
FLOAT_DTYPES = ("BF16", "F16", "F32", "F64")
#: The storage format (:mod:`absorb.formats`) each header dtype names.
FORMATS = {"BF16": "bfloat16", "F16": "float16", "F32": "float32", "F64": "float64"}
# Bytes per stored element, for the memory a read needs before widening to float64.
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8}


def regular_file(path: Path) -> Path:
    """``path`` when it is a regular file (symlinks followed); AbsorbError for a FIFO, a
    device, a folder or nothing, before anything opens it (a FIFO would block ``open``)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise AbsorbError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise AbsorbError(f"{path}: not a regular file; refused")
    return path


def _read_json(path: Path, what: str) -> Any:
    """A JSON document, opened without blocking and checked to be a regular file on the open
    descriptor (no window between the check and the read), bounded in size and shape."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise AbsorbError(f"{path}: not a readable {what} ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a folder's descriptor
        os.close(fd)
        raise AbsorbError(f"{path}: not a regular file; refused")
    with os.fdopen(fd, "rb") as fh:
        if info.st_size > MAX_JSON_BYTES:
            raise AbsorbError(f"{path}: {info.st_size} bytes, more than a {what} can need "
                              f"({MAX_JSON_BYTES}); refused")
        try:
            text = fh.read(MAX_JSON_BYTES + 1).decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AbsorbError(f"{path}: not a readable {what} ({exc})") from None
    try:
        return loads_document(text)
    except AbsorbError as exc:
        raise AbsorbError(f"{path}: not a readable {what} ({exc})") from None


def _header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte little-endian length, then JSON)."""
    regular_file(path)
    try:
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            return cast(dict[str, Any], json.loads(fh.read(size))) | {"__size__": size}
    except (OSError, struct.error, ValueError, TypeError) as exc:
        raise AbsorbError(f"{path}: unreadable safetensors header ({exc})") from None


class _Shard:
    """One safetensors file, opened with ``safe_open`` (a memory map) on first use."""

    def __init__(self, path: Path) -> None:
        self.path = regular_file(path)
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
        index = _index(self.path)
        # the index is read (and its shards confined) once: the files are its weight map's
        self._where: dict[str, Path] = {} if index is None else _weight_map(index)
        self.files = _shard_files(self.path) if index is None \
            else sorted(set(self._where.values()))
        self.config: Mapping[str, Any] | None = _config(self.path)
        self._shards: dict[Path, _Shard] = {}
        if index is None:
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


def _hub_blobs(folder: Path) -> Path | None:
    """The repository's ``blobs/`` when ``folder`` is a Hub cache snapshot
    (``…/models--ORG--NAME/snapshots/REV``), else None."""
    snapshots = folder.parent
    if snapshots.name == "snapshots" and snapshots.parent.name.startswith("models--"):
        return snapshots.parent / "blobs"
    return None


def inside(folder: Path, name: str, what: str) -> Path:
    """``folder/name`` for a file the checkpoint in ``folder`` names (an index's shard, a file
    found in the folder), confined: a relative name without ``..`` whose real path lies inside
    the folder's real path, or in the Hub repository's ``blobs/`` for a cache snapshot."""
    parts = Path(name).parts
    if not name or Path(name).is_absolute() or "\\" in name or ".." in parts:
        raise AbsorbError(f"{folder}: {what} {name!r} is not a name inside the checkpoint "
                          "folder (absolute, or with '..'); refused")
    file = folder / name
    real = Path(os.path.realpath(file))
    roots = [Path(os.path.realpath(folder))]
    blobs = _hub_blobs(Path(os.path.abspath(folder)))
    if blobs is not None:
        roots.append(Path(os.path.realpath(blobs)))
    if not any(real.is_relative_to(root) for root in roots):
        raise AbsorbError(f"{folder}: {what} {name!r} leads to {real}, outside the checkpoint "
                          "folder; refused")
    return file


def _index(path: Path) -> Path | None:
    """The shard index a checkpoint path is read through: the path itself when it names one,
    else its folder's (:func:`_folder_index`)."""
    if path.is_file() and path.name.endswith(INDEX_SUFFIX):
        return path
    return _folder_index(path)


def _folder_index(path: Path) -> Path | None:
    """The shard index a folder is read through: None for a file, a folder without one, or a
    folder that also holds ``model.safetensors`` (transformers loads that file first)."""
    if not path.is_dir() or (path / SINGLE_FILE).exists():
        return None
    found = sorted(path.glob(f"*{INDEX_SUFFIX}"))
    if len(found) > 1:
        raise AbsorbError(f"{path}: several sharded-checkpoint indexes "
                          f"({', '.join(p.name for p in found)}); pass one of them")
    return inside(path, found[0].name, "index") if found else None


def _weight_map(index: Path) -> dict[str, Path]:
    data = _read_json(index, "sharded-checkpoint index")
    wmap = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(wmap, dict) or not all(isinstance(v, str) for v in wmap.values()):
        raise AbsorbError(f"{index}: no weight_map (tensor name -> shard file) in the index")
    shards = {v: inside(index.parent, v, "shard") for v in set(wmap.values())}
    for file in sorted(set(shards.values())):
        if not file.exists():
            raise AbsorbError(f"{index}: shard {file.name} named in the weight_map is missing")
        regular_file(file)
    return {str(k): shards[v] for k, v in wmap.items()}


def _shard_files(path: Path) -> list[Path]:
    """The safetensors files of a checkpoint path read without a shard index (:func:`_index`
    found none), in a fixed order."""
    if path.exists() and not path.is_dir():
        regular_file(path)
    if path.is_file():
        return [path]
    if not path.exists():
        raise AbsorbError(f"{path}: no such file or folder")
    if (path / SINGLE_FILE).exists():
        return [inside(path, SINGLE_FILE, "file")]
    files = [inside(path, p.name, "file") for p in sorted(path.glob("*.safetensors"))]
    if not files:
        others = sorted(p.name for p in path.iterdir() if p.suffix in (".bin", ".pt", ".pth"))
        hint = f" (found {', '.join(others)}: convert to safetensors first)" if others else ""
        raise AbsorbError(f"{path}: no .safetensors file in this folder{hint}")
    return files


def _config(path: Path) -> Mapping[str, Any] | None:
    """``config.json`` in the folder, or beside the file or index; None where there is none."""
    folder = path if path.is_dir() else path.parent
    file = folder / "config.json"
    if not os.path.lexists(file):
        return None
    inside(folder, file.name, "file")
    data = _read_json(file, "config.json")
    if not isinstance(data, dict):
        raise AbsorbError(f"{file}: expected a JSON object")
    return data
