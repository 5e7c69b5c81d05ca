"""Reading one block's weights from ``.npz`` or ``.json`` files, with strict validation.

Keys: ``W_up`` (n×d), ``W_down`` (d×n), ``W_gate`` (n×d, gated activations only), and the
optional ``b_up`` (n), ``b_down`` (d), ``A_skip`` (d×d; any matrix for one block). A ``.json``
file may also be in the Lean checker's format: ``format`` ("absorb-check/1") and an index set
``S`` to check first or a dual certificate ``Y`` (:func:`load_check_input`).

``.json`` entries are numbers or exact rationals written as strings (``"p/q"``, ``"-3"``,
``"0.25"``). A file is read in exact arithmetic when it contains a string entry or only
integers; then every entry becomes a ``fractions.Fraction`` (a JSON float by the decimal it is
written as) and the block carries the rational originals in ``Block.exact``.
"""

from __future__ import annotations

import json
import math
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from absorb.activations import Activation
from absorb.blocks import Array, Block, ExactWeights, ObjectArray
from absorb.errors import AbsorbError

KEYS = ("W_up", "W_down", "W_gate", "b_up", "b_down", "A_skip")
REQUIRED = ("W_up", "W_down")
MAX_FILE_BYTES = {".npz": 4 << 30, ".json": 256 << 20}
MAX_ENTRIES = 1 << 28  # per array: 2^28 float64 entries are 2 GiB
# A skip matrix with a larger 2-norm condition number is treated as singular: inverting it
# (the reduction theorem) would lose every significant digit of the double-precision weights.
MAX_CONDITION = 1e12

Scalar = int | float | Fraction
# zipfile signals damaged or unsupported archives through many types (encryption is a
# RuntimeError, unknown compression or zip version a NotImplementedError, bad deflate data
# zlib.error): every one of them means "not a readable .npz file".
NPZ_ERRORS = (ValueError, zipfile.BadZipFile, EOFError, OSError, NotImplementedError,
              RuntimeError, zlib.error, struct.error)


def rational_rank(M: ObjectArray) -> int:
    """The exact rank of a matrix of rationals (:func:`absorb.exact.rank`; kept here for the
    callers that import it from this module)."""
    from absorb.exact import rank

    return rank(M)


