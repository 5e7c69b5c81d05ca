"""Stack weights files: every bad-input rule of single blocks, applied layer by layer.

* ``.json``: ``{"layers": [block, block, …]}``, each block an object in the single-block format
  (``W_up``, ``W_down``, optional ``b_up``, ``b_down``, ``A_skip``; entries under the number
  grammar of :mod:`absorb.numbers`, so every layer carries its exact rational originals).
* ``.npz``: the single-block keys suffixed by the layer index, ``W_up_0``, ``W_down_0``,
  ``W_up_1``, …; layers 0..L−1 without gaps, each with ``W_up_l`` and ``W_down_l``.

All layers share the model dimension d; widths may differ. :func:`load_weights` reads a
``--weights`` file that may hold either a stack or one block, and tells them apart in one read.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from absorb.activations import Activation
from absorb.blocks import Block
from absorb.errors import AbsorbError
from absorb.weights import (
    KEYS,
    NPZ_ERRORS,
    REQUIRED,
    CheckerKeys,
    block_from_arrays,
    checked_path,
    json_arrays,
    json_check_input,
    load_check_input,
    parse_json_block,
    read_json_data,
    read_npz,
)

#: Stacks deeper than this are refused (every layer is decided separately).
MAX_LAYERS = 1024
_SUFFIXED = re.compile(r"^(?P<key>" + "|".join(KEYS) + r")_(?P<layer>0|[1-9][0-9]*)$")


def _npz_is_stack(path: Path) -> bool:
    """Whether the ``.npz`` at ``path`` names its arrays with layer suffixes (its member list
    only: no array is read). An unreadable archive is not a stack: the block reader reports."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = [m.removesuffix(".npy") for m in archive.namelist()]
    except NPZ_ERRORS:
        return False
    return any(_SUFFIXED.match(name) for name in names)


def _layer_count(path: Path, names: set[str]) -> int:
    layers: set[int] = set()
    for name in names:
        m = _SUFFIXED.match(name)
        if m is None:
            raise AbsorbError(f"{path}: unexpected key {name} in a stack file (allowed: "
                              f"{', '.join(KEYS)} suffixed by the layer index, e.g. W_up_0)")
        layers.add(int(m["layer"]))
    count = max(layers) + 1 if layers else 0
    if count == 0:
        raise AbsorbError(f"{path}: a stack file needs at least one layer")
    if count > MAX_LAYERS:
        raise AbsorbError(f"{path}: {count} layers, more than the limit {MAX_LAYERS}")
    missing = [f"{k}_{ell}" for ell in range(count) for k in REQUIRED if f"{k}_{ell}" not in names]
    if missing:
        raise AbsorbError(f"{path}: missing keys {', '.join(missing[:6])}"
                          + (" …" if len(missing) > 6 else ""))
    return count


def _check_stack_keys(path: Path, keys: object) -> None:
    _layer_count(path, set(keys))  # type: ignore[call-overload]


def _with_layer(ell: int, exc: AbsorbError) -> AbsorbError:
    return AbsorbError(f"layer {ell}: {exc}")


def _same_dimension(blocks: list[Block]) -> list[Block]:
    d = blocks[0].d
    for ell, block in enumerate(blocks):
        if block.d != d:
            raise AbsorbError(f"layer {ell}: model dimension {block.d} differs from layer 0's "
                              f"{d} (W_up is n x d in every layer, with the same d)")
    return blocks


def _json_stack(data: object, path: Path, activation: Activation) -> list[Block]:
    """The layers of a decoded stack document (:func:`read_json_data`)."""
    if not isinstance(data, dict) or set(data) != {"layers"}:
        raise AbsorbError(f"{path}: a stack file is a JSON object with the single key "
                          "\"layers\"")
    layers = data["layers"]
    if not isinstance(layers, list) or not layers:
        raise AbsorbError(f"{path}: \"layers\" must be a non-empty list of blocks")
    if len(layers) > MAX_LAYERS:
        raise AbsorbError(f"{path}: {len(layers)} layers, more than the limit {MAX_LAYERS}")
    parsed = []
    for ell, layer in enumerate(layers):
        where = f"{path}: layer {ell}"
        try:
            parsed.append(parse_json_block(layer, where))
        except AbsorbError as exc:
            raise (exc if str(exc).startswith(where) else _with_layer(ell, exc)) from None
    blocks = []
    for ell, p in enumerate(parsed):
        try:
            blocks.append(block_from_arrays(json_arrays(p), activation))
        except AbsorbError as exc:
            raise _with_layer(ell, exc) from None
    return blocks


def _describe(name: str) -> str:
    """A stack member's name as a refusal says it: ``W_up_0`` is "layer 0: W_up"."""
    m = _SUFFIXED.match(name)
    return name if m is None else f"layer {m['layer']}: {m['key']}"


def _load_npz(path: Path, activation: Activation) -> list[Block]:
    arrays = read_npz(path, _check_stack_keys, _describe)
    count = _layer_count(path, set(arrays))
    blocks = []
    for ell in range(count):
        layer = {k: arrays[f"{k}_{ell}"] for k in KEYS if f"{k}_{ell}" in arrays}
        try:
            blocks.append(block_from_arrays(layer, activation))
        except AbsorbError as exc:
            raise _with_layer(ell, exc) from None
    return blocks


def load_stack(path: str | Path, activation: Activation) -> list[Block]:
    """The residual stack stored in ``path`` (first layer first), every layer validated."""
    p, suffix = checked_path(path)
    try:
        blocks = (_json_stack(read_json_data(p), p, activation) if suffix == ".json"
                  else _load_npz(p, activation))
    except PermissionError:
        raise AbsorbError(f"{p}: permission denied") from None
    return _same_dimension(blocks)


def load_weights(path: str | Path, activation: Activation
                 ) -> list[Block] | tuple[Block, CheckerKeys]:
    """What a ``--weights`` file holds, read once: a stack (a JSON object with ``layers``, or an
    ``.npz`` whose arrays carry layer suffixes), validated as :func:`load_stack` does, else one
    block and its checker keys, validated as :func:`absorb.weights.load_check_input` does.

    A JSON document is decoded once and then read as what it is; an ``.npz`` is told apart by
    its member list, before any array is read."""
    p, suffix = checked_path(path)
    if suffix != ".json":
        if _npz_is_stack(p):
            return load_stack(p, activation)
        return load_check_input(p, activation)
    try:
        data = read_json_data(p)
    except PermissionError:
        raise AbsorbError(f"{p}: permission denied") from None
    if isinstance(data, dict) and "layers" in data:
        return _same_dimension(_json_stack(data, p, activation))
    return json_check_input(data, p, activation)
