"""The up-front plan of a model scan: memory per worker and in all, time, before any work.

Each layer's peak memory and work come from (d, n) alone (``inspection.layer_cost``). A
worker decides one layer at a time, so its peak is the largest layer's; the machine running
``w`` local workers needs ``w`` times that, plus, when the JSON output keeps every layer's
certificate matrix Y (d² floats), all of them at once. A Dask worker running ``t`` tasks at
a time needs ``t`` times the largest layer's peak within its own memory limit. The time is
each layer's work at the machine's measured GEMM rate plus its overhead (``Cost.at``), spread
over the task slots by the longest-first rule (a makespan never below the largest layer's
time). Local workers share the machine's cores: they are capped at the core count and the
layer count (:func:`worker_count`), and since one process already runs its BLAS on every
core, w workers each run their work w times slower (cores // w BLAS threads each) and
overlap only the overhead; the plan says so when they are predicted to save little. Dask
workers on one host share its cores the same way (every task's BLAS uses all of them), and
each host is assumed to be a machine like this one (stated in the plan).
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass

from absorb.budget import MEMORY_SHARE, Cost, available_memory, human_bytes, human_seconds, require
from absorb.errors import AbsorbError

#: Seconds a local pool takes to start its worker processes (``spawn``: each imports numpy,
#: scipy and absorb before its first layer; measured 1–2 s on 2 loaded cores).
POOL_START_SECONDS = 1.5


def cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_count(requested: int, layers: int) -> tuple[int, tuple[str, ...]]:
    """The local worker processes a scan of ``layers`` layers starts for ``--workers
    requested``: at most the cores (more processes only share them) and the layers (an idle
    worker helps nothing), at least one; with a note for each cap."""
    count, notes = requested, []
    if count > cores():
        notes.append(f"--workers {requested} capped at the {cores()} cores of this machine")
        count = cores()
    if count > max(1, layers):
        notes.append(f"--workers {count} capped at the {layers} layer(s) to decide")
        count = max(1, layers)
    return count, tuple(notes)


def blas_threads(workers: int) -> int:
    """BLAS threads each of ``workers`` local worker processes gets: the cores split evenly."""
    return max(1, cores() // max(1, workers))


def makespan(seconds: Sequence[float], slots: int) -> float:
    """Longest-first list scheduling of jobs on ``slots`` equal slots: the finishing time."""
    loads = [0.0] * max(1, slots)
    for s in sorted(seconds, reverse=True):
        heapq.heapreplace(loads, loads[0] + s)
    return max(loads)


@dataclass(frozen=True)
class Worker:
    """One place tasks run: its name, tasks at a time, memory limit (bytes; None: this
    machine's available memory, shared with the other local workers)."""

    name: str
    threads: int
    memory: int | None


@dataclass(frozen=True)
class ScanPlan:
    """What the scan will need, predicted from the layers' sizes."""

    where: str
    workers: tuple[Worker, ...]
    layer_peak_bytes: float
    kept_bytes: float
    total_bytes: float
    available_bytes: float
    flops: float
    serial_seconds: float
    wall_seconds: float
    assumption: str
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"where": self.where, "workers": len(self.workers),
                "slots": sum(w.threads for w in self.workers),
                "per_worker_peak_bytes": self.layer_peak_bytes * max(
                    w.threads for w in self.workers),
                "certificates_kept_bytes": self.kept_bytes, "total_peak_bytes": self.total_bytes,
                "available_bytes": self.available_bytes, "predicted_flops": self.flops,
                "predicted_serial_seconds": self.serial_seconds,
                "predicted_seconds": self.wall_seconds, "assumption": self.assumption,
                "notes": list(self.notes)}

    def text(self) -> str:
        per = self.layer_peak_bytes * max(w.threads for w in self.workers)
        return (f"plan: {len(self.workers)} worker(s) ({self.where}), "
                f"{human_bytes(per)} per worker, {human_bytes(self.total_bytes)} in all "
                f"({human_bytes(self.available_bytes) if self.available_bytes else 'no limit'}"
                " available); predicted "
                f"{human_seconds(self.wall_seconds)} ({human_seconds(self.serial_seconds)} on "
                f"one worker; {self.assumption})"
                + "".join(f"\nplan note: {note}" for note in self.notes))


