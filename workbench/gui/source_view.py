"""The rendered CUDA source of the selected config, with its slot values marked, and its resource use.

Rendering is the template's own (``KernelTemplate.render``), the exact text the backend compiled.
Slot values reach the source as ``#define`` lines; those lines and every use of a slot's macro are
highlighted, so a reader sees at once where each tuned decision acts.
"""

from __future__ import annotations

import functools
import html
import io
import os
import tokenize
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout, QWidget

from workbench.core.errors import WorkbenchError
from workbench.core.domain.records import BackendOptions
from workbench.core.domain.session import Session
from workbench.core.domain.space import Config
from workbench.core.domain.templates import folder_holding, stands_in_for_another
from workbench.gui.model import SessionModel
from workbench.core.domain.figures import fmt

#: The largest python benchmark the view shows, the most Python text it parses to compare the file
#: with the code the session measured (the benchmark's and its modules' beside it together: a
#: parsed tree takes about 1,500 times its text), and the most uses of slots it marks. A session
#: names the file it shows: one naming a megabyte of short lines held the window for half a minute.
MAX_SHOWN_BYTES = 1024 * 1024
MAX_PARSED_BYTES = 256 * 1024
MAX_MARKS = 10_000
RESOURCE_METRICS = (("registers", "registers/thread"), ("smem_bytes", "shared mem (B)"), ("spill_bytes", "spills (B)"),
                    ("occupancy", "occupancy"))
_DEFINE_COLOUR = QColor(255, 236, 160)
_USE_COLOUR = QColor(220, 236, 255)


def _template(name: str, dirs: tuple[str, ...]) -> Any:
    """The template ``name`` from ``dirs`` or the shipped library, read again once its files change
    (a template edited in the editor and saved: the source view showed the code it had before)."""
    from workbench.core.domain.templates import kernels_dir

    folders = (*dirs, str(kernels_dir()))
    stamps = []
    for folder in folders:
        for suffix in (".py", ".kernel.json", ".cu"):
            try:
                stamps.append(os.stat(os.path.join(folder, name + suffix)).st_mtime_ns)
            except (OSError, ValueError):
                stamps.append(0)
    return _found_template(name, folders, tuple(stamps))


@functools.lru_cache(maxsize=8)
def _found_template(name: str, folders: tuple[str, ...], _stamps: tuple[int, ...]) -> Any:
    from workbench.core.domain.templates import find_template

    return find_template(name, *folders)


