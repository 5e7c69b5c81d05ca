"""Up-front resource checks: refuse a job whose predicted memory or time is out of reach.

A command predicts what a job needs (peak bytes, floating-point operations) from its sizes
alone and calls :func:`require` before allocating anything, so that an absurd option
(``--samples 1e8``, ``--width-factor 1e9``) ends in one line naming what it would need, not in
a ``MemoryError``, a swap storm or a run of days.

Time is predicted as ``flops / FLOPS_PER_SECOND``: a deliberately optimistic throughput for
float64 NumPy on a few cores, so a refusal is never a false alarm of a slow estimate; a job is
refused when even that optimistic time exceeds :data:`MAX_SECONDS`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from absorb.errors import AbsorbError

#: Optimistic sustained float64 throughput (flop/s) used to turn operation counts into time.
FLOPS_PER_SECOND = 2e10
#: Longest job any command accepts up front: one day at the optimistic throughput.
MAX_SECONDS = 86_400.0
#: Share of the available memory a job may plan to use (the rest is for NumPy's temporaries).
MEMORY_SHARE = 0.8
FLOAT_BYTES = 8
#: Environment variable capping the memory a job may plan to use (bytes), e.g. on a shared host.
MEMORY_ENV = "ABSORB_MAX_MEMORY"


@dataclass(frozen=True)
class Cost:
    """Predicted peak memory (bytes), work (floating-point operations, counted as GEMM-rate
    flops) and overhead (seconds of work that is not arithmetic: passes over memory, Python)
    of one job."""

    bytes: float
    flops: float
    overhead: float = 0.0

    @property
    def seconds(self) -> float:
        """Predicted time at :data:`FLOPS_PER_SECOND`."""
        return self.flops / FLOPS_PER_SECOND + self.overhead

    def at(self, rate: float) -> float:
        """Predicted time at a measured GEMM rate (flop/s): work / rate + overhead."""
        return self.flops / rate + self.overhead

    def __add__(self, other: Cost) -> Cost:
        """Two jobs run one after the other: the larger peak, the summed work and overhead."""
        return Cost(max(self.bytes, other.bytes), self.flops + other.flops,
                    self.overhead + other.overhead)


def memory_cap() -> int | None:
    """``$ABSORB_MAX_MEMORY`` as a positive whole number of bytes (``8000000000`` or ``8e9``),
    None when unset; any other value (``-5``, ``0``, ``abc``, ``1e400``, ``1.5``) is refused
    with :class:`AbsorbError`, so that a cap the user meant to set is never silently ignored
    or turned into a crash."""
    cap = os.environ.get(MEMORY_ENV)
    if cap is None:
        return None
    try:
        value = float(cap)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1 and value == int(value)):
        raise AbsorbError(f"${MEMORY_ENV}={cap!r} is not a positive whole number of bytes "
                          "(e.g. 8000000000 or 8e9)")
    return int(value)


def available_memory() -> int:
    """Bytes the process may allocate: ``$ABSORB_MAX_MEMORY`` (:func:`memory_cap`) when set,
    else ``MemAvailable`` from /proc/meminfo where it exists, else the physical memory
    (``os.sysconf``), else 4 GiB."""
    cap = memory_cap()
    if cap is not None:
        return cap
    try:
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (OSError, ValueError, AttributeError):
        return 4 << 30


def human_bytes(n: float) -> str:
    """``1.5 GiB`` style."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_seconds(s: float) -> str:
    """``3.2 h`` style."""
    for unit, size in (("years", 365.25 * 86_400), ("days", 86_400), ("hours", 3600),
                       ("minutes", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def require(cost: Cost, what: str, *, memory: int | None = None) -> None:
    """Raise :class:`AbsorbError` (exit 2) when ``cost`` does not fit.

    ``what`` names the job in the message (e.g. ``"search with --samples 100000000"``);
    ``memory`` overrides :func:`available_memory` (tests).
    """
    limit = MEMORY_SHARE * (available_memory() if memory is None else memory)
    if cost.bytes > limit:
        raise AbsorbError(f"{what} would need at least {human_bytes(cost.bytes)} of memory; "
                          f"{human_bytes(limit)} is available")
    if cost.seconds > MAX_SECONDS:
        raise AbsorbError(f"{what} would need at least {cost.flops:.2g} floating-point operations, "
                          f"at least {human_seconds(cost.seconds)}; the limit is "
                          f"{human_seconds(MAX_SECONDS)}")


def search_cost(d: int, n: int, width: int, *, samples: int, steps: int, restarts: int,
                scales: int = 3) -> Cost:
    """A lower bound on what fitting residual-free blocks of ``width`` units to a (d, n) skip
    block needs, whatever the engine, with ``samples`` training inputs per input scale.

    Memory: over the ``scales·samples`` training inputs, the inputs and targets (2d floats
    each), the held-out inputs and targets (half as many again: d), and the hidden
    pre-activations, activations and derivatives of the fit and of the target
    (4·max(width, n)).  Work: one forward and one backward pass per step, about
    6·width·d flops per input, for every step of every restart (a second-order engine does
    more).  Being lower bounds, a refusal based on them is never a false alarm.
    """
    rows = scales * samples
    floats = rows * (3 * d + 4 * max(width, n))
    flops = 6.0 * restarts * steps * rows * width * d
    return Cost(float(FLOAT_BYTES * floats), flops)