def _scalar(value: object, key: str) -> Scalar:
    if isinstance(value, bool):
        raise AbsorbError(f"{key}: non-numeric entry {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not np.isfinite(value):
            raise AbsorbError(f"{key} contains NaN or Inf")
        return value
    if isinstance(value, str):
        try:
            return Fraction(value.strip())
        except (ValueError, ZeroDivisionError):
            raise AbsorbError(f"{key}: {value!r} is not a number or a rational 'p/q'") from None
    raise AbsorbError(f"{key}: non-numeric entry {value!r}")


def _nested(value: object, key: str, depth: int = 0) -> tuple[tuple[int, ...], list[Scalar]]:
    """Shape and row-major entries of a JSON scalar, vector or matrix (rectangular only)."""
    if not isinstance(value, list):
        return (), [_scalar(value, key)]
    if depth == 2:
        raise AbsorbError(f"{key} has more than 2 dimensions")
    parts = [_nested(v, key, depth + 1) for v in value]
    shapes = {shape for shape, _ in parts}
    if len(shapes) > 1:
        raise AbsorbError(f"{key} is ragged (rows of different lengths)")
    inner = shapes.pop() if shapes else ()
    return (len(value), *inner), [x for _, flat in parts for x in flat]


Parsed = dict[str, tuple[tuple[int, ...], list[Scalar]]]


def parse_json_block(data: object, where: str) -> Parsed:
    """Shapes and entries of one block's JSON object (key rules of :func:`_check_keys`)."""
    if not isinstance(data, dict):
        raise AbsorbError(f"{where}: expected a JSON object with keys {', '.join(KEYS)}")
    _check_keys(where, data.keys())
    return {k: _nested(v, k) for k, v in data.items()}


def json_is_exact(blocks: list[Parsed]) -> bool:
    """Exact arithmetic when some entry is a string rational, or every entry is an integer."""
    entries = [x for parsed in blocks for _, flat in parsed.values() for x in flat]
    return all(isinstance(x, int) for x in entries) or any(
        isinstance(x, Fraction) for x in entries
    )


def json_arrays(parsed: Parsed, exact: bool
                ) -> tuple[dict[str, Array], dict[str, ObjectArray] | None]:
    """Float arrays, and with ``exact`` the rational originals, of one parsed block."""
    floats: dict[str, Array] = {}
    rationals: dict[str, ObjectArray] = {}
    for k, (shape, flat) in parsed.items():
        if exact:
            # repr of a float is the shortest decimal that reads back to it: the number as written
            q = [x if isinstance(x, Fraction) else Fraction(repr(x)) for x in flat]
            rationals[k] = np.array(q, dtype=object).reshape(shape)
        try:
            floats[k] = np.array([float(x) for x in flat], dtype=np.float64).reshape(shape)
        except OverflowError:
            raise AbsorbError(f"{k}: an entry is too large for double precision") from None
    return floats, (rationals if exact else None)


def read_json_data(path: Path) -> object:
    """The decoded JSON document of ``path`` (bad UTF-8 or JSON: AbsorbError)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AbsorbError(f"{path}: not valid JSON ({exc})") from None


@dataclass(frozen=True)
class CheckerKeys:
    """The keys of the Lean checker's format beside the weights (``absorb-check/1``): an index
    set ``S`` to check first, or a dual certificate ``Y`` (exact rationals)."""

    S: tuple[int, ...] | None = None
    Y: ObjectArray | None = None


CHECKER_FORMAT = "absorb-check/1"


def _checker_keys(data: dict[str, object], path: Path) -> CheckerKeys:
    """Remove and validate ``format``, ``S`` and ``Y`` from a JSON weights object."""
    fmt = data.pop("format", CHECKER_FORMAT)
    if fmt != CHECKER_FORMAT:
        raise AbsorbError(f"{path}: format {fmt!r} is not {CHECKER_FORMAT!r}")
    S_raw, Y_raw = data.pop("S", None), data.pop("Y", None)
    if S_raw is not None and Y_raw is not None:
        raise AbsorbError(f"{path}: give S or Y, not both")
    S = None
    if S_raw is not None:
        if not isinstance(S_raw, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in S_raw):
            raise AbsorbError(f"{path}: S must be a list of non-negative integers")
        if len(set(S_raw)) != len(S_raw):
            raise AbsorbError(f"{path}: S repeats an index")
        S = tuple(S_raw)
    Y = None
    if Y_raw is not None:
        shape, flat = _nested(Y_raw, "Y")
        if len(shape) != 2:
            raise AbsorbError(f"{path}: Y must be a d x d matrix")
        q = [x if isinstance(x, Fraction) else Fraction(repr(x)) if isinstance(x, float)
             else Fraction(x) for x in flat]
        Y = np.array(q, dtype=object).reshape(shape)
    return CheckerKeys(S, Y)


def _read_json(path: Path) -> tuple[dict[str, Array], dict[str, ObjectArray] | None,
                                    CheckerKeys]:
    data = read_json_data(path)
    extra = _checker_keys(data, path) if isinstance(data, dict) else CheckerKeys()
    parsed = parse_json_block(data, str(path))
    return (*json_arrays(parsed, json_is_exact([parsed])), extra)


def _npz_headers(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype[np.generic]]]:
    """Shape and dtype of every array, read from the .npy headers before any data is loaded
    (a compressed archive can be far smaller than the arrays it holds)."""
    headers = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            with archive.open(member) as fh:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(fh)
            headers[member.removesuffix(".npy")] = (shape, dtype)
    return headers


def read_npz(path: Path, check_keys: Callable[[Path, object], None] | None = None
             ) -> dict[str, Array]:
    """Every array of an ``.npz`` file as float64, after checking keys (``check_keys``, default
    the single-block rule), dtypes and sizes from the headers; pickles are refused."""
    try:
        headers = _npz_headers(path)
        (check_keys or _check_keys)(path, headers)
        for k, (shape, dtype) in headers.items():
            if dtype.hasobject:
                raise AbsorbError(f"{path}: {k} is an object array (refused)")
            if dtype.kind not in "biuf":
                raise AbsorbError(f"{k}: non-numeric array (dtype {dtype})")
            size = math.prod(shape)
            if size > MAX_ENTRIES:
                raise AbsorbError(f"{k} has {size} entries, more than the limit {MAX_ENTRIES}")
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k].astype(np.float64) for k in npz.files}
    except NPZ_ERRORS as exc:
        raise AbsorbError(f"{path}: not a readable .npz file ({exc})") from None


def _check_keys(path: Path | str, keys: object) -> None:
    names = set(keys)  # type: ignore[call-overload]
    unexpected = sorted(names - set(KEYS))
    if unexpected:
        raise AbsorbError(f"{path}: unexpected keys {', '.join(unexpected)} (allowed: "
                          f"{', '.join(KEYS)})")
    missing = [k for k in REQUIRED if k not in names]
    if missing:
        raise AbsorbError(f"{path}: missing keys {', '.join(missing)}")


def skip_is_invertible(A: Array, exact: ObjectArray | None = None) -> bool:
    """A invertible: exact rank d for rationals, condition number < MAX_CONDITION for floats."""
    if exact is not None:
        return rational_rank(exact) == int(A.shape[0])
    return bool(np.linalg.cond(A) < MAX_CONDITION)


def checked_path(path: str | Path) -> tuple[Path, str]:
    """``path`` and its lower-case suffix, after the format, existence and size rules."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MAX_FILE_BYTES:
        raise AbsorbError(f"{path}: unknown weights format {suffix or '(none)'!r} "
                          "(use .npz or .json)")
    if path.is_dir():
        raise AbsorbError(f"{path}: is a directory, not a file")
    if not path.exists():
        raise AbsorbError(f"{path}: no such file")
    if not path.is_file():
        raise AbsorbError(f"{path}: not a regular file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES[suffix]:
        raise AbsorbError(f"{path}: {size} bytes, more than the limit {MAX_FILE_BYTES[suffix]}")
    return path, suffix


def block_from_arrays(floats: dict[str, Array], rationals: dict[str, ObjectArray] | None,
                      activation: Activation, *, invertible_skip: bool = True) -> Block:
    """The skip block of one set of arrays: finite entries, shapes (``Block``), and with
    ``invertible_skip`` an invertible A (one block alone needs only A ≠ 0, or nothing)."""
    for k, arr in floats.items():
        if not np.all(np.isfinite(arr)):
            raise AbsorbError(f"{k} contains NaN or Inf")
    exact = None
    if rationals is not None:
        exact = ExactWeights(rationals["W_up"], rationals["W_down"], rationals.get("W_gate"),
                             rationals.get("b_up"), rationals.get("b_down"),
                             rationals.get("A_skip"))
    block = Block(activation, floats["W_up"], floats["W_down"], W_gate=floats.get("W_gate"),
                  b_up=floats.get("b_up"), b_down=floats.get("b_down"),
                  A_skip=floats.get("A_skip"), exact=exact)
    if invertible_skip and block.A_skip is not None and not skip_is_invertible(
        block.A_skip, None if exact is None else exact.A_skip
    ):
        raise AbsorbError(f"A_skip is singular (exact rank < d, or condition number >= "
                          f"{MAX_CONDITION:.0e})")
    return block


def load_check_input(path: str | Path, activation: Activation) -> tuple[Block, CheckerKeys]:
    """The skip block stored in ``path`` (``.npz`` or ``.json``) with the given activation,
    and the checker keys ``S``/``Y`` of a JSON file (a singular skip matrix is accepted: the
    theorems that need more than A ≠ 0 say so in the verdict)."""
    path, suffix = checked_path(path)
    try:
        if suffix == ".json":
            floats, rationals, extra = _read_json(path)
        else:
            floats, rationals, extra = read_npz(path), None, CheckerKeys()
    except PermissionError:
        raise AbsorbError(f"{path}: permission denied") from None
    block = block_from_arrays(floats, rationals, activation, invertible_skip=False)
    if extra.S is not None and any(i >= block.n for i in extra.S):
        raise AbsorbError(f"{path}: S holds an index >= n = {block.n}")
    if extra.Y is not None and extra.Y.shape != (block.d, block.d):
        raise AbsorbError(f"{path}: Y has shape {extra.Y.shape}, expected {(block.d, block.d)}")
    return block, extra


def load_block(path: str | Path, activation: Activation) -> Block:
    """The skip block stored in ``path`` (see :func:`load_check_input`)."""
    return load_check_input(path, activation)[0]
