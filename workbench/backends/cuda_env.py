"""What the CUDA backend needs from this machine, and what is missing, in one line.

Tuning on a GPU needs three things beyond a driver: CuPy, a visible device, and the CUDA headers
(plus NVRTC). CuPy compiles its own kernels at run time (``fill``, copies, the library baselines):
CuPy 14 looks for the headers with ``cuda.pathfinder.find_nvidia_header_directory("cudart")`` and
raises "Failed to find CUDA headers" at the first such kernel without them. A machine with only a
driver gets them from pip through ``cupy-cuda12x[ctk]`` (``nvidia-cuda-runtime-cu12`` ships
``cuda_runtime.h`` and ``cuda_fp16.h``). Probing each separately lets a skipped GPU test or a
refused ``--backend cuda`` say exactly which one is missing instead of "no GPU".

Nothing here touches a device beyond counting them, and every probe returns instead of raising.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

def install_hint() -> str:
    """How to get what is missing, for messages: from a checkout its own ways, else pip's."""
    from workbench.core.domain.shipped import source_root

    if source_root() is not None:
        return "pip install -e '.[cuda12]' (or scripts/install.sh --cuda)"
    return "pip install 'kernel-workbench[cuda12]'"


#: Headers CuPy's own kernels include (cupy/carray.cuh includes cuda_fp16.h).
REQUIRED_HEADERS = ("cuda_runtime.h", "cuda_fp16.h")


@dataclass(frozen=True)
class CudaEnvironment:
    """What was found: CuPy's version (None: not importable), the device count (and why 0), the
    folder with the CUDA headers and the NVRTC library (None: not found)."""

    cupy_version: str | None
    cupy_error: str
    devices: int
    device_error: str
    header_dir: str | None
    nvrtc_path: str | None

    def missing(self) -> list[str]:
        """What stops GPU tuning, one phrase per missing piece (empty when nothing is missing)."""
        if self.cupy_version is None:
            return [f"CuPy is not installed ({self.cupy_error}; {install_hint()})"]
        problems = []
        if self.header_dir is None:
            problems.append(f"CUDA headers not found ({', '.join(REQUIRED_HEADERS)}: CuPy cannot compile its own "
                            f"kernels; {install_hint()} pulls them from pip through cupy-cuda12x[ctk])")
        if self.nvrtc_path is None:
            problems.append(f"NVRTC (libnvrtc.so.12) not found ({install_hint()})")
        if self.devices == 0:
            detail = f": {self.device_error}" if self.device_error else ""
            problems.append(f"no CUDA device visible to CuPy {self.cupy_version}{detail}")
        return problems

    def summary(self) -> str:
        """One line: what is missing, or what was found."""
        problems = self.missing()
        if problems:
            return "; ".join(problems)
        return f"CuPy {self.cupy_version}, {self.devices} device(s), headers in {self.header_dir}"


def find_header_dir() -> str | None:
    """The folder holding the CUDA runtime headers, found the way CuPy 14 finds it (pip wheels,
    conda, then CUDA_HOME / CUDA_PATH), with CuPy 13's ``CUDA_PATH`` or ``/usr/local/cuda`` after."""
    candidates: list[str] = []
    try:
        from cuda.pathfinder import find_nvidia_header_directory  # optional

        found = find_nvidia_header_directory("cudart")
        if found:
            candidates.append(found)
    except Exception:  # noqa: BLE001 - an old or missing pathfinder: fall back to the usual places
        pass
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            candidates.append(os.path.join(root, "include"))
    for folder in candidates:
        if all((Path(folder) / name).is_file() for name in REQUIRED_HEADERS):
            return str(Path(folder).resolve())
    return None


def find_nvrtc() -> str | None:
    """Path of the NVRTC library CuPy would load (``cuda.pathfinder``), or None."""
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # optional

        return str(load_nvidia_dynamic_lib("nvrtc").abs_path)
    except Exception:  # noqa: BLE001
        return None


def device_count() -> int:
    """Number of CUDA devices CuPy can see; 0 when CuPy or a driver is missing (never raises)."""
    if os.environ.get("KERNEL_WORKBENCH_FORCE_NO_GPU"):
        return 0
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:  # noqa: BLE001 - any failure means "no usable GPU"
        return 0


def device_names(count: int) -> list[str]:
    """Model name of each of the first ``count`` CUDA devices (CuPy is present: they were counted)."""
    import cupy

    names = []
    for index in range(count):
        name = cupy.cuda.runtime.getDeviceProperties(index)["name"]
        names.append(name.decode() if isinstance(name, bytes) else str(name))
    return names


def probe() -> CudaEnvironment:
    """Look for CuPy, devices, headers and NVRTC; never raises."""
    try:
        import cupy  # optional dependency, only probed here
    except Exception as exc:  # noqa: BLE001 - ImportError, or a broken install raising anything
        return CudaEnvironment(None, f"{type(exc).__name__}: {exc}", 0, "", find_header_dir(), find_nvrtc())
    devices, device_error = 0, ""
    if os.environ.get("KERNEL_WORKBENCH_FORCE_NO_GPU"):
        device_error = "KERNEL_WORKBENCH_FORCE_NO_GPU is set"
    else:
        try:
            devices = int(cupy.cuda.runtime.getDeviceCount())
        except Exception as exc:  # noqa: BLE001 - no driver, insufficient driver, no device
            device_error = str(exc) or type(exc).__name__
    return CudaEnvironment(str(cupy.__version__), "", devices, device_error, find_header_dir(), find_nvrtc())
