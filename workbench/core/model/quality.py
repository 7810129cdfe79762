"""One number for "how accurate is this config's output": shared by the simulator and the CUDA backend.

Correctness (pass / ``wrong_result``) is decided elsewhere by the template's ``(rtol, atol)``. Quality
ranks the configs that pass: fast math, reduced precision or a different summation order lose
digits, and a teacher wants that visible as a number in [0, 1].

Formula: ``quality = clip(digits / 7.22, 0, 1)`` where ``digits = -log10(normwise relative error)``
and the normwise relative error is ``max|result - reference| / max|reference|`` (robust to zeros in
the reference). 7.22 = log10(2**24) is what an exactly rounded float32 result can carry, so an exact
result scores 1.0, a typical float32 kernel about 0.9, fast-math transcendentals about 0.8 and a
half-precision result about 0.45.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

FLOAT32_DIGITS = math.log10(2.0**24)

#: The simulator's ``details.quality_source`` when it emulates nothing: the quality is that of the
#: reference rounded to float32, whatever the kernel computes (no output was compared).
ROUNDED_REFERENCE = "float32 rounding of the reference"
#: ... and the quality of outputs computed by the template's NumPy emulation of the config
EMULATION = "emulation"


def outputs_compared(details: Mapping[str, object]) -> bool:
    """Whether a successful trial's outputs were compared with a reference: always on a GPU (a
    config that disagrees fails as ``wrong_result``), on the simulator only through an emulation."""
    source = details.get("quality_source")
    return source is None or source == EMULATION


def unchecked_outputs_note(count: int) -> str:
    """What ``tune`` and ``show`` say of their outputs for ``count`` successful simulated trials whose outputs
    nothing compared ("" for none): a kernel that writes nothing, or the wrong values, succeeds there."""
    if not count:
        return ""
    return (f"not compared for {count} successful trial{'s' if count != 1 else ''}: the simulator runs no kernel "
            "and has no emulation of this one's arithmetic (one that writes nothing or wrong values succeeds "
            "here), and their quality is the reference rounded to float32; a run on a GPU checks every output")


def relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    """Normwise relative error ``max|result - reference| / max|reference|`` (inf on NaN or shape mismatch)."""
    got = np.asarray(result, dtype=np.float64)
    want = np.asarray(reference, dtype=np.float64)
    if got.shape != want.shape:
        return math.inf
    if want.size == 0:
        return 0.0
    diff = np.abs(got - want)
    if not np.all(np.isfinite(diff)):
        return math.inf
    return normwise_error(float(np.max(diff)), float(np.max(np.abs(want))))


def normwise_error(worst: float, scale: float) -> float:
    """``worst / scale``: the largest error over the largest reference magnitude, inf when the
    error is not finite, and for a reference of zeros 0 when matched exactly (inf otherwise).
    One rule for the host (:func:`relative_error`) and the device's chunked verification."""
    if not math.isfinite(worst):
        return math.inf
    if scale == 0.0:
        return 0.0 if worst == 0.0 else math.inf
    return worst / scale


def quality_from_error(error: float, rtol: float | None = None) -> float:
    """Quality in [0, 1] from a relative error (1 = exact, 0 = no correct digit).

    ``rtol`` is accepted from callers that have the template's tolerance at hand, but on purpose
    does not change the figure: quality counts correct digits, so it compares across templates.
    """
    if math.isnan(error) or error == math.inf:
        return 0.0
    if error <= 0.0:
        return 1.0
    return float(min(1.0, max(0.0, -math.log10(error) / FLOAT32_DIGITS)))


def quality_of(outputs: Mapping[str, np.ndarray], references: Mapping[str, np.ndarray]) -> float:
    """The quality of a set of outputs: the worst output decides (every checked output must be good)."""
    if not references:
        return 1.0
    worst = max(relative_error(outputs.get(name, np.array([])), ref) for name, ref in references.items())
    return quality_from_error(worst)
