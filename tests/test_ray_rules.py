"""Rules of the Ray executor that need no Ray instance: a Ray address is checked before
``ray.init``, which retries for minutes (nothing listening, and something listening that is not a
Ray cluster, are each one line within seconds), and when a pool counts as unable to start."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from workbench.core.errors import WorkbenchError
from workbench.runner.ray_executor import check_reachable


def _server(answer: bytes | None) -> tuple[socket.socket, int]:
    """A local server that accepts and then answers ``answer`` (None: stays silent)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.recv(64)
            if answer is not None:
                connection.sendall(answer)
            time.sleep(2)

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


#: What an HTTP/2 server (Ray's GCS and Ray Client server are gRPC servers) sends first: a
#: SETTINGS frame (here of one setting, as Ray's GCS sends several).
SETTINGS = bytes([0, 0, 6, 4, 0, 0, 0, 0, 0]) + bytes([0, 3, 0, 0, 0, 100])


@pytest.mark.parametrize("answer, why", [(None, "silent"), (b"HTTP/1.1 400 Bad Request\r\n\r\n", "another protocol"),
                                         (b"", "closes at once")])
def test_a_port_that_does_not_answer_as_ray_is_one_line_within_the_timeout(answer, why):
    listener, port = _server(answer)
    with listener:
        started = time.monotonic()
        with pytest.raises(WorkbenchError) as said:
            check_reachable(f"127.0.0.1:{port}", timeout_s=1.0)
        assert time.monotonic() - started < 3, why
    assert str(said.value) == (f"cannot connect to the Ray cluster at 127.0.0.1:{port}: something listens there but "
                               "does not answer as a Ray cluster does (no gRPC reply within 1 s); give the address "
                               "`ray start --head` printed")


def test_a_port_that_answers_as_a_grpc_server_passes_and_tls_clusters_are_checked_by_their_port(monkeypatch):
    for form in ("127.0.0.1:{}", "ray://127.0.0.1:{}"):  # the GCS, and the Ray Client server
        listener, port = _server(SETTINGS)
        with listener:
            check_reachable(form.format(port), timeout_s=2.0)
    monkeypatch.setenv("RAY_USE_TLS", "1")  # (a TLS cluster does not answer plaintext HTTP/2)
    listener, port = _server(None)
    with listener:
        check_reachable(f"127.0.0.1:{port}", timeout_s=1.0)


def test_nothing_listening_is_said_as_before():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(WorkbenchError, match=f"^cannot reach the Ray cluster at 127.0.0.1:{port}: "):
        check_reachable(f"127.0.0.1:{port}", timeout_s=1.0)


def _pool_of(*slots):
    """A RayPool's bookkeeping over ``slots``, without Ray (only :meth:`RayPool._check_startup` runs)."""
    from collections import deque

    from workbench.runner.ray_executor import RayPool

    pool = RayPool.__new__(RayPool)
    pool._slots, pool._pending, pool._done = list(slots), deque(), []
    pool._error, pool._closed, pool._last_death, pool.start_timeout_s = None, False, None, 10.0
    return pool


def test_no_actor_up_is_an_error_only_after_the_allowance_since_the_newest_actor():
    """With more workers than CPUs, a slot never placed is the oldest; once the actors that had come
    up were all lost, their replacements, made a moment ago, counted as out of time (the allowance
    was timed from the oldest slot) and the lost candidate's retry ended the run."""
    from workbench.runner.ray_executor import _Slot

    now = time.monotonic()
    never_placed, replacement = _Slot(0, None, "ray-0", now - 100), _Slot(1, None, "ray-1", now - 1)
    pool = _pool_of(never_placed, replacement)
    pool._check_startup()
    assert pool._error is None
    replacement.created = now - 11
    pool._check_startup()
    assert str(pool._error).startswith("no Ray actor started within 10 s")
    # an actor up anywhere: no error; every slot's actors dead before coming up: the error, with why
    up = _Slot(2, None, "ray-2", now - 100, up=True)
    pool = _pool_of(_Slot(0, None, "ray-0", now - 100), up)
    pool._check_startup()
    assert pool._error is None
    pool = _pool_of(_Slot(0, None, "ray-0", now, failed=True), _Slot(1, None, "ray-1", now, failed=True))
    pool._last_death = ("ActorDiedError: ... RuntimeError: no such module", "the log")
    pool._check_startup()
    assert str(pool._error) == "Ray actors cannot start: ActorDiedError: ... RuntimeError: no such module"
