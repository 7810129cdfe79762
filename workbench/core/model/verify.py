"""Compare a kernel's outputs with the float64 reference, where the outputs live, in chunks.

The CUDA backend passes CuPy arrays (outputs in device memory, the reference uploaded once per
worker), so only a few scalars cross to the host and a candidate's verification takes
milliseconds instead of the seconds NumPy needs for 10^8 elements after a device-to-host copy.
Any module with NumPy's array API works (``numpy`` for the CPU dry run and the tests). Chunks
bound the float64 temporaries (a 512^3 grid would otherwise need several GiB of them).

An element is wrong when ``|got - expected| > atol + rtol * |expected|`` (each output with its
own ``rtol`` and ``atol``) or when it is not finite. The worst errors feed the quality metric.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from workbench.core.model.quality import normwise_error

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
    #: The worst output's normwise relative error, max|got - want| / max|want| (what ``quality``
    #: counts digits of, as :func:`workbench.core.model.quality.quality_of` does on the host).
    normwise_err: float = math.inf

    @property
    def wrong(self) -> bool:
        return self.bad > 0


def _finite_or_inf(value: float) -> float:
    return value if math.isfinite(value) else math.inf


def _quiet(xp: Any) -> Any:
    """NumPy's floating-point warnings off for a block (CuPy raises none: nothing to silence)."""
    errstate = getattr(xp, "errstate", None)
    return errstate(invalid="ignore", divide="ignore") if errstate is not None else contextlib.nullcontext()


def verify_outputs(xp: Any, outputs: Mapping[str, Any], expected: Mapping[str, Any], rtol: float, atol: float,
                   chunk: int = CHUNK_ELEMENTS,
                   tolerances: Mapping[str, tuple[float, float]] | None = None) -> Verdict:
    """Check every output named in ``expected`` against it; ``xp`` is the arrays' module (numpy, cupy).

    ``tolerances``: each output's own ``(rtol, atol)`` by name (``KernelTemplate.output_tolerances``);
    an output not in it is checked with ``rtol`` and ``atol``.
    """
    bad = checked = 0
    worst_abs = worst_rel = worst_normwise = 0.0
    message = ""
    first_tolerance: tuple[float, float] | None = None
    for name, want_all in expected.items():
        out_rtol, out_atol = (tolerances or {}).get(name, (rtol, atol))
        floor = out_atol if out_atol > 0 else 1e-30
        got_all, want_all = outputs[name].reshape(-1), want_all.reshape(-1)
        if got_all.size != want_all.size:
            bad += max(want_all.size, 1)
            worst_abs = worst_rel = worst_normwise = math.inf
            message = message or f"{name} has {got_all.size} elements, expected {want_all.size}"
            continue
        checked += want_all.size
        output_abs = output_scale = 0.0
        for start in range(0, want_all.size, chunk):
            got = got_all[start:start + chunk].astype(xp.float64)
            want = want_all[start:start + chunk].astype(xp.float64, copy=False)
            err = xp.abs(got - want)
            err[~xp.isfinite(got)] = xp.inf
            size = xp.abs(want)
            wrong = err > out_atol + out_rtol * size
            count = int(xp.count_nonzero(wrong))
            if count and not message:
                i = int(xp.argmax(wrong))
                message = f"{name}[{start + i}] = {float(got[i]):.6g}, expected {float(want[i]):.6g}"
                first_tolerance = (out_rtol, out_atol)
            bad += count
            # max() in Python drops a NaN: a reference that is not finite makes every error infinite,
            # as quality_of on the host has it, whatever the chunk it falls in
            chunk_abs = _finite_or_inf(float(err.max()))
            if not bool(xp.isfinite(want).all()):
                chunk_abs = math.inf
            worst_abs = max(worst_abs, chunk_abs)
            with _quiet(xp):  # inf / inf where the reference is infinite: taken as inf just above
                worst_rel = max(worst_rel, _finite_or_inf(float((err / xp.maximum(size, floor)).max())))
            output_abs = max(output_abs, chunk_abs)
            output_scale = max(output_scale, _finite_or_inf(float(size.max())))
        if want_all.size:
            worst_normwise = max(worst_normwise, normwise_error(output_abs, output_scale))
    if bad and checked:
        shown_rtol, shown_atol = first_tolerance or (rtol, atol)
        message += f"; {bad} of {checked} elements outside rtol={shown_rtol:g} atol={shown_atol:g}"
    return Verdict(bad, checked, worst_abs, worst_rel, message, worst_normwise)