def _host(worker: Worker) -> str:
    """The host part of a worker's address (``tcp://10.0.0.5:8786`` → ``tcp://10.0.0.5``)."""
    return worker.name.rsplit(":", 1)[0] if worker.name.count(":") > 1 else worker.name


def plan_scan(costs: Sequence[tuple[str, Cost]], kept: float, workers: Sequence[Worker],
              where: str, rate: float, *, memory: int | None = None,
              notes: Sequence[str] = ()) -> ScanPlan:
    """Check every layer, then the whole scan, against memory (AbsorbError naming a number of
    workers that would fit): local workers share this machine's memory with the driver, which
    holds ``kept`` bytes of certificates; a Dask worker has its own memory limit (0: none
    set). ``memory`` overrides this machine's available memory; ``notes`` (e.g. the caps of
    :func:`worker_count`) are carried into the plan, with one more when the local workers are
    predicted to save less than a fifth of the one-process time."""
    local = all(w.memory is None for w in workers)
    avail = float(available_memory() if memory is None else memory)
    limit = MEMORY_SHARE * avail
    for label, cost in costs:  # a layer that fits nowhere is refused by name (and by time)
        require(cost if local else Cost(0.0, cost.flops), label, memory=memory)
    peak = max((c.bytes for _, c in costs), default=0.0)
    slots = sum(w.threads for w in workers)
    total = peak * slots + kept
    kept_text = (f" plus {human_bytes(kept)} of earlier certificates kept for the JSON output"
                 if kept else "")
    if local and total > limit:
        fit = int((limit - kept) // peak) if peak > 0 and limit > kept else 0
        advice = (f"use --workers {fit} or fewer" if fit >= 1 else
                  "drop --json (certificates are then not kept)" if kept else "")
        raise AbsorbError(f"the scan would need {human_bytes(total)} of memory "
                          f"({slots} worker(s) x {human_bytes(peak)}{kept_text}); "
                          f"{human_bytes(limit)} is available" + (f": {advice}" if advice
                                                                    else ""))
    if not local:
        if kept > limit:
            raise AbsorbError(f"the scan would keep {human_bytes(kept)} of certificates for the "
                              f"JSON output here; {human_bytes(limit)} is available: drop "
                              "--json (certificates are then not kept)")
        for w in workers:
            if w.memory and peak * w.threads > MEMORY_SHARE * w.memory:
                raise AbsorbError(f"Dask worker {w.name} runs {w.threads} task(s) at a time of "
                                  f"up to {human_bytes(peak)} each but has a memory limit of "
                                  f"{human_bytes(w.memory)}: start it with fewer threads "
                                  "(--nthreads) or more memory")
        avail = float(sum(w.memory or 0 for w in workers))
    seconds = [c.at(rate) for _, c in costs]
    serial = math.fsum(seconds)
    notes = list(notes)
    n_cores = cores()
    if local:
        # each local worker's BLAS gets cores // workers threads; the measured rate used all
        # the cores, so a layer's work takes max(cores / threads, workers) times longer, while
        # its overhead (single-threaded) overlaps with the other workers'
        factor = max(n_cores / blas_threads(slots), slots)
        wall = makespan([c.flops / rate * factor + c.overhead for _, c in costs], slots)
        if slots > 1:
            wall += POOL_START_SECONDS
        assumption = f"{n_cores} cores shared at the measured GEMM rate {rate:.3g} flop/s"
        if slots > 1 and wall > 0.8 * serial:
            notes.append(f"{slots} workers are predicted to save little ({human_seconds(wall)} "
                         f"against {human_seconds(serial)} in one process): one process "
                         f"already runs its BLAS on all {n_cores} cores; workers overlap only "
                         "the single-threaded parts")
    else:
        # every task's BLAS uses all of its host's cores: the tasks running at once on a host
        # (the threads of all its workers) share them
        per_host: dict[str, int] = {}
        for w in workers:
            per_host[_host(w)] = per_host.get(_host(w), 0) + w.threads
        wall = makespan([s * max(per_host.values()) for s in seconds], slots)
        assumption = (f"each Dask host assumed as fast as this machine ({rate:.3g} flop/s), "
                      "its tasks sharing its cores")
    return ScanPlan(where, tuple(workers), peak, kept, total, avail,
                    math.fsum(c.flops for _, c in costs), serial, wall, assumption,
                    tuple(notes))
