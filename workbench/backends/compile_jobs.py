"""Background compiles for the simulator: every core busy, nothing waiting longer than it must.

A fully unrolled kernel takes seconds to compile, so the simulator does not wait for such a compile:
it hands the source to these threads (NVRTC releases the GIL while it compiles, so threads use all
cores), waits a bounded time, and simulates with estimated resources when the compile has not
landed; the compile continues while the search moves on, and its figures are used when the trial is
re-evaluated. Threads are daemons, so a worker that is closed or killed mid-compile never waits
for them (``concurrent.futures`` pools join their threads at exit).
"""

from __future__ import annotations

import os
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable


class CompileJobs:
    """A deduplicating first-in first-out job queue run by ``threads`` daemon threads."""

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._queue: deque[str] = deque()
        self._jobs: dict[str, tuple[Future, Callable[[], Any]]] = {}
        self._started = 0

    def submit(self, key: str, work: Callable[[], Any]) -> Future:
        """The future of ``work`` under ``key``: one job per key while it is queued or running."""
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = (Future(), work)
                self._jobs[key] = job
                self._queue.append(key)
                self._wakeup.notify()
            while self._started < self.threads:
                self._started += 1
                threading.Thread(target=self._serve, name="sim-compile", daemon=True).start()
            return job[0]

    def pending(self) -> int:
        """Jobs queued or compiling."""
        with self._lock:
            return len(self._jobs)

    def _serve(self) -> None:
        while True:
            with self._lock:
                while not self._queue:
                    self._wakeup.wait()
                key = self._queue.popleft()
                future, work = self._jobs[key]
            if not future.set_running_or_notify_cancel():  # cancelled while queued
                with self._lock:
                    self._jobs.pop(key, None)
                continue
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)
            else:
                future.set_result(result)
            with self._lock:  # whoever needs the result holds the future; forget the job
                if self._jobs.get(key, (None,))[0] is future:
                    del self._jobs[key]
