"""Background compiles for the simulator: every core busy, nothing waiting longer than it must.

A fully unrolled kernel takes seconds to compile, so the simulator does not wait for such a compile:
it hands the source to these threads (NVRTC releases the GIL while it compiles, so threads use all
cores), waits a bounded time, and simulates with estimated resources when the compile has not
landed; the compile continues while the search moves on, and its figures are used when the trial is
re-evaluated. Threads are daemons, so a worker killed mid-compile never waits for them
(``concurrent.futures`` pools join their threads at exit, however long the queue). A process that
ends normally drops what is queued and waits (bounded, ``EXIT_WAIT_S``) for the compiles under way:
a thread still inside the compiler when the interpreter tears down crashed the process (a
segmentation fault after the command had printed its results).

The threads run at a lower scheduling priority (``NICE`` on Linux, where priority is per thread):
the search and the evaluations are what the person watches, and the compiles only refine figures
already shown, so on a machine with as many busy threads as cores the compiles take what is left.
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import math
import os
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

#: Niceness added to each compile thread (Linux: per thread; elsewhere the threads keep the process's).
NICE = 10
#: Priority of a job someone is waiting for.
URGENT = -math.inf
#: At normal exit, the longest wait (s) for the compiles under way (queued ones are dropped).
EXIT_WAIT_S = 60.0


class CompileJobs:
    """A deduplicating priority queue of jobs run by ``threads`` daemon threads.

    Lower ``priority`` runs first (first come first served among equals). The simulator passes
    the config's latency modelled with estimated resources, so when compiles cannot all land
    before a run ends, the most promising configs (the ones a person reads the answer from) are
    the ones refined; a job someone waits for is raised to the front (``URGENT``).
    """

    def __init__(self, threads: int | None = None) -> None:
        self.threads = max(1, threads or os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._wakeup = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, str]] = []  # (priority, arrival, key); stale rows skipped
        self._queued: dict[str, float] = {}  # key -> current priority, while queued
        self._jobs: dict[str, tuple[Future, Callable[[], Any]]] = {}
        self._arrivals = itertools.count()
        self._threads: list[threading.Thread] = []
        self._closing = False

    def submit(self, key: str, work: Callable[[], Any], priority: float = 0.0) -> Future:
        """The future of ``work`` under ``key``: one job per key while it is queued or running; a
        queued job submitted again keeps the lower (earlier) of its two priorities."""
        if math.isnan(priority):  # NaN would break the heap's order: last
            priority = math.inf
        with self._lock:
            if self._closing:  # the process is ending: nothing new is queued, and nobody will wait for it
                dropped: Future = Future()
                dropped.cancel()
                return dropped
            job = self._jobs.get(key)
            if job is None:
                job = (Future(), work)
                self._jobs[key] = job
                self._enqueue(key, priority)
            elif key in self._queued and priority < self._queued[key]:
                self._enqueue(key, priority)
            while len(self._threads) < self.threads:
                if not self._threads:
                    atexit.register(self.shutdown)
                thread = threading.Thread(target=self._serve, name="sim-compile", daemon=True)
                self._threads.append(thread)
                thread.start()
            return job[0]

    def shutdown(self, wait_s: float = EXIT_WAIT_S) -> None:
        """Drop the queued jobs (their futures are cancelled) and wait up to ``wait_s`` for the
        running ones; the threads then end. Registered to run at the process's normal exit."""
        with self._lock:
            self._closing = True
            for key in list(self._queued):
                future = self._jobs.pop(key)[0]
                future.cancel()
            self._queued.clear()
            self._heap.clear()
            self._wakeup.notify_all()
            threads = list(self._threads)
        deadline = time.monotonic() + wait_s
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def _enqueue(self, key: str, priority: float) -> None:
        self._queued[key] = priority
        heapq.heappush(self._heap, (priority, next(self._arrivals), key))
        self._wakeup.notify()

    def _next(self) -> str:
        """Pop the queued key of lowest priority (caller holds the lock; the queue is not empty)."""
        while True:
            priority, _, key = heapq.heappop(self._heap)
            if self._queued.get(key) == priority:
                del self._queued[key]
                return key

    def pending(self) -> int:
        """Jobs queued or compiling."""
        with self._lock:
            return len(self._jobs)

    def _serve(self) -> None:
        _lower_priority()
        while True:
            with self._lock:
                while not self._queued and not self._closing:
                    self._wakeup.wait()
                if self._closing:
                    return
                key = self._next()
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


def _lower_priority() -> None:
    """Make the calling thread yield the CPU to the process's other threads (Linux; else nothing)."""
    if not (sys.platform.startswith("linux") and hasattr(os, "setpriority")):
        return
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + NICE))
    except OSError:  # a sandbox that forbids it: the compiles simply keep the normal priority
        pass
