"""Writing files so that an interruption (Ctrl-C, a crash, a full disk) never leaves a
half-written one: the content goes to a temporary file in the same folder, is flushed to
disk, and replaces the target in one ``os.replace`` (atomic on POSIX and Windows).  Several
files that belong together (a report) are renamed into place under
:func:`interrupts_deferred`, so that Ctrl-C leaves the old set or the new one, never a mix."""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType


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


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) while the block runs and raise ``KeyboardInterrupt`` once it has
    finished: for a short sequence of renames that must happen all together.  Outside the main
    thread (where Python cannot install signal handlers) the block runs unprotected."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        raise KeyboardInterrupt
