"""Writing bfloat16 safetensors files, which ``safetensors.numpy`` cannot (numpy lacks bf16).

Used to make test and benchmark checkpoints in the storage format of most LLM releases.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from numpy.typing import NDArray


def save_bf16(tensors: Mapping[str, NDArray[np.floating]], path: str | Path) -> None:
    """Write ``tensors`` as BF16: the high 16 bits of each float32 value (rounding toward
    zero), little-endian, after the 8-byte header length and the JSON header."""
    header: dict[str, object] = {}
    offset = 0
    for key, arr in tensors.items():
        size = 2 * arr.size
        header[key] = {"dtype": "BF16", "shape": list(arr.shape),
                       "data_offsets": [offset, offset + size]}
        offset += size
    head = json.dumps(header).encode()
    with Path(path).open("wb") as fh:
        fh.write(struct.pack("<Q", len(head)) + head)
        for arr in tensors.values():
            bits = np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32) >> 16
            fh.write(bits.astype("<u2").tobytes())
