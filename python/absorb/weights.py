"""Reading one block's weights from ``.npz`` or ``.json`` files, with strict validation.

Keys: ``W_up`` (n×d), ``W_down`` (d×n), ``W_gate`` (n×d, gated activations only), and the
optional ``b_up`` (n), ``b_down`` (d), ``A_skip`` (d×d; any matrix for one block). A ``.json``
file may also be in the Lean checker's format: ``format`` ("absorb-check/2", with the
``activation``; older files "absorb-check/1") and an index set ``S`` to check first or a dual
certificate ``Y`` (:func:`load_check_input`, :func:`read_check_document`).

``.json`` entries follow the number grammar shared with the Lean checker
(:mod:`absorb.numbers`): a number literal is the exact rational it spells (``0.1`` is 1/10,
``1e-400`` is 10⁻⁴⁰⁰) and a string is ``"p/q"`` or ``"p"``. A JSON block is therefore always
exact: it carries its rational originals in ``Block.exact`` beside the float arrays (each entry
rounded to nearest), so exact input never passes through float on the way to the verdict.
``.npz`` arrays are read exactly in the format their dtype names (:mod:`absorb.formats`):
integers beyond 2⁵³ and long doubles beyond float64 keep their exact values the same way.
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
from typing import cast

import numpy as np

from absorb.activations import CATALOG, Activation
from absorb.blocks import Array, Block, ExactWeights, ObjectArray
from absorb.errors import AbsorbError
from absorb.exact import as_fractions
from absorb.formats import RATIONAL, StoredArray, coarsest, float_view, format_name, stored_array
from absorb.numbers import entry, loads

KEYS = ("W_up", "W_down", "W_gate", "b_up", "b_down", "A_skip")
REQUIRED = ("W_up", "W_down")
MAX_FILE_BYTES = {".npz": 4 << 30, ".json": 256 << 20}
MAX_ENTRIES = 1 << 28  # per array: 2^28 float64 entries are 2 GiB
# A skip matrix with a larger 2-norm condition number is treated as singular: inverting it
# (the reduction theorem) would lose every significant digit of the double-precision weights.
MAX_CONDITION = 1e12

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


def _row(value: list[object], where: str) -> list[Fraction]:
    """The entries of one innermost list; on a refusal, the message names the exact entry."""
    try:
        return [entry(v, where) for v in value]
    except AbsorbError:
        for j, v in enumerate(value):
            entry(v, f"{where}[{j}]")
        raise


def _nested(value: object, key: str) -> tuple[tuple[int, ...], list[Fraction]]:
    """Shape and row-major exact entries of a JSON scalar, vector or matrix (rectangular only;
    nesting beyond a matrix is refused)."""
    if not isinstance(value, list):
        return (), [entry(value, key)]
    if not any(isinstance(v, list) for v in value):
        return (len(value),), _row(value, key)
    if not all(isinstance(v, list) for v in value):
        raise AbsorbError(f"{key} mixes numbers and lists")
    rows = cast(list[list[object]], value)
    if any(isinstance(x, list) for row in rows for x in row):
        raise AbsorbError(f"{key} is nested deeper than a matrix (more than 2 dimensions)")
    if len({len(row) for row in rows}) > 1:
        raise AbsorbError(f"{key} is ragged (rows of different lengths)")
    flat = [x for i, row in enumerate(rows) for x in _row(row, f"{key}[{i}]")]
    return (len(rows), len(rows[0])), flat


Parsed = dict[str, tuple[tuple[int, ...], list[Fraction]]]


def parse_json_block(data: object, where: str) -> Parsed:
    """Shapes and exact entries of one block's JSON object (key rules of :func:`_check_keys`)."""
    if not isinstance(data, dict):
        raise AbsorbError(f"{where}: expected a JSON object with keys {', '.join(KEYS)}")
    _check_keys(where, data.keys())
    try:
        return {k: _nested(v, k) for k, v in data.items()}
    except AbsorbError as exc:
        raise AbsorbError(f"{where}: {exc}") from None


