"""How many threads the embedder's arithmetic runs on: one rule for the whole process (issue 53,
docs/decisions/0208-embedder-lanes.md).

OpenBLAS starts a thread per core for every matrix product. A forward pass's products are small
(512 word pieces by 384), so those threads mostly wait for each other, and beside another busy
process they spin: a cold read ran 5-9 times slower than alone. The rule instead:

- every product the embedder computes (and the dense channel's scoring) runs on **one BLAS
  thread** (:func:`one_blas_thread`: threadpoolctl, set for the process while any such work runs,
  since OpenBLAS's count is global, and given back when the last one ends);
- the cores are shared out as **lanes** (:data:`LANES`): at most :func:`cores` forward passes
  compute at once in the process, each on a thread of its own (numpy gives up the GIL in its loops
  and BLAS calls). A build spreads its passes over every lane, a read's one pass takes one, and a
  server's request and a build in the same process draw on the same lanes, so the process never
  runs more arithmetic threads than it has cores;
- a pass is the same arithmetic on whichever lane it runs, on one BLAS thread, so a vector's bits
  never depend on the lanes, the load or the machine's core count.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any

# The usual ways to tell a numeric process how many threads it may use; the first one set (to a
# positive whole number) caps the lanes, so a test worker or a study worker given its share of the
# cores (docs/decisions/0137-test-threads.md, 0202) keeps to it.
THREAD_ENVS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cores() -> int:
    """The cores this process may run on: its CPU affinity (a container's share), else the host's."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def lane_count() -> int:
    """Lanes for this process: its cores, capped by the first of :data:`THREAD_ENVS` that is set."""
    for name in THREAD_ENVS:
        value = os.environ.get(name, "").strip()
        if value.isdigit() and int(value) > 0:
            return min(cores(), int(value))
    return cores()


class Lanes:
    """At most ``count`` forward passes at once in the process, each on one BLAS thread."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._free = threading.BoundedSemaphore(count)

    def run(self, passes: Sequence[Callable[[], None]], done: Callable[[int], None] | None = None) -> None:
        """Run each pass on a lane, as many at once as lanes are free (a pass writes its own result);
        ``done(index)`` is told in this thread as each one finishes. The first error (or an
        interrupt here) is raised once the passes already running have ended; the rest never start."""
        with _ONE_THREAD.held():
            if len(passes) <= 1 or self.count == 1:
                for index, compute in enumerate(passes):
                    self._on_lane(compute)
                    if done is not None:
                        done(index)
                return
            stop = threading.Event()

            def task(index: int) -> int:
                if not stop.is_set():
                    self._on_lane(passes[index])
                return index

            pool = ThreadPoolExecutor(min(self.count, len(passes)), thread_name_prefix="muster-lane")
            try:
                pending = {pool.submit(task, i) for i in range(len(passes))}
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        index = future.result()  # raises a pass's error
                        if done is not None:
                            done(index)
            except BaseException:
                stop.set()  # a pass failed, or Ctrl-C: the passes not yet started never start
                raise
            finally:
                pool.shutdown(wait=True, cancel_futures=True)

    def _on_lane(self, compute: Callable[[], None]) -> None:
        with self._free:
            compute()


class _OneBlasThread:
    """OpenBLAS's thread count is the process's: one count of the blocks that want one thread,
    whichever lanes they come from, set to one by the first and given back by the last."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._limited: Any = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._users == 0:
                self._limited = _blas_limit(1)
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0 and self._limited is not None:
                    self._limited.restore_original_limits()
                    self._limited = None


_ONE_THREAD = _OneBlasThread()


_CONTROLLER: Any = None


def _blas_limit(threads: int) -> Any:
    """threadpoolctl's limit on the process's BLAS libraries, called under the lanes' lock. The
    controller (a scan of the loaded libraries, about 0.5 ms) is made once, at the first use, by
    when numpy has loaded its BLAS; a limit through it costs about 20 us, little beside a read."""
    global _CONTROLLER
    import threadpoolctl  # type: ignore[import-untyped]

    if _CONTROLLER is None:
        _CONTROLLER = threadpoolctl.ThreadpoolController()
    _any_thread_may_set()
    return _Limited(_CONTROLLER.limit(limits=threads, user_api="blas"))


class _Limited:
    """A threadpoolctl limit whose restore may come from another thread than the one that set it."""

    def __init__(self, limited: Any) -> None:
        self._limited = limited

    def restore_original_limits(self) -> None:
        _any_thread_may_set()
        self._limited.restore_original_limits()


def _any_thread_may_set() -> None:
    """threadpoolctl (3.8 on) lets only the first thread that set OpenBLAS's count set it again,
    and silently ignores the others: a lane or a server's request thread would then run every
    core's threads. The lanes keep their own count under a lock, so whichever thread comes first
    or leaves last may set it (tests/models/test_lanes.py counts the threads from other threads)."""
    import threadpoolctl

    clear = getattr(getattr(threadpoolctl, "OpenBLASController", None), "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


# The process's lanes: one per core it may run on (lane_count).
LANES = Lanes(lane_count())


def set_lanes(count: int) -> None:
    """Use ``count`` lanes from now on (a worker process given its share of the cores); call it
    while nothing is embedding."""
    global LANES
    LANES = Lanes(max(1, count))


def one_blas_thread() -> contextlib.AbstractContextManager[None]:
    """BLAS on one thread for this block (see the module doc): the dense channel's scoring uses it
    too, so a read's small products never start a thread per core."""
    return _ONE_THREAD.held()
