"""Mutated sessions and Kernel Tuner caches fed to the loaders: every outcome is a valid session or
one line of WorkbenchError, never another exception, and nothing is written anywhere."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbench.core.errors import WorkbenchError
from workbench.core.io.interop import import_kt_cache
from workbench.core.domain.measurement import Measurement, Status, Trial
from workbench.core.domain.session import Session, load_session
from workbench.core.domain.space import SearchSpace, Slot


def _session_doc() -> dict[str, Any]:
    space = SearchSpace([Slot("block_size", (32, 64, 128)), Slot("mode", ("fast", "safe"), "compute")],
                        restrictions=["block_size >= 32"], params={"n": 1024})
    session = Session(kernel="reduce", space=space, problem={"n": 1024}, device={"name": "A100", "simulated": True},
                      backend={"kind": "sim", "options": {"kernel_dirs": ["k"]}}, default_config=space.default_config())
    for i, config in enumerate(list(space)[:3]):
        session.add(Trial(i, config, Measurement(Status.OK, {"latency_ms": 1.0 + i, "memory_mb": 2.0}),
                          1.0, 2.0, {"compile_s": 0.1}))
    return session.to_dict()


def _cache_doc() -> dict[str, Any]:
    return {
        "device_name": "A100", "kernel_name": "vector_add", "problem_size": [1024, 1],
        "tune_params_keys": ["block_size_x", "tile"], "tune_params": {"block_size_x": [32, 64], "tile": [1, 2]},
        "objective": "time",
        "cache": {"32,1": {"block_size_x": 32, "tile": 1, "time": 0.5, "times": [0.5, 0.6], "GFLOP/s": 3.0},
                  "64,2": {"block_size_x": 64, "tile": 2, "time": "CompilationFailedConfig"}},
    }


_HUGE = "<an integer of 5,000 digits>"  # json.dumps cannot write one: swapped in as text
# Values a hostile or damaged file holds: huge and non-finite numbers, control characters, nesting.
_hostile_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([2**64, 2**70, -(2**63) - 1, 10**99, -1.0, 99999]),
    st.just(_HUGE),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20), st.sampled_from(["", "\n#define X 1", "a\\", "x" * 300, "__import__('os')", "../.."]),
)
_hostile = st.recursive(_hostile_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=6)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indices) into a JSON document."""
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _paths(value, prefix + (index,))
    return out


def _mutate(doc: Any, path: tuple, action: str, value: Any) -> Any:
    if not path:
        return value
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent, dict):
        parent[f"{last}_extra"] = value
    else:
        parent[last] = value
    return doc


_mutation = st.tuples(st.integers(0, 10**6), st.sampled_from(["replace", "replace", "delete", "add"]), _hostile)


def _write(path: Path, doc: Any, raw_tail: str) -> None:
    text = json.dumps(doc, allow_nan=True).replace(json.dumps(_HUGE), "9" * 5000)  # NaN, Infinity literals too
    path.write_text(text if not raw_tail else text[: len(text) // 2] + raw_tail)


def _check(load, path: Path) -> None:
    before = sorted(os.listdir(path.parent))
    try:
        result = load(path)
    except WorkbenchError as exc:
        message = str(exc)
        assert message and "\n" not in message and len(message) < 2000, message
    else:
        assert isinstance(result, Session)
        for trial in result.trials:  # what loaded is what the checks promise
            latency = trial.measurement.metrics.get("latency_ms", math.nan)
            assert math.isnan(latency) or latency >= 0
            if result.space is not None:
                assert all(result.space.slot(k).accepts(v) for k, v in trial.config.items())
    assert sorted(os.listdir(path.parent)) == before  # nothing written, not even a journal


_SETTINGS = settings(max_examples=200, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_SETTINGS
@given(mutations=st.lists(_mutation, min_size=1, max_size=3), raw_tail=st.sampled_from(["", "", "", "}", "\x00", "1" * 50]))
def test_mutated_sessions_load_or_fail_in_one_line(tmp_path: Path, mutations, raw_tail) -> None:
    doc = _session_doc()
    for pick, action, value in mutations:
        paths = _paths(doc)
        doc = _mutate(doc, paths[pick % len(paths)], action, value)
    path = tmp_path / "fuzz" / "s.json"
    path.parent.mkdir(exist_ok=True)
    _write(path, doc, raw_tail)
    _check(load_session, path)


@_SETTINGS
@given(mutations=st.lists(_mutation, min_size=1, max_size=3), raw_tail=st.sampled_from(["", "", "", "},", "\x00"]))
def test_mutated_kernel_tuner_caches_import_or_fail_in_one_line(tmp_path: Path, mutations, raw_tail) -> None:
    doc = _cache_doc()
    for pick, action, value in mutations:
        paths = _paths(doc)
        doc = _mutate(doc, paths[pick % len(paths)], action, value)
    path = tmp_path / "fuzz" / "c.json"
    path.parent.mkdir(exist_ok=True)
    _write(path, doc, raw_tail)
    _check(import_kt_cache, path)
