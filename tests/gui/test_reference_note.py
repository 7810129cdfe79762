"""A template without a reference: the window says plainly how its outputs are checked."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from workbench.core.domain.kernel_spec import SPEC_SUFFIX, save_template_folder

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "saxpy"


def test_the_window_says_a_template_has_no_reference(window, qtbot, tmp_path):
    from workbench.runner.controller import RunRequest, start_run

    spec = dict(json.loads((EXAMPLE / f"saxpy{SPEC_SUFFIX}").read_text()), reference={"kind": "none"})
    folder = save_template_folder(tmp_path / "mine", copy.deepcopy(spec), (EXAMPLE / "saxpy.cu").read_text()).parent
    out = tmp_path / "s.json"
    start_run(RunRequest(kernel="saxpy", backend="sim", kernel_dirs=(str(folder),), budget=3, workers=1), out).run()
    window.open_session(out)
    assert window.device_label.text().endswith("no reference given")
    assert window.device_label.toolTip().startswith("no reference given")
    assert "no reference given" in window.statusBar().currentMessage()
