"""Argument buffers for the CPU runs of rendered kernels (tests/test_templates_run.py, tests/test_templates_more.py).

Both harnesses hand a kernel its arguments as raw ``<name>.bin`` files. One writer, so the two agree
on what an output holds before the kernel runs: zeros where the template resets it to zero, else
poison (NaN for floats, all ones for integers) so that elements the kernel never writes show up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from workbench.core.templates import KernelTemplate


def write_arg_buffers(template: KernelTemplate, problem: Mapping[str, Any], inputs: Mapping[str, Any], workdir: Path) -> None:
    """Write every array argument of ``template`` to ``workdir/<name>.bin``: inputs as given, outputs reset."""
    for arg in template.args:
        if arg.kind == "scalar":
            continue
        if arg.kind in ("in", "inout"):
            data = np.ascontiguousarray(inputs[arg.name], dtype=arg.dtype)
        elif arg.reset == "zero":
            data = np.zeros(arg.shape(problem), dtype=arg.dtype)
        else:
            data = np.full(arg.shape(problem), np.nan if np.dtype(arg.dtype).kind == "f" else -1).astype(arg.dtype)
        data.tofile(workdir / f"{arg.name}.bin")
