"""Writing files so that an interruption (Ctrl-C, a crash, a full disk) never leaves a
half-written one: the content goes to a temporary file in the same folder, is flushed to
disk, and replaces the target in one ``os.replace`` (atomic on POSIX and Windows)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: str | Path, data: str | bytes, *, mode: int = 0o644) -> Path:
    """Write ``data`` (text as UTF-8) to ``path``: either the old file stays or the new one
    is complete.  The parent folder must exist; a folder at ``path`` is refused."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:  # KeyboardInterrupt included: the temporary file must not stay
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path
