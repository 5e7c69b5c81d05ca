"""Where a scan's layer tasks run: in this process, a local process pool, or Dask.

Every runner takes :class:`~absorb.scan.tasks.LayerTask` objects (names and numbers, never
weights) and yields ``(position, Outcome)`` as layers finish, in any order. ``dask`` and
``distributed`` are an optional extra; without them ``--scheduler`` exits 3 with one line.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import re
import socket
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from absorb.errors import AbsorbError, ToolMissing
from absorb.scan.plan import Worker, blas_threads
from absorb.scan.tasks import LayerTask, Outcome, run_task

SCAN_EXTRA = "needs the scan extra: pip install -e '.[scan]'"
#: A scheduler address: [tcp:// or tls://]HOST:PORT (HOST a name, IPv4, or [IPv6]), or the
#: inproc:// address of a scheduler running in this very process (a LocalCluster there).
_ADDRESS = re.compile(r"(?:(?:tcp|tls)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*)"
                      r":(?P<port>[0-9]{1,5})", re.ASCII)
#: Seconds allowed to open a TCP connection to the scheduler, and to complete Dask's handshake.
CONNECT_SECONDS = 5.0


def check_runner(workers: int, scheduler: str | None) -> None:
    """Refuse, before any work, ``--workers``/``--scheduler`` that cannot run: both asking
    for parallel work, no worker, the scan extra missing (exit 3), or a scheduler that is
    not an address or where nothing answers (:func:`check_scheduler`)."""
    if scheduler is None:
        if workers < 1:
            raise AbsorbError(f"--workers must be at least 1, got {workers}")
        return
    if workers != 1:
        raise AbsorbError("--workers and --scheduler exclude each other (a Dask cluster "
                          "has its own workers)")
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ToolMissing(f"--scheduler {SCAN_EXTRA}") from None
    check_scheduler(scheduler)


def check_scheduler(address: str) -> None:
    """Refuse, in one line and within :data:`CONNECT_SECONDS`, a ``--scheduler`` that is not
    an address, or where nothing answers (a TCP connection is tried first: Dask's own client
    retries for its whole timeout and then leaves a background error behind)."""
    if address.startswith("inproc://"):
        from distributed.comm import inproc

        manager: Any = inproc.global_manager  # untyped library
        try:
            listener = manager.get_listener_for(address.removeprefix("inproc://"))
        except ValueError:  # not of the form HOST/PID/N
            listener = None
        if listener is None:
            raise AbsorbError(f"--scheduler {address}: no scheduler with that in-process "
                              "address runs in this process (inproc:// addresses exist only "
                              "inside the process that started the cluster)")
        return
    m = _ADDRESS.fullmatch(address)
    if m is None or not 0 < int(m["port"]) < 65536:
        raise AbsorbError(f"--scheduler {address}: not a scheduler address (expected "
                          "[tcp://|tls://]HOST:PORT, e.g. tcp://127.0.0.1:8786)")
    host = m["host"].strip("[]")
    try:
        socket.create_connection((host, int(m["port"])), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        raise AbsorbError(f"--scheduler {address}: cannot connect "
                          f"({exc.strerror or type(exc).__name__})") from None
    _check_handshake(address)


def _check_handshake(address: str) -> None:
    """Dask's handshake with ``address``, within :data:`CONNECT_SECONDS`: a port that accepts
    connections but is no Dask scheduler (a web server, a silent listener) is refused here,
    because Dask's client waits for that handshake with no timeout (``Client(timeout=…)``
    does not bound it) and would hang the scan."""
    import asyncio

    import distributed

    dask: Any = distributed  # untyped library: its entry points are used through Any

    async def probe() -> None:
        args = dask.Security().get_connection_args("client")  # TLS settings as the Client's
        comm = await asyncio.wait_for(dask.comm.connect(address, timeout=CONNECT_SECONDS,
                                                        **args), CONNECT_SECONDS)
        await comm.close()

    try:
        asyncio.run(probe())
    except Exception as exc:  # whatever a non-scheduler answers (garbage, silence) refuses
        why = " ".join(str(exc).split())[:200] or f"no answer within {CONNECT_SECONDS:g} s"
        raise AbsorbError(f"--scheduler {address}: no Dask scheduler answers there "
                          f"({type(exc).__name__}: {why})") from None


class Runner:
    """Runs tasks in this process, one after the other (``--workers 1``)."""

    where = "this process"

    def workers(self) -> list[Worker]:
        return [Worker("local", 1, None)]

    def run(self, tasks: Sequence[LayerTask]) -> Iterator[tuple[int, Outcome]]:
        for i, task in enumerate(tasks):
            yield i, run_task(task)

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None


def _limit_blas(threads: int) -> None:
    """Pool initializer: this worker's share of the cores for BLAS (no oversubscription).

    threadpoolctl limits the BLAS libraries already loaded: numpy's is (this module imports
    it), scipy's own copy, which runs the factorizations, is loaded first."""
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)


