"""Test-wide settings: Qt renders offscreen, caches live in a per-session temp folder."""

import os
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("KERNEL_WORKBENCH_CACHE_DIR", os.path.join(tempfile.gettempdir(), "kernel-workbench-test-cache"))
# Settings, recent files and autosaves of every test (and of the programs tests start) go to a
# temporary folder: no test reads or writes the person's own.
_SANDBOX = tempfile.mkdtemp(prefix="kernel-workbench-test-home-")
os.environ["KERNEL_WORKBENCH_CONFIG_DIR"] = os.path.join(_SANDBOX, "config")
os.environ["KERNEL_WORKBENCH_DATA_DIR"] = os.path.join(_SANDBOX, "data")
# No test may silently pick up a real GPU through `auto`: GPU tests opt in with the `gpu` marker.


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests cleanly when something they need is missing, saying what: CuPy not
    installed, CUDA headers or NVRTC not found, or no device visible."""
    if not any("gpu" in item.keywords for item in items):
        return
    from workbench.backends.cuda_env import probe

    missing = probe().missing()
    if not missing:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device: " + "; ".join(missing))
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