def render_source(session: Session, config: Config, problem: Mapping[str, Any] | None = None,
                  opened: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(source text, note) for a config of the session's kernel at ``problem`` (None: the session's
    own); the note says what is shown. A size sweep's trial renders at its own size (pass
    ``session.problem_of(trial)``): the problem's defines are part of the code that was measured.
    ``opened``: template name -> the folder the person opened it from (``gui --kernel-dir``, File >
    Open kernel folder..., the editor): such a template renders from there."""
    options = session.backend.get("options") or BackendOptions()
    if session.kind == "python":
        path = options.get("path")
        if path and Path(path).is_file() and not (str(path).endswith(".py") and Path(path).resolve().suffix == ".py"):
            # (the session file names it: /proc/self/environ, a key file was shown on opening one)
            return "", f"python benchmark {path}: not a .py file, so it is not shown"
        if path and Path(path).is_file():
            from workbench.backends.python import TooMuchToParse, code_identities
            from workbench.core.fs import read_capped

            encoding = "utf-8"
            try:  # (a path a session file names: read as an untrusted file)
                data = read_capped(path, "python benchmark", MAX_SHOWN_BYTES)
                # (as Python reads it: a BOM or a ``# -*- coding: latin-1 -*-`` line names the encoding)
                encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
                text = data.decode(encoding)
            except WorkbenchError as exc:
                return "", f"python benchmark: {exc}"
            except UnicodeDecodeError:
                # (a coding line may name another encoding than UTF-8, which the text then is not;
                # named as the line names it: the codec's own name for cp1252 is "charmap")
                said = ("not UTF-8 text" if encoding.replace("-", "").lower() in {"utf8", "utf8sig"}
                        else f"not {encoding} text, the encoding its coding line names")
                return "", f"python benchmark {path}: {said}, so it is not shown"
            except (SyntaxError, LookupError) as exc:
                if "unknown encoding" in str(exc):
                    return "", (f"python benchmark {path}: its coding line names an encoding Python does not "
                                "read, so it is not shown")
                return "", f"python benchmark {path}: not UTF-8 text, so it is not shown"
            # (an edit since: the command line refuses to continue it; shown, the file passed for the code measured)
            try:
                edited = bool(session.source_hash) and session.source_hash not in code_identities(
                    data, Path(path).resolve().parent, parse_limit=MAX_PARSED_BYTES)
                changed = f" ({BENCHMARK_CHANGED}: this is not the code its trials ran)" if edited else ""
            except TooMuchToParse:
                changed = " (not compared with the code its trials ran: too much Python beside it to read here)"
            return text, f"python benchmark {path} (config passed to measure()){changed}"
        return "", (f"python benchmark {path or '(none recorded)'} is not there: its source is not shown "
                    "(tune NEW_PLACE/NAME.py --resume SESSION records where it is now)")
    folder = (opened or {}).get(session.kernel)
    try:  # the shipped library, and a folder the person opened: one the file names is never imported
        template = _template(session.kernel, (folder,) if folder else ())
    except WorkbenchError as exc:
        return "", f"the template could not be loaded: {exc}"
    opened_here = os.path.abspath(folder) if folder else None
    folders = [d for d in options.get("kernel_dirs", ()) or () if isinstance(d, str) and os.path.abspath(d) != opened_here]
    other = template is not None and stands_in_for_another(template, session.source_hash, folders) is not None
    if template is None or other:  # (the shipped namesake of a folder's template is other code)
        if folders:
            own = folder_holding(session.kernel, folders) or folders[0]
            return "", (f"template {session.kernel!r} comes from the folder {own!r}, which is not loaded "
                        "(opening a file never runs code); File > Open kernel folder... shows it in the kernel editor")
        if session.kind == "template":  # (said "a recording has no source" of a template's own session)
            return "", (f"no template named {session.kernel!r} on this machine: open the folder it came from "
                        "with File > Open kernel folder... to see its source")
        return "", f"no template named {session.kernel!r} on this machine (a recording has no source)"
    slots = {slot.name for slot in session.space.slots} if session.space is not None else set(config)
    if slots != {slot.name for slot in template.slots}:
        if session.kind == "template":  # (its own template, edited since: not a recording of another kernel)
            return "", (f"the template {session.kernel!r} on this machine has other slots than this session: "
                        f"{TEMPLATE_CHANGED}, so its source is not the code these trials ran")
        return "", (f"the template named {session.kernel!r} on this machine has other slots than this session "
                    "(a recording of another kernel of that name has no source here)")
    changed = f" ({TEMPLATE_CHANGED}: this is not the code its trials ran)" if code_changed(session, template) else ""
    if not changed and opened_here is not None and _other_code(session, template):
        # a folder opened for this kernel (another machine's copy, an edited draft): no recorded
        # home to compare with, and its code passed for the code measured, where export warned
        changed = f" (not the code its trials ran: the template in {folder} is not the one this session measured)"
    try:
        return (template.render(config, session.problem if problem is None else dict(problem)),
                f"{template.name}.cu rendered for this config{changed}")
    except WorkbenchError as exc:
        return "", f"cannot render: {exc}"


#: What the source view's note (and Compare's diff) says of a template edited since the session.
TEMPLATE_CHANGED = "the template changed since this session was measured"
BENCHMARK_CHANGED = "the benchmark changed since this session was measured"


def code_changed(session: Session, template: Any) -> bool:
    """Whether ``template`` (found on this machine under the session's kernel name) is the one
    ``session`` measured, from the same folder, and no longer its code: its source hash is neither
    the session's nor an earlier hash of the same code. A template of that name from another
    folder is another template, of which nothing is claimed; a session of another backend (a
    recording, a python benchmark) is never so."""
    return _other_code(session, template) and _same_home(session, template)


def _other_code(session: Session, template: Any) -> bool:
    """Whether ``template`` is not the code ``session`` (of a template, simulated or measured) ran."""
    backend = session.backend if isinstance(session.backend, dict) else {}
    return (backend.get("kind") in ("sim", "cuda") and bool(session.source_hash)
            and not template.is_code_of(session.source_hash))


def _same_home(session: Session, template: Any) -> bool:
    """Whether ``template`` lies where ``session`` was measured from: one of its recorded template
    folders, or the shipped library for a session that recorded none."""
    from workbench.core.domain.templates import kernels_dir

    where = template.source_path or template.path
    if not where:
        return False
    home = Path(where).resolve().parent
    options = session.backend.get("options") if isinstance(session.backend, dict) else None
    folders = [d for d in ((options or {}).get("kernel_dirs") or ()) if isinstance(d, str)]
    if not folders:
        try:
            return home == kernels_dir().resolve()
        except WorkbenchError:
            return False
    return any(Path(folder).resolve() == home for folder in folders)


def changed_template_note(session: Session, opened: Mapping[str, str] | None = None) -> str:
    """One line for the status bar when the session shown was measured with code its template no
    longer has (a template edited and saved since): continuing it is then refused, and its source
    view shows code its trials did not run. "" otherwise, or when the template is not loaded here
    (looked up as the source view does: the shipped library and the folders the person opened)."""
    folder = (opened or {}).get(session.kernel)
    try:
        template = _template(session.kernel, (folder,) if folder else ())
    except WorkbenchError:
        return ""
    if template is None or not code_changed(session, template):
        return ""
    return (f"the template {session.kernel} changed since this session was measured: its trials ran other code, "
            "and continuing it is refused (File > New session, then Start, tunes the template as it is now)")


class SourceView(QWidget):
    """Follows the model's selection: header with config and resources, then the highlighted source."""

    def __init__(self, model: SessionModel, parent: QWidget | None = None,
                 opened: Callable[[], Mapping[str, str]] = dict) -> None:
        super().__init__(parent)
        self.model = model
        self.opened = opened  # the folders the person opened templates from (see render_source)
        self.header = QLabel("Select a trial (click a point or a table row) to see its source.")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.editor = QPlainTextEdit()
        self.editor.setReadOnly(True)
        self.editor.setAccessibleName("Source of the selected trial")
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        font = QFont("monospace", 9)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.editor.setFont(font)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.editor, 1)
        layout.addStretch(0)  # (the room under the header while there is no source to show)
        self.editor.setVisible(False)  # (empty until a trial is selected)
        model.selection_changed.connect(self._on_selection_changed)
        model.session_changed.connect(self._on_session_changed)

    def _on_session_changed(self) -> None:
        self.editor.clear()
        self.editor.setVisible(False)  # (empty until a trial is selected)
        self.header.setText("Select a trial (click a point or a table row) to see its source.")

    def _on_selection_changed(self, index: int | None) -> None:
        if index is None or self.model.session is None:
            return
        self.show_trial(index)

    def show_trial(self, index: int) -> None:
        trial = self.model.trials[index]
        assert self.model.session is not None  # it holds the trial
        source, note = render_source(self.model.session, trial.config, self.model.session.problem_of(trial),
                                     self.opened())
        metrics, details = trial.measurement.metrics, trial.measurement.details
        resources = [f"{label} <b>{fmt(metrics[key])}</b>" for key, label in RESOURCE_METRICS if key in metrics]
        limiter = details.get("occupancy_limiter") or details.get("limiter")
        if limiter:
            resources.append(f"occupancy limited by <b>{html.escape(str(limiter))}</b>")
        if details.get("estimated") or (isinstance(details.get("resources"), dict) and details["resources"].get("estimated")):
            resources.append("<i>(resources estimated, not compiled)</i>")
        config = ", ".join(f"<b>{html.escape(k)}</b>={html.escape(str(v))}" for k, v in trial.config.items())
        lines = [f"trial {trial.index} [{trial.config.id}] &middot; {html.escape(trial.status.value)} &middot; {config}",
                 " &nbsp; ".join(resources) or "no resource usage reported", f"<i>{html.escape(note)}</i>"]
        self.header.setText("<br>".join(lines))
        text = source or trial.measurement.log or ""
        self.editor.setPlainText(text)
        # an empty box under "a recording has no source" read as a view that failed to load
        self.editor.setVisible(bool(text))
        self._mark_slots(trial.config)

    def _mark_slots(self, config: Any) -> None:
        """Background on the ``#define`` of each slot and on every later use of its macro."""
        selections: list[QTextEdit.ExtraSelection] = []
        document: QTextDocument = self.editor.document()
        text = document.toPlainText()
        python = self.model.session is not None and self.model.session.kind == "python"
        for name in config:
            macro = name if python else name.upper()  # templates see slots as #define NAME
            define = QTextCharFormat()
            define.setBackground(_DEFINE_COLOUR)
            define.setFontWeight(QFont.Weight.Bold)
            use = QTextCharFormat()
            use.setBackground(_USE_COLOUR)
            pattern = re.compile(rf"\b{re.escape(macro)}\b")
            for match in pattern.finditer(text):
                if len(selections) >= MAX_MARKS:
                    break
                cursor = QTextCursor(document)
                cursor.setPosition(match.start())
                line = cursor.block().text().lstrip()
                if line.startswith("#define") or (python and line.startswith(("SPACE", f'"{name}"'))):
                    cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock)
                    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock, QTextCursor.MoveMode.KeepAnchor)
                    fmt_ = define
                else:
                    cursor.setPosition(match.end(), QTextCursor.MoveMode.KeepAnchor)
                    fmt_ = use
                selection = QTextEdit.ExtraSelection()
                selection.cursor = cursor
                selection.format = fmt_
                selections.append(selection)
        self.editor.setExtraSelections(selections)

    def marked_count(self) -> int:
        return len(self.editor.extraSelections())
