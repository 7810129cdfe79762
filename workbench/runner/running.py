"""Which session objects a run of this process is measuring into now.

Why: a script can prepare two runs over one :class:`~workbench.core.domain.session.Session`
object (``prepare_run(request, session, out_a)``, then ``out_b``). Run at once, both numbered
their trials from the same next index, and neither session could then be saved ("trials[15].index:
10 appears twice"): every trial of both runs was left in journals only. One after the other they
are fine (each numbers from the session as it finds it), so what is refused is the second
measuring into the object while the first still does.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from workbench.core.errors import WorkbenchError

_LOCK = threading.Lock()
#: id of a session object -> the run measuring into it (a run, or the sweep its size runs belong to)
_MEASURING: dict[int, Any] = {}


@contextlib.contextmanager
def measuring_into(session: Any, owner: Any) -> Iterator[None]:
    """Hold ``session`` for ``owner`` while the block runs; refused (one line, nothing held) while
    another owner holds it. The same owner may hold it again inside (a sweep's size runs)."""
    key = id(session)
    with _LOCK:
        holder = _MEASURING.get(key)
        if holder is not None and holder is not owner:
            raise WorkbenchError(f"the session of {getattr(session, 'kernel', 'this kernel')!r} is being measured by "
                                 "another run of this process; run this one when that one has ended, or give it a "
                                 "session of its own")
        _MEASURING[key] = owner
    try:
        yield
    finally:
        if holder is None:
            with _LOCK:
                if _MEASURING.get(key) is owner:
                    del _MEASURING[key]