class PoolRunner(Runner):
    """``--workers N``: N local processes (started fresh, ``spawn``: a forked BLAS thread
    pool can deadlock), each with cores // N BLAS threads."""

    def __init__(self, workers: int) -> None:
        self.count = workers
        self.where = f"{workers} local processes"
        self._pool: cf.ProcessPoolExecutor | None = None

    def workers(self) -> list[Worker]:
        return [Worker(f"local-{i}", 1, None) for i in range(self.count)]

    def run(self, tasks: Sequence[LayerTask]) -> Iterator[tuple[int, Outcome]]:
        if not tasks:  # every layer came from the cache: no processes to start
            return
        self._pool = cf.ProcessPoolExecutor(
            max_workers=min(self.count, len(tasks)),
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_limit_blas, initargs=(blas_threads(self.count),))
        futures = {self._pool.submit(run_task, t): i for i, t in enumerate(tasks)}
        for fut in cf.as_completed(futures):
            yield futures[fut], fut.result()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._pool is not None:  # on an error or Ctrl-C, queued layers are dropped
            self._pool.shutdown(wait=True, cancel_futures=True)


class DaskRunner(Runner):
    """``--scheduler ADDRESS``: a task per layer on a Dask distributed cluster (the address
    checked first: :func:`check_scheduler`)."""

    def __init__(self, address: str, timeout: float = 2 * CONNECT_SECONDS) -> None:
        try:
            import distributed
        except ImportError:
            raise ToolMissing(f"--scheduler {SCAN_EXTRA}") from None
        self.where = f"Dask scheduler {address}"
        try:
            # untyped library: its entry points are used through Any
            self._dask: Any = distributed
            self._client: Any = self._dask.Client(address, timeout=timeout,
                                                  set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise AbsorbError(f"--scheduler {address}: cannot connect ({exc})") from None
        self._futures: list[Any] = []

    def workers(self) -> list[Worker]:
        info = self._client.scheduler_info(n_workers=-1)["workers"]
        if not info:
            raise AbsorbError(f"{self.where} has no workers")
        return [Worker(str(addr), int(w.get("nthreads", 1)), int(w.get("memory_limit") or 0))
                for addr, w in sorted(info.items())]

    def run(self, tasks: Sequence[LayerTask]) -> Iterator[tuple[int, Outcome]]:
        # pure=False: a fresh key per task, never shared with another scan on the cluster
        self._futures = [self._client.submit(run_task, t, pure=False) for t in tasks]
        position = {f.key: i for i, f in enumerate(self._futures)}
        for fut in self._dask.as_completed(self._futures, loop=self._client.loop):
            yield position[fut.key], fut.result()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._futures:
            self._client.cancel(self._futures)
        self._client.close()


def make_runner(workers: int, scheduler: str | None) -> Runner:
    """The runner for ``--workers``/``--scheduler``, which the caller has checked with
    :func:`check_runner` before any work (not again here: a second TCP connection and Dask
    handshake to the scheduler would only repeat it)."""
    if scheduler is not None:
        return DaskRunner(scheduler)
    return Runner() if workers == 1 else PoolRunner(workers)
