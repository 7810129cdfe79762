"""Compare a kernel's outputs with the float64 reference, where the outputs live, in chunks.

The CUDA backend passes CuPy arrays (outputs in device memory, the reference uploaded once per
worker), so only a few scalars cross to the host and a candidate's verification takes
milliseconds instead of the seconds NumPy needs for 10^8 elements after a device-to-host copy.
Any module with NumPy's array API works (``numpy`` for the CPU dry run and the tests). Chunks
bound the float64 temporaries (a 512^3 grid would otherwise need several GiB of them).

An element is wrong when ``|got - expected| > atol + rtol * |expected|`` or when it is not
finite. The worst errors feed the quality metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

#: Elements per chunk: 32 MiB of float64 per temporary.
CHUNK_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class Verdict:
    """What verification found: how many elements are wrong, the worst errors, and the first
    wrong element in words (empty when none is)."""

    bad: int
    checked: int
    max_abs_err: float
    max_rel_err: float
    message: str

    @property
    def wrong(self) -> bool:
        return self.bad > 0


def verify_outputs(xp: Any, outputs: Mapping[str, Any], expected: Mapping[str, Any], rtol: float, atol: float,
                   chunk: int = CHUNK_ELEMENTS) -> Verdict:
    """Check every output named in ``expected`` against it; ``xp`` is the arrays' module (numpy, cupy)."""
    floor = atol if atol > 0 else 1e-30
    bad = checked = 0
    worst_abs = worst_rel = 0.0
    message = ""
    for name, want_all in expected.items():
        got_all, want_all = outputs[name].reshape(-1), want_all.reshape(-1)
        if got_all.size != want_all.size:
            bad += max(want_all.size, 1)
            worst_abs = worst_rel = math.inf
            message = message or f"{name} has {got_all.size} elements, expected {want_all.size}"
            continue
        checked += want_all.size
        for start in range(0, want_all.size, chunk):
            got = got_all[start:start + chunk].astype(xp.float64)
            want = want_all[start:start + chunk].astype(xp.float64, copy=False)
            err = xp.abs(got - want)
            err[~xp.isfinite(got)] = xp.inf
            wrong = err > atol + rtol * xp.abs(want)
            count = int(xp.count_nonzero(wrong))
            if count and not message:
                i = int(xp.argmax(wrong))
                message = f"{name}[{start + i}] = {float(got[i]):.6g}, expected {float(want[i]):.6g}"
            bad += count
            worst_abs = max(worst_abs, float(err.max()))
            worst_rel = max(worst_rel, float((err / xp.maximum(xp.abs(want), floor)).max()))
    if bad and checked:
        message += f"; {bad} of {checked} elements outside rtol={rtol:g} atol={atol:g}"
    return Verdict(bad, checked, worst_abs, worst_rel, message)
