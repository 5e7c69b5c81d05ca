"""JSON output: any result of the package as plain JSON values, and written one line at a time.

Shared by the commands (``--json``) and the scan's layer cache, so it sits at the bottom layer.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from absorb.rationals import RationalMatrix, rational_text


def plain(obj: Any, matrix: Callable[[RationalMatrix], Any] | None = None) -> Any:
    """JSON-ready copy: numpy values to Python, Fractions to "p/q", non-finite floats to None,
    certificate matrices to their "p/q" strings (or to ``matrix(m)`` when given)."""
    if isinstance(obj, dict):
        return {str(k): plain(v, matrix) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v, matrix) for v in obj]
    if isinstance(obj, RationalMatrix):
        return obj.to_json() if matrix is None else matrix(obj)
    if isinstance(obj, np.ndarray):
        return plain(obj.tolist())
    if isinstance(obj, np.generic):
        return plain(obj.item())
    if isinstance(obj, Fraction):
        return rational_text(obj)
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_json(result: Any, stream: TextIO) -> None:
    """``result`` as one line of JSON, its certificate matrices serialized one at a time.

    A d = 4096 certificate is 16.7M "p/q" strings; building every layer's at once would hold
    all of them. Each :class:`RationalMatrix` is replaced by a placeholder, the rest encoded,
    and the matrices are encoded and written in place of their placeholders in turn.
    """
    matrices: list[RationalMatrix] = []
    # a per-call nonce: no string of the result can be mistaken for a placeholder
    tag = "absorb-matrix-" + secrets.token_hex(8)

    def slot(m: RationalMatrix) -> str:
        matrices.append(m)
        return f"\x00{tag}-{len(matrices) - 1}\x00"

    placeholder = re.compile(r'"\\u0000' + tag + r'-(\d+)\\u0000"')
    parts = placeholder.split(json.dumps(plain(result, slot), allow_nan=False))
    stream.write(parts[0])
    for index, rest in zip(parts[1::2], parts[2::2], strict=True):
        stream.write(json.dumps(matrices[int(index)].to_json()))
        stream.write(rest)
    stream.write("\n")
