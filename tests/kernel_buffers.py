"""Argument buffers for the CPU runs of rendered kernels (tests/test_templates_run.py, tests/test_templates_more.py).

Both harnesses hand a kernel its arguments as raw ``<name>.bin`` files. The written buffers get the
template's own reset policy (:meth:`KernelTemplate.output_resets`, the one the CUDA backend and the
exported CuPy script apply), so an output holds what it would hold on a GPU before the checked
launch: zeros where the template resets it to zero, the inputs for inout, else poison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from workbench.core.domain.templates import KernelTemplate, reset_buffers


def write_arg_buffers(template: KernelTemplate, problem: Mapping[str, Any], inputs: Mapping[str, Any], workdir: Path) -> None:
    """Write every array argument of ``template`` to ``workdir/<name>.bin``: inputs as given, outputs reset."""
    buffers: dict[str, np.ndarray] = {}
    for arg in template.args:
        if arg.kind == "scalar":
            continue
        if arg.kind in ("in", "inout"):
            buffers[arg.name] = np.array(inputs[arg.name], dtype=arg.dtype, order="C")
        else:
            buffers[arg.name] = np.empty(arg.shape(problem), dtype=arg.dtype)
    reset_buffers(template.output_resets(), buffers, inputs, poison=True, upload=np.copyto)
    for name, data in buffers.items():
        data.tofile(workdir / f"{name}.bin")