# --- a template without a reference ---------------------------------------------------------------

#: Trial ``details`` key naming the config whose outputs stood in for the missing reference.
REFERENCE_CONFIG = "reference_config"
#: What a run of a template without a reference says about its checks (CLI, GUI, session ``extra``).
NO_REFERENCE_NOTE = ("no reference given: the outputs of the first valid config (the default config, "
                     "else the next one that runs) are the reference the other configs are checked against")


@dataclass(frozen=True)
class AdoptedReference:
    """Outputs of one config that stand in for a missing reference, and which config gave them."""

    config_id: str
    config: Mapping[str, Any]
    expected: dict[str, Any]
    tried: int


def adopt_reference(xp: Any, candidates: Sequence[Any], run: Callable[[Any], Mapping[str, Any] | None],
                    ) -> AdoptedReference | None:
    """The first candidate whose outputs are all finite, as a float64 reference; None when none runs.

    ``candidates``: configs in the order to try (:meth:`KernelTemplate.reference_candidates`, the
    same in every worker); ``run(config)``: that config's outputs by name (NumPy or CuPy arrays),
    or None when it does not compile, launch or run. Outputs start poisoned
    (:func:`~workbench.core.domain.templates.poison_value`: NaN for floats, the largest value for integers),
    so a config that leaves an element unwritten is not valid and the next one is tried. A bool
    output's poison (true) cannot be told from a written true, so only its other outputs decide.
    """
    for tried, config in enumerate(candidates, start=1):
        outputs = run(config)
        if outputs is None:
            continue
        if any(_unwritten(xp, xp.asarray(out)) for out in outputs.values()):
            continue
        copies = {name: xp.asarray(out).astype(xp.float64) for name, out in outputs.items()}
        return AdoptedReference(str(config.id), dict(config), copies, tried)
    return None


def _unwritten(xp: Any, out: Any) -> int:
    """How many elements of ``out`` still hold the poison an unwritten element holds."""
    kind = out.dtype.kind
    if kind in "fc":
        return int(xp.count_nonzero(~xp.isfinite(out)))
    if kind in "iu":
        return int(xp.count_nonzero(out == xp.iinfo(out.dtype).max))
    return 0


def reference_details(adopted: AdoptedReference | None, config_id: str) -> dict[str, Any]:
    """What a trial of a run without a reference records about its check (empty when there is a reference)."""
    if adopted is None:
        return {REFERENCE_CONFIG: "", "reference": "not checked: no config gave finite outputs to serve as the reference"}
    if config_id == adopted.config_id:
        why = "these outputs are the reference (no reference given; the first valid config)"
    else:
        why = f"checked against the outputs of config {adopted.config_id} (no reference given; the first valid config)"
    return {REFERENCE_CONFIG: adopted.config_id, "reference": why}


def reference_summary(trials: Sequence[Any]) -> str:
    """One line naming the config whose outputs were the reference, from the trials' details; "" if none."""
    for trial in trials:
        details = getattr(trial.measurement, "details", None) or {}
        chosen = details.get(REFERENCE_CONFIG)
        if chosen:
            config = next((t.config.to_dict() for t in trials if t.config.id == chosen), None)
            shown = f"{chosen} {config}" if config is not None else str(chosen)
            return (f"no reference given: config {shown}, the first valid one, gave the reference "
                    f"the other configs were checked against")
        if REFERENCE_CONFIG in details:
            return "no reference given and no config gave finite outputs: results were not checked"
    return ""
