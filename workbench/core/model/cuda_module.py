"""Loading a compiled CUBIN for a launch: ``__constant__`` inputs and the shared-memory opt-in.

Shared by the CUDA backend and the exported CuPy script, so a script replays a tuned config the
way it was measured. The calls go to CuPy's runtime and driver modules and module objects, passed
in by the caller: CuPy is not imported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Shared memory per block (static + dynamic) a kernel gets without opting in.
DEFAULT_SMEM_PER_BLOCK = 48 * 1024


def upload_constant(runtime: Any, module: Any, name: str, value: Any) -> None:
    """Copy a host array into the module's ``__constant__`` symbol ``name``.

    ``cupy.cuda.function.Module.get_global_var`` returns the symbol's bare device address (an int
    from ``cuModuleGetGlobal``), not a ``MemoryPointer`` (only ``RawModule.get_global`` wraps it),
    so the copy goes through ``cudaMemcpy`` to that address.
    """
    host = np.ascontiguousarray(value, dtype=np.float32)
    address = int(module.get_global_var(name))
    runtime.memcpy(address, host.ctypes.data, host.nbytes, runtime.memcpyHostToDevice)


def opt_in_shared_memory(driver: Any, function: Any, static: int, dynamic: int) -> bool:
    """Allow ``dynamic`` bytes of dynamic shared memory when static + dynamic exceeds the 48 KiB a
    launch gets by default (the launch check has already compared the sum with the opt-in maximum).

    The low-level ``Function`` has no ``max_dynamic_shared_size_bytes`` property (that is
    ``RawKernel``'s); the driver call is what the property does.
    """
    if static + dynamic <= DEFAULT_SMEM_PER_BLOCK:
        return False
    driver.funcSetAttribute(function.ptr, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(dynamic))
    return True


def function_resources(driver: Any, function: Any) -> tuple[int, int]:
    """(registers per thread, static shared memory bytes) of a loaded kernel, as the driver has them
    (``cuFuncGetAttribute``): the figures of the binary that will run, whatever the compiler's
    report said or failed to say."""
    registers = int(driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_NUM_REGS, function.ptr))
    static_smem = int(driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function.ptr))
    return registers, static_smem
