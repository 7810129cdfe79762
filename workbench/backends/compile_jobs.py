"""Background compiles for the simulator: every core busy, nothing waiting longer than it must.

A fully unrolled kernel takes seconds to compile, so the simulator does not wait for such a compile:
it hands the source to these threads (NVRTC releases the GIL while it compiles, so threads use all
cores), waits a bounded time, and simulates with estimated resources when the compile has not
landed; the compile continues and its figures are used when the trial is re-evaluated. Threads are
daemons, so a worker that is closed or killed mid-compile never waits for them.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
from concurrent.futures import Future
from typing import Any, Callable

#: Jobs the current evaluation waits for go before speculative ones.
URGENT, AHEAD = 0, 1


class CompileJobs:
    """A deduplicating, prioritised job queue run by ``threads`` daemon threads."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._queue: list[tuple[int, int, str]] = []
        self._jobs: dict[str, tuple[Future, Callable[[], Any]]] = {}
        self._order = itertools.count()
        self._started = 0

    def submit(self, key: str, work: Callable[[], Any], priority: int = URGENT) -> Future:
        """The future of ``work`` under ``key`` (one job per key); an urgent resubmission jumps the queue."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = (Future(), work)
                self._jobs[key] = job
                heapq.heappush(self._queue, (priority, next(self._order), key))
            elif priority == URGENT and not job[0].running() and not job[0].done():
                heapq.heappush(self._queue, (priority, next(self._order), key))  # the old entry is skipped
            while self._started < self.threads:
                self._started += 1
                threading.Thread(target=self._serve, name="sim-compile", daemon=True).start()
            self._wakeup.notify()
            return job[0]

    def pending(self) -> int:
        """Jobs queued or compiling."""
        with self._lock:
            return sum(1 for future, _ in self._jobs.values() if not future.done())

    def _serve(self) -> None:
        while True:
            with self._lock:
                while True:
                    while self._queue:
                        _, _, key = heapq.heappop(self._queue)
                        future, work = self._jobs[key]
                        if not future.running() and not future.done() and future.set_running_or_notify_cancel():
                            break
                    else:
                        self._wakeup.wait()
                        continue
                    break
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)
            else:
                future.set_result(result)
            with self._lock:  # whoever needs the result holds the future; forget the job
                if self._jobs.get(key, (None,))[0] is future:
                    del self._jobs[key]
