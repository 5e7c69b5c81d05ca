"""Finding ``lake`` and running toolchain commands: own process group, timeout, clean kill."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from absorb.errors import ToolMissing

INSTALL_HINT = (
    "no Lean toolchain found (`lake` is neither on PATH nor in ~/.elan/bin); install elan with "
    "`curl https://raw.githubusercontent.com/leanprover/elan/master/elan-init.sh -sSf | sh`, "
    "then run `lake exe cache get` in the repository"
)




@dataclass(frozen=True)
class ProcessResult:
    """Outcome of one toolchain command (stdout and stderr merged, in order)."""

    command: tuple[str, ...]
    returncode: int | None  # None when killed after the timeout
    output: str
    timed_out: bool
    seconds: float


def find_lake() -> Path | None:
    """``lake`` on PATH, else elan's default ``~/.elan/bin/lake``, else None."""
    on_path = shutil.which("lake")
    if on_path:
        return Path(on_path)
    default = Path.home() / ".elan" / "bin" / "lake"
    return default if default.is_file() and os.access(default, os.X_OK) else None


def _kill_group(proc: subprocess.Popen[str], grace: float) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            # The leader is gone; still sweep children that ignored SIGTERM.
            if sig == signal.SIGTERM:
                os.killpg(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            return


def run_process(
    command: Sequence[str],
    cwd: Path,
    timeout: float,
    *,
    grace: float = 5.0,
    env: Mapping[str, str] | None = None,
) -> ProcessResult:
    """Run ``command`` in its own process group (session) with a timeout (``env``: the
    child's environment, default this process's).

    On timeout the whole group gets SIGTERM, then SIGKILL after ``grace`` seconds, and the
    result says ``timed_out``; on KeyboardInterrupt the group is killed the same way and the
    interrupt propagates.  A missing executable raises :class:`ToolMissing`.
    """
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
            env=None if env is None else dict(env),
        )
    except FileNotFoundError:
        raise ToolMissing(f"{command[0]}: not found; {INSTALL_HINT}") from None
    try:
        output, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc, grace)
        output, _ = proc.communicate()
        timed_out = True
    except KeyboardInterrupt:
        _kill_group(proc, grace)
        proc.communicate()
        raise
    return ProcessResult(
        tuple(command),
        None if timed_out else proc.returncode,
        output or "",
        timed_out,
        time.monotonic() - start,
    )