def json_arrays(parsed: Parsed) -> dict[str, StoredArray]:
    """The stored arrays of one parsed block: a JSON document always denotes exact rationals
    (:mod:`absorb.numbers`), decided on those; the float view (each entry rounded to nearest,
    ±inf beyond the float range) is derived from them once."""
    out: dict[str, StoredArray] = {}
    for k, (shape, flat) in parsed.items():
        rationals: ObjectArray = np.array(flat, dtype=object).reshape(shape)
        out[k] = StoredArray(RATIONAL, float_view(rationals), rationals)
    return out


def read_json_data(path: Path) -> object:
    """The JSON document of ``path`` decoded under the number grammar (:func:`absorb.numbers.loads`;
    bad UTF-8, JSON or numbers: AbsorbError naming the file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise AbsorbError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return loads(text)
    except AbsorbError as exc:
        raise AbsorbError(f"{path}: {exc}") from None


#: The Lean checker's formats: /2 records the activation and allows biases; /1 (older files)
#: holds an ungated block without them.
CHECKER_FORMATS = ("absorb-check/1", "absorb-check/2")
CHECKER_FORMAT = CHECKER_FORMATS[-1]
#: The activations whose theorem chain the Lean library can justify (absorb-check/2): the
#: catalog entries with a ``checker_name``, in catalog order.
CHECKER_ACTIVATIONS: tuple[str, ...] = tuple(
    a.checker_name for a in CATALOG.values() if a.checker_name is not None)


@dataclass(frozen=True)
class CheckerKeys:
    """The keys of the Lean checker's format beside the weights: the ``activation`` it records
    (absorb-check/2), an index set ``S`` to check first, or a dual certificate ``Y``."""

    S: tuple[int, ...] | None = None
    Y: ObjectArray | None = None
    activation: str | None = None


def _index_set(S_raw: object, where: str) -> tuple[int, ...]:
    if not isinstance(S_raw, list) or not all(
            type(i) is int and i >= 0 for i in S_raw):  # bool and Fraction are not indices
        raise AbsorbError(f"{where}: S must be a list of non-negative integers")
    if len(set(S_raw)) != len(S_raw):
        raise AbsorbError(f"{where}: S repeats an index")
    return tuple(cast(list[int], S_raw))


def _checker_keys(data: dict[str, object], where: str) -> CheckerKeys:
    """Remove and validate ``format``, ``activation``, ``S`` and ``Y`` from a JSON object.

    Without ``format`` (a plain weights file) S or Y may be given; absorb-check/2 requires
    ``activation`` and exactly one of them (checked in :func:`read_check_document`)."""
    fmt = data.pop("format", None)
    if fmt is not None and fmt not in CHECKER_FORMATS:
        raise AbsorbError(f"{where}: format {fmt!r} is not one of {', '.join(CHECKER_FORMATS)}")
    if fmt == "absorb-check/2" and "activation" not in data:
        raise AbsorbError(f"{where}: format {CHECKER_FORMAT!r} needs the key activation")
    activation = data.pop("activation", None)
    if fmt == "absorb-check/2":
        if activation not in CHECKER_ACTIVATIONS:
            got = json.dumps(activation, default=str)
            raise AbsorbError(f"{where}: activation must be one of "
                              f"{', '.join(CHECKER_ACTIVATIONS)}, got {got}")
    elif activation is not None:
        raise AbsorbError(f"{where}: the key activation belongs to format {CHECKER_FORMAT!r}")
    elif fmt is not None and any(k in data for k in ("b_up", "b_down")):
        raise AbsorbError(f"{where}: format {fmt!r} has no biases")
    if fmt is not None and "W_gate" in data:
        raise AbsorbError(f"{where}: unexpected keys W_gate (format {fmt!r} holds ungated "
                          "blocks)")
    has_S, has_Y = "S" in data, "Y" in data
    if has_S and has_Y:
        raise AbsorbError(f"{where}: give S or Y, not both")
    if fmt == "absorb-check/2" and not (has_S or has_Y):
        raise AbsorbError(f"{where}: format {CHECKER_FORMAT!r} needs S or Y")
    S = _index_set(data.pop("S"), where) if has_S else None
    Y = None
    if has_Y:
        try:
            shape, flat = _nested(data.pop("Y"), "Y")
        except AbsorbError as exc:
            raise AbsorbError(f"{where}: {exc}") from None
        if len(shape) != 2:
            raise AbsorbError(f"{where}: Y must be a d x d matrix")
        Y = np.array(flat, dtype=object).reshape(shape)
    return CheckerKeys(S, Y, activation)


def check_shapes(parsed: Parsed, keys: CheckerKeys, where: str) -> tuple[int, int]:
    """(d, n) of a parsed block after the shape rules: W_up n×d (n, d ≥ 1), W_down and W_gate
    to match, b_up (n), b_down (d), A_skip and Y d×d, indices of S below n."""
    up = parsed["W_up"][0]
    if len(up) != 2:
        raise AbsorbError(f"{where}: W_up must be a matrix (n x d), got {len(up)} dimensions")
    n, d = up
    if n == 0 or d == 0:
        raise AbsorbError(f"{where}: W_up has a zero size ({n}x{d}); need n >= 1 and d >= 1")
    want = {"W_down": (d, n), "W_gate": (n, d), "b_up": (n,), "b_down": (d,),
            "A_skip": (d, d)}
    shapes = {k: shape for k, (shape, _) in parsed.items()}
    if keys.Y is not None:
        shapes["Y"] = keys.Y.shape
        want["Y"] = (d, d)
    for k, shape in shapes.items():
        if k in want and shape != want[k]:
            raise AbsorbError(f"{where}: {k} has shape {'x'.join(map(str, shape)) or 'scalar'},"
                              f" expected {'x'.join(map(str, want[k]))}")
    if keys.S is not None and any(i >= n for i in keys.S):
        raise AbsorbError(f"{where}: S holds an index >= n = {n}")
    return d, n


@dataclass(frozen=True)
class CheckDocument:
    """A document of the Lean checker's format absorb-check/2, every entry an exact rational:
    the ``activation``, the weights (``W_up``, ``W_down``, optional ``A_skip`` — absent is the
    identity —, ``b_up``, ``b_down``) and exactly one of ``S`` and ``Y``."""

    activation: str
    weights: dict[str, ObjectArray]
    S: tuple[int, ...] | None
    Y: ObjectArray | None
    d: int
    n: int


def read_check_document(text: str, where: str = "document") -> CheckDocument:
    """Decode and validate an absorb-check/2 document exactly as the Lean checker does (same
    number grammar, same refusals); no entry passes through float."""
    try:
        data = loads(text)
    except AbsorbError as exc:
        raise AbsorbError(f"{where}: {exc}") from None
    if not isinstance(data, dict):
        raise AbsorbError(f"{where}: expected a JSON object")
    if data.get("format") != CHECKER_FORMAT:
        raise AbsorbError(f"{where}: format must be {CHECKER_FORMAT!r}, got "
                          f"{json.dumps(data.get('format'), default=str)}")
    data = dict(data)
    keys = _checker_keys(data, where)
    parsed = parse_json_block(data, where)
    d, n = check_shapes(parsed, keys, where)
    weights = {k: np.array(flat, dtype=object).reshape(shape)
               for k, (shape, flat) in parsed.items()}
    assert keys.activation is not None  # absorb-check/2 requires it (_checker_keys)
    return CheckDocument(keys.activation, weights, keys.S, keys.Y, d, n)




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


def read_npz(path: Path, check_keys: Callable[[Path, object], None] | None = None,
             describe: Callable[[str], str] = str) -> dict[str, StoredArray]:
    """Every array of an ``.npz`` file as stored, exactly (:func:`absorb.formats.stored_array`:
    the format is the member's dtype, the float64 view derived once, the exact values kept
    where the view is not them), after checking keys (``check_keys``, default the
    single-block rule), dtypes and sizes from the headers; pickles are refused. A refusal
    names the array by ``describe(key)``."""
    try:
        headers = _npz_headers(path)
        (check_keys or _check_keys)(path, headers)
        for k, (shape, dtype) in headers.items():
            format_name(dtype, describe(k))
            size = math.prod(shape)
            if size > MAX_ENTRIES:
                raise AbsorbError(f"{describe(k)} has {size} entries, more than the limit "
                                  f"{MAX_ENTRIES}")
        with np.load(path, allow_pickle=False) as npz:
            return {k: stored_array(npz[k], describe(k)) for k in npz.files}
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


def block_from_arrays(arrays: dict[str, StoredArray], activation: Activation, *,
                      invertible_skip: bool = True) -> Block:
    """The skip block of one set of stored arrays: shapes (``Block``), its storage format (the
    coarsest of W_up's and W_down's), the exact values beside the float views when any array
    needs them, and with ``invertible_skip`` an invertible A (one block alone needs only A ≠ 0,
    or nothing)."""
    floats = {k: a.view for k, a in arrays.items()}
    exact = None
    if any(a.exact is not None for a in arrays.values()):
        # floats are dyadic rationals: the arrays the view holds exactly join the originals
        q = {k: as_fractions(a.view) if a.exact is None else a.exact
             for k, a in arrays.items()}
        exact = ExactWeights(q["W_up"], q["W_down"], q.get("W_gate"), q.get("b_up"),
                             q.get("b_down"), q.get("A_skip"))
    block = Block(activation, floats["W_up"], floats["W_down"], W_gate=floats.get("W_gate"),
                  b_up=floats.get("b_up"), b_down=floats.get("b_down"),
                  A_skip=floats.get("A_skip"), exact=exact,
                  dtype=coarsest([arrays["W_up"].format, arrays["W_down"].format]))
    if invertible_skip and block.A_skip is not None and not skip_is_invertible(
        block.A_skip, None if exact is None else exact.A_skip
    ):
        raise AbsorbError(f"A_skip is singular (exact rank < d, or condition number >= "
                          f"{MAX_CONDITION:.0e})")
    return block


def load_check_input(path: str | Path, activation: Activation) -> tuple[Block, CheckerKeys]:
    """The skip block stored in ``path`` (``.npz`` or ``.json``) with the given activation,
    and the checker keys ``S``/``Y`` of a JSON file (a singular skip matrix is accepted: the
    theorems that need more than A ≠ 0 say so in the verdict). A checker file that records
    its activation must record the given one."""
    path, suffix = checked_path(path)
    try:
        if suffix == ".json":
            return json_check_input(read_json_data(path), path, activation)
        arrays = read_npz(path)
    except PermissionError:
        raise AbsorbError(f"{path}: permission denied") from None
    return block_from_arrays(arrays, activation, invertible_skip=False), CheckerKeys()


def json_check_input(data: object, path: Path, activation: Activation
                     ) -> tuple[Block, CheckerKeys]:
    """:func:`load_check_input` of a ``.json`` file already decoded into ``data`` (by
    :func:`read_json_data`; a caller that looks at the document first decodes it once)."""
    keys = CheckerKeys()
    if isinstance(data, dict):
        data = dict(data)
        keys = _checker_keys(data, str(path))
    parsed = parse_json_block(data, str(path))
    check_shapes(parsed, keys, str(path))
    arrays = json_arrays(parsed)
    if keys.activation is not None and keys.activation != activation.name:
        raise AbsorbError(f"{path}: the file is for activation {keys.activation}, not "
                          f"{activation.name}")
    return block_from_arrays(arrays, activation, invertible_skip=False), keys


def load_block(path: str | Path, activation: Activation) -> Block:
    """The skip block stored in ``path`` (see :func:`load_check_input`)."""
    return load_check_input(path, activation)[0]
