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

from absorb.errors import AbsorbError


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


def _probe(folder: Path) -> None:
    """Create and remove a file in ``folder``: the only reliable test of writability (the
    permission bits say nothing for root, a read-only mount or a full quota)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".absorb-probe-", dir=folder)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise AbsorbError(f"{folder}: cannot write there ({exc.strerror or exc}); nothing "
                          "was computed or written") from None


def ensure_writable_folder(out: str | Path) -> Path:
    """Refuse, before any work, an output folder ``out`` that cannot be written: ``out`` must
    be a folder or not exist yet; the folders a writer touches (``out`` itself when it exists,
    and the parent where a temporary folder is made and renamed into place — its nearest
    existing ancestor when the parent is still to be created) must accept a new file."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise AbsorbError(f"{out} exists and is not a folder")
    parent = out.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise AbsorbError(f"{parent} is not a folder; cannot create {out} inside it")
    for folder in ([out] if out.is_dir() else []) + [parent]:
        _probe(folder)
    return out


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
