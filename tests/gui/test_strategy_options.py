"""The strategy box's options form: generated from OPTIONS, typed, checked, and reaching the run."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QSpinBox

from workbench.core.errors import WorkbenchError
from workbench.gui.strategy_options import StrategyOptionsForm
from workbench.search.base import STRATEGIES, strategy_class


def test_form_has_one_typed_editor_per_option_of_every_strategy(qtbot) -> None:
    form = StrategyOptionsForm()
    qtbot.addWidget(form)
    kinds = {"bool": QCheckBox, "int": QSpinBox, "float": QDoubleSpinBox, "choice": QComboBox}
    for name in STRATEGIES:
        form.set_strategy(name)
        options = strategy_class(name).OPTIONS
        assert list(form.editors) == [o.name for o in options]
        for option in options:
            editor = form.editors[option.name][1]
            assert isinstance(editor, kinds[option.type_name]), (name, option.name)
            assert option.description in editor.toolTip()
        assert form.values() == {o.name: o.default for o in options}  # every editor shows its default
        assert form.changed_options() is None


def test_edited_options_are_checked_and_reach_the_run(window, qtbot) -> None:
    toolbar = window.toolbar
    toolbar.strategy.setCurrentText("annealing")
    form = toolbar.strategy_options
    assert form.strategy == "annealing" and set(form.editors) == {"t_start", "t_min", "cooling", "restart_best"}
    form.editors["cooling"][1].setValue(0.8)
    assert toolbar.request()["strategy_options"] == {"cooling": 0.8}
    assert toolbar.options_button.text() == "Options (1)"  # a changed option is never hidden
    form.editors["cooling"][1].setValue(0.9)
    assert toolbar.request()["strategy_options"] is None  # back at the default: nothing to pass
    assert toolbar.options_button.text() == "Options"

    toolbar.strategy.setCurrentText("tpe")
    form.editors["startup"][1].setValue(3)
    form.editors["failures"][1].setCurrentIndex(form.editors["failures"][1].findData("ignore"))
    form.editors["multivariate"][1].setChecked(False)
    assert toolbar.request()["strategy_options"] == {"startup": 3, "failures": "ignore", "multivariate": False}

    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({**toolbar.request(), "kernel": "vector_add", "backend": "sim", "budget": 4,
                          "options": {"compile": "estimate"}})
    stored = window.model.session.strategy
    assert stored["name"] == "tpe"
    assert (stored["options"]["startup"], stored["options"]["failures"], stored["options"]["multivariate"]) == (
        3, "ignore", False)


def test_a_value_the_strategy_refuses_is_one_clear_error(qtbot, monkeypatch) -> None:
    form = StrategyOptionsForm()
    qtbot.addWidget(form)
    form.set_strategy("annealing")
    form.editors["cooling"][1].setValue(0.5)
    from workbench.search.annealing import Annealing

    def refuse(cls: type, options: dict) -> dict:
        raise WorkbenchError("strategy option cooling=0.5 is refused")

    monkeypatch.setattr(Annealing, "validate_options", classmethod(refuse))
    with pytest.raises(WorkbenchError, match="cooling=0.5"):
        form.changed_options()


def test_reopened_session_options_fill_the_form(qtbot, window) -> None:
    toolbar = window.toolbar
    toolbar.apply({"strategy": "local", "strategy_options": {"perturbation": 5, "adjacent_only": True}})
    assert toolbar.request()["strategy_options"] == {"perturbation": 5, "adjacent_only": True}
    toolbar.apply({"strategy": "local"})  # another session of the same strategy, at its defaults
    assert toolbar.request()["strategy_options"] is None


def test_spin_boxes_span_the_declared_bounds(qtbot) -> None:
    """The form offers exactly the range the strategy accepts (not +-2**31 for every int)."""
    form = StrategyOptionsForm()
    qtbot.addWidget(form)
    for name in STRATEGIES:
        form.set_strategy(name)
        for option in strategy_class(name).OPTIONS:
            editor = form.editors[option.name][1]
            if isinstance(editor, (QSpinBox, QDoubleSpinBox)):
                assert (editor.minimum(), editor.maximum()) == (option.low, option.high), (name, option.name)
                assert option.range_text in editor.toolTip()


@pytest.mark.parametrize("stored", ["x", 10**12, [1], 0])
def test_a_bad_stored_option_keeps_the_default_and_the_rest_is_restored(qtbot, window, stored) -> None:
    toolbar = window.toolbar
    with pytest.raises(WorkbenchError) as info:
        toolbar.apply({"strategy": "agents", "strategy_options": {"elite": stored, "batch": 5}, "budget": 7, "seed": 3})
    text = str(info.value)
    assert "\n" not in text and "elite=" in text and "[1, 100]" in text and "its default 4 is used" in text
    assert toolbar.request()["strategy_options"] == {"batch": 5}  # elite at its default, the good one restored
    assert (toolbar.budget.value(), toolbar.seed.value()) == (7, 3)  # applied after the options: not half loaded


def test_a_stored_choice_not_offered_or_a_float_too_fine_is_said(qtbot, window) -> None:
    toolbar = window.toolbar
    with pytest.raises(WorkbenchError, match="policy='other' of strategy 'agents' must be one of: decomposed, bandit"):
        toolbar.apply({"strategy": "agents", "strategy_options": {"policy": "other"}})
    assert toolbar.request()["strategy_options"] is None
    toolbar.apply({"strategy": "agents", "strategy_options": {"min_gain": 0.0000125}})  # widens the decimals
    assert toolbar.request()["strategy_options"] == {"min_gain": 0.0000125}
    with pytest.raises(WorkbenchError, match=r"min_gain=1\.23456789012e-05 is shown and run as"):
        toolbar.apply({"strategy": "agents", "strategy_options": {"min_gain": 1.23456789012e-5}})


def test_reopening_a_hand_edited_session_reports_one_line_without_a_traceback(qtbot, window, cli, tmp_path) -> None:
    import json

    path = tmp_path / "s.json"
    done = cli("tune", "vector_add", "--backend", "sim", "--budget", "4", "--executor", "inline", "--seed", "5",
               "--out", path)
    assert done.returncode == 0, done.stderr
    data = json.loads(path.read_text())
    data["strategy"]["options"]["elite"] = [1]
    path.write_text(json.dumps(data))
    window.open_session(path)  # must not raise
    assert len(window.model.trials) == 4
    message = window.statusBar().currentMessage()
    assert "elite=[1]" in message and "\n" not in message
    assert window.toolbar.strategy_options.values()["elite"] == 4 and window.toolbar.seed.value() == 5


def test_picking_another_strategy_and_back_keeps_what_was_edited(qtbot, window) -> None:
    toolbar = window.toolbar
    toolbar.strategy.setCurrentText("annealing")
    toolbar.strategy_options.editors["cooling"][1].setValue(0.8)
    toolbar.strategy.setCurrentText("tpe")
    assert toolbar.request()["strategy_options"] is None  # tpe at its defaults
    toolbar.strategy.setCurrentText("annealing")
    assert toolbar.request()["strategy_options"] == {"cooling": 0.8}
    toolbar.apply({"strategy": "local"})  # another session's settings: nothing kept from this one
    toolbar.strategy.setCurrentText("annealing")
    assert toolbar.request()["strategy_options"] is None


def test_options_edited_for_a_strategy_survive_a_run_of_another(qtbot, window) -> None:
    """A Start of another strategy forgot them, while the saved session kept them: the same session
    then ran with other options depending on whether it had been reopened."""
    toolbar = window.toolbar
    toolbar.strategy.setCurrentText("annealing")
    toolbar.strategy_options.editors["cooling"][1].setValue(0.8)
    toolbar.strategy.setCurrentText("random")
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({**toolbar.request(), "kernel": "vector_add", "backend": "sim", "budget": 2,
                          "options": {"compile": "estimate"}})
    toolbar.strategy.setCurrentText("annealing")
    assert toolbar.request()["strategy_options"] == {"cooling": 0.8}
    # a run of that strategy started by automation without options runs its defaults, and the form
    # shows them (it kept showing the edit, which the next Start then used)
    toolbar.strategy.setCurrentText("random")
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({"kernel": "vector_add", "backend": "sim", "budget": 1, "strategy": "annealing",
                          "options": {"compile": "estimate"}})
    assert window.model.session.strategy["options"]["cooling"] == 0.9
    assert toolbar.strategy.currentText() == "annealing" and toolbar.request()["strategy_options"] is None
    # a Start refused keeps the edits made for the other strategies
    toolbar.strategy.setCurrentText("tpe")
    toolbar.strategy_options.editors["startup"][1].setValue(3)
    toolbar.strategy.setCurrentText("random")
    with pytest.raises(WorkbenchError):
        window.start_run({**toolbar.request(), "kernel": "no_such_kernel"})
    toolbar.strategy.setCurrentText("tpe")
    assert toolbar.request()["strategy_options"] == {"startup": 3}


def test_a_reopened_session_offers_the_options_of_its_earlier_strategies(qtbot, window, cli, tmp_path) -> None:
    path = tmp_path / "s.json"
    base = ("--backend", "sim", "--executor", "inline", "--quiet")
    assert cli("tune", "vector_add", *base, "--budget", "3", "--strategy", "annealing", "--option", "cooling=0.8",
               "--out", path).returncode == 0
    done = cli("tune", "--resume", path, *base, "--budget", "2", "--strategy", "local", "--option", "perturbation=5")
    assert done.returncode == 0, done.stderr
    window.open_session(path)
    toolbar = window.toolbar
    assert toolbar.strategy.currentText() == "local" and toolbar.request()["strategy_options"] == {"perturbation": 5}
    toolbar.strategy.setCurrentText("annealing")
    assert toolbar.request()["strategy_options"] == {"cooling": 0.8}

    toolbar.strategy_options.editors["cooling"][1].setValue(0.9)  # back at the default: the form is what runs
    with qtbot.waitSignal(window.run_done, timeout=120_000):
        window.start_run({**toolbar.request(), "budget": 1})
    stored = window.model.session.strategy
    assert stored["name"] == "annealing" and stored["options"]["cooling"] == 0.9
    assert stored["earlier_options"]["local"]["perturbation"] == 5


def test_options_checked_against_each_other_survive_a_switch_and_a_reopen(qtbot, window, cli, tmp_path) -> None:
    """t_start=0.001 with t_min=0.0001 is a valid pair, but each was checked alone against the
    other's default: switching away and back, or reopening the session, lost t_start (the run
    would then continue with t_start=0.3) and said t_min was at its default when it was not."""
    toolbar = window.toolbar
    toolbar.strategy.setCurrentText("annealing")
    editors = toolbar.strategy_options.editors
    editors["t_min"][1].setValue(0.0001)
    editors["t_start"][1].setValue(0.001)
    pair = toolbar.request()["strategy_options"]
    assert pair["t_start"] == pytest.approx(0.001) and pair["t_min"] == pytest.approx(0.0001)
    toolbar.strategy.setCurrentText("genetic")
    toolbar.strategy.setCurrentText("annealing")
    assert toolbar.request()["strategy_options"] == pair
    out = tmp_path / "annealed.json"
    done = cli("tune", "transpose", "--backend", "sim", "--resources", "estimated", "--strategy", "annealing",
               "--option", "t_start=0.001", "--option", "t_min=0.0001", "--budget", "2", "--executor", "inline",
               "--out", str(out))
    assert done.returncode == 0, done.stderr
    window.open_session(out)
    options = window.toolbar.request()["strategy_options"]
    assert options["t_start"] == pytest.approx(0.001) and options["t_min"] == pytest.approx(0.0001)
    assert "default" not in window.statusBar().currentMessage()


def test_a_stored_option_this_version_lacks_does_not_break_a_valid_pair(qtbot) -> None:
    """With an option since removed beside the pair, the form fell back to checking each value
    alone and dropped t_start again, where the run controller kept both (form and run disagreed)."""
    from workbench.gui.strategy_options import StrategyOptionsForm

    form = StrategyOptionsForm()
    qtbot.addWidget(form)
    form.set_strategy("annealing")
    said = form.set_values({"t_start": 0.001, "t_min": 0.0001, "old_gone": 3})
    assert len(said) == 1 and "old_gone" in said[0]
    assert form.values()["t_start"] == pytest.approx(0.001) and form.values()["t_min"] == pytest.approx(0.0001)
