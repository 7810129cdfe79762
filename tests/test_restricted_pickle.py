"""What the tuning process unpickles from a worker's or a module reader's pipe: records, never code."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.core.domain.measurement import Measurement, Status
from workbench.core.restricted_pickle import NUMPY_NAMES, RefusedName, restricted_loads
from workbench.runner.messages import Reply
from workbench.runner.worker import reply_bytes


def _text(value: str) -> bytes:
    data = value.encode()
    return b"\x8c" + bytes([len(data)]) + data  # SHORT_BINUNICODE


def _call(module: str, name: str, *args: str) -> bytes:
    """Protocol-4 bytes that look ``name`` up in ``module`` (STACK_GLOBAL) and call it with ``args``."""
    return (b"\x80\x04" + _text(module) + _text(name) + b"\x93" + b"(" + b"".join(_text(a) for a in args)
            + b"tR.")


@pytest.mark.parametrize("extra", [frozenset(), NUMPY_NAMES])
def test_a_dotted_name_cannot_reach_what_a_workbench_module_imported(tmp_path: Path, extra) -> None:
    """Pickle's lookup follows dotted names from protocol 4 on: through a workbench module's imports
    the bytes reached ``io.FileIO`` (which emptied any file they named) and ``subprocess.Popen``."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    for module, name in (("workbench.core.restricted_pickle", "io.FileIO"),
                         ("workbench.core.fs", "tempfile._io.FileIO")):
        with pytest.raises(RefusedName, match="names"):
            restricted_loads(_call(module, name, str(victim), "w"), extra)
    assert victim.read_text() == "precious"
    marker = tmp_path / "ran"
    with pytest.raises(RefusedName):
        restricted_loads(_call("workbench.core.fs", "os.system", f"touch {marker}"), extra)
    assert not marker.exists()


def test_only_record_classes_defined_in_the_named_module_are_allowed() -> None:
    """A class merely imported by a workbench module, or a workbench class that is not a record
    (constructing a pool starts processes), could be called with arguments of the bytes' choosing."""
    for module, name in (("workbench.core.fs", "Path"), ("workbench.runner.pool", "WorkerPool"),
                         ("workbench.runner.pool", "Config")):
        with pytest.raises(RefusedName, match=f"names {module}.{name}"):
            restricted_loads(_call(module, name, "x"))


def test_a_workers_reply_with_numpy_figures_still_reads_back() -> None:
    measurement = Measurement(Status.OK, {"latency_ms": np.float64(1.5)}, details={"times": np.arange(3.0)})
    reply = Reply(3, measurement, {"run": 0.1})
    back = restricted_loads(reply_bytes(reply), NUMPY_NAMES)  # as the worker sends it
    assert back.seq == 3 and back.measurement.status is Status.OK
    assert back.measurement.metrics["latency_ms"] == 1.5 and list(back.measurement.details["times"]) == [0, 1, 2]


def test_a_benchmarks_declarations_still_read_back(tmp_path: Path) -> None:
    """A python benchmark's target travels with its search space, a marked value class."""
    from workbench.backends.base import BackendSpec
    from workbench.backends.python import PythonBackend

    bench = tmp_path / "bench.py"
    bench.write_text("SPACE = {'x': [1, 2, 4]}\nRESTRICTIONS = ['x > 1']\n"
                     "def measure(config):\n    return {'latency_ms': 1.0}\n")
    target = PythonBackend.target(BackendSpec("python", {"path": str(bench)}))
    assert sorted(config["x"] for config in target.space) == [2, 4]


def _built(module: str, name: str, key: str) -> bytes:
    """Protocol-4 bytes that look ``module.name`` up and BUILD it with ``{key: None}`` as slot state."""
    return (b"\x80\x04" + _text(module) + _text(name) + b"\x93" + b"N}" + _text(key) + b"N" + b"s\x86b.")


@pytest.mark.parametrize("module, name", [("workbench.core.domain.space", "Config"),
                                          ("numpy._core.multiarray", "_reconstruct")])
def test_bytes_cannot_set_attributes_of_a_class_or_function_of_the_process(module, name) -> None:
    """BUILD sets attributes on what it is given: given a class, on the class itself, in the
    tuning process (``Config.__hash__ = None`` made every config unhashable; ``Config.to_dict =
    dict`` saved every trial's config as ``{}``, the session's earlier trials too)."""
    from workbench.core.domain.space import Config

    with pytest.raises(RefusedName, match="sets the state of"):
        restricted_loads(_built(module, name, "__hash__"), NUMPY_NAMES)
    assert hash(Config({"a": 1})) == hash(Config({"a": 1}))
    assert Config.__dict__.get("__hash__") is not None


def test_bytes_cannot_change_an_enum_member_of_the_process() -> None:
    """``Status("ok")`` is the process's own member: BUILD with ``{"_value_": "crashed"}`` made every
    ok trial saved afterwards a crash."""
    from workbench.core.domain.measurement import Status

    data = (b"\x80\x04" + _text("workbench.core.domain.measurement") + _text("Status") + b"\x93" + _text("ok")
            + b"\x85R}" + _text("_value_") + _text("crashed") + b"sb.")
    with pytest.raises(RefusedName, match="sets the state of"):
        restricted_loads(data)
    assert Status.OK.value == "ok"
