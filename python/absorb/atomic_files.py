"""Every output path in one place: probed before the work, written atomically.

* Probing (:func:`ensure_writable_file`, :func:`ensure_writable_folder`,
  :func:`distinct_outputs`): before any work, a command checks each output it was given —
  not under a file, not a dangling symbolic link, not a folder where a file goes (or the
  reverse), in a folder that accepts a new file, never an existing file without ``--force``,
  and no two outputs on one path — and refuses with one line (exit 2), nothing done.
* Writing (:func:`write_atomic`): the content goes to a temporary file in the same folder, is
  flushed to disk, and replaces the target in one ``os.replace`` (atomic on POSIX and
  Windows); the temporary file is removed on any exception, Ctrl-C included. Several files
  that belong together (a report) are renamed into place under :func:`interrupts_deferred`,
  so that Ctrl-C leaves the old set or the new one, never a mix.
* SIGTERM (:func:`terminate_as_interrupt`, installed by the command line) raises
  ``KeyboardInterrupt`` as Ctrl-C does, so the same clean-up runs: no temporary is left.
"""

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


def _no_dangling_link(path: Path) -> None:
    if os.path.islink(path) and not path.exists():
        raise AbsorbError(f"{path} is a symbolic link to nothing ({os.readlink(path)}); "
                          "refused (nothing was computed or written)")


def _existing_parent(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (AbsorbError when it is not a folder: an
    output under a file)."""
    parent = path.absolute().parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    _no_dangling_link(parent)
    if not parent.is_dir():
        raise AbsorbError(f"{parent} is not a folder; cannot create {path} inside it")
    return parent


def ensure_writable_folder(out: str | Path) -> Path:
    """Refuse, before any work, an output folder ``out`` that cannot be written: ``out`` must
    be a folder or not exist yet (a dangling link is refused); the folders a writer touches
    (``out`` itself when it exists, and the parent where a temporary folder is made and
    renamed into place — its nearest existing ancestor when the parent is still to be
    created) must accept a new file."""
    out = Path(out)
    _no_dangling_link(out)
    if out.exists() and not out.is_dir():
        raise AbsorbError(f"{out} exists and is not a folder")
    parent = _existing_parent(out)
    for folder in ([out] if out.is_dir() else []) + [parent]:
        _probe(folder)
    return out


def ensure_writable_file(path: str | Path, *, force: bool, what: str) -> Path:
    """Refuse, before any work, an output file ``path`` (option ``what``) that cannot be
    written: a folder, a dangling link, something under a file, a folder that does not exist
    or does not accept a new file, or an existing file without ``force``."""
    target = Path(path)
    _no_dangling_link(target)
    if target.is_dir():
        raise AbsorbError(f"{what} {target}: is a folder, not a file")
    if target.exists() and not force:
        raise AbsorbError(f"{what} {target}: exists; pass --force to overwrite it")
    if not target.absolute().parent.is_dir():
        parent = _existing_parent(target)
        raise AbsorbError(f"{what} {target}: no folder {target.absolute().parent} "
                          f"(nearest is {parent})")
    _probe(target.absolute().parent)
    return target


def distinct_outputs(outputs: dict[str, str | Path | None]) -> None:
    """Refuse two options (name → path) that name the same path: one would overwrite the
    other. Paths are compared after resolving symbolic links, and by file identity where
    both exist."""
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if path is None:
            continue
        real = os.path.realpath(path)
        for other, where in seen.items():
            if real == where or (os.path.exists(real) and os.path.exists(where)
                                 and os.path.samefile(real, where)):
                raise AbsorbError(f"{other} and {option} name the same path {path}: one would "
                                  "overwrite the other (nothing was computed or written)")
        seen[option] = real


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def terminate_as_interrupt() -> None:
    """Make SIGTERM raise ``KeyboardInterrupt`` in the main thread, as Ctrl-C does: every
    writer's clean-up (temporary files and folders removed) then runs for both."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) and SIGTERM while the block runs and raise ``KeyboardInterrupt``
    once it has finished: for a short sequence of renames that must happen all together.
    Outside the main thread (where Python cannot install signal handlers) the block runs
    unprotected."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise KeyboardInterrupt
