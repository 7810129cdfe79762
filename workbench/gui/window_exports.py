"""The main window's exports (File > Export ...): where each may write, what it says, and the
chart, best-config, CSV and Kernel Tuner cache exports themselves.

A part of :class:`~workbench.gui.main_window.MainWindow` kept in a module of its own: the window
inherits it, and it reads the window's session model, open file and run (declared below).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QFileDialog, QLabel, QMainWindow

from workbench.core.errors import WorkbenchError
from workbench.gui.text import EXPORT_SUFFIXES

if TYPE_CHECKING:
    from workbench.gui.bridge import EngineThread
    from workbench.gui.charts import ChartBase
    from workbench.gui.compare_view import CompareView
    from workbench.gui.model import SessionModel
    from workbench.gui.run_panel import RunToolbar


class WindowExports(QMainWindow):
    """File > Export's actions of the main window."""

    # What the window holds (MainWindow sets them) and the window's helpers these actions use: declared
    # here for the type checker, defined by MainWindow, which overrides every method below that raises.
    model: SessionModel
    path: Path | None
    autosave_path: Path | None
    engine_thread: EngineThread | None
    toolbar: RunToolbar
    timing_badge: QLabel
    _exports_written: dict[str, tuple[int, int, int, int]]

    @property
    def running(self) -> bool:
        raise NotImplementedError

    @property
    def charts(self) -> dict[str, ChartBase]:
        raise NotImplementedError

    @property
    def compare(self) -> CompareView:
        raise NotImplementedError

    def _last_dir(self) -> str:
        raise NotImplementedError

    def _remember_dir(self, path: str) -> None:
        raise NotImplementedError

    def _guarded(self, action: Any, title: str) -> bool:
        raise NotImplementedError

    def _nothing_yet(self, what: str) -> bool:
        raise NotImplementedError

    def _on_export_csv(self) -> None:
        if self.model.session is None:
            self._nothing_yet("export")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export CSV", str(Path(self._last_dir()) / "trials.csv"), "CSV (*.csv)")
        if path:
            self._remember_dir(path)
            self._guarded(lambda: self.export_csv(path), "Cannot export CSV")

    def export_csv(self, path: str) -> None:
        """Every trial of the session as CSV (see :meth:`_export_target` for what may be replaced)."""
        from workbench.core.io.interop import export_csv

        if self.model.session is None:
            raise WorkbenchError("no session to export")
        target = self._export_target(path)
        notes: list[str] = []
        export_csv(self.model.session, target, notes)
        self._exported(target, *(f"note: {note}" for note in notes))  # a column renamed, as export says it

    def _on_export_kt_cache(self) -> None:
        if self.model.session is None:
            self._nothing_yet("export")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export as Kernel Tuner cache",
                                              str(Path(self._last_dir()) / "cache.json"), "JSON (*.json)")
        if path:
            self._remember_dir(path)
            self._guarded(lambda: self.export_kt_cache(path), "Cannot export a Kernel Tuner cache")

    def export_kt_cache(self, path: str) -> None:
        """The session as a Kernel Tuner cache file, one record per config (``tune --replay`` and
        Kernel Tuner read it back; see :meth:`_export_target` for what may be replaced)."""
        from workbench.core.io.interop import export_kt_cache

        if self.model.session is None:
            raise WorkbenchError("no session to export")
        target = self._export_target(path)
        notes: list[str] = []
        export_kt_cache(self.model.session, target, notes)
        self._exported(target, *(f"note: {note}" for note in notes))  # what the file cannot carry, as export says it

    def _export_target(self, path: str) -> Path:
        """Where an export may write: never over the open session's file, its autosave or a running
        run's output (the dialog's "replace?" was all that stood in the way, and a read-only file
        was replaced too, the write being a rename). A file already there is kept as ``.bak``
        (``.2.bak``, ... when that is taken), unless it is an export unchanged since it was written
        (its seal, :mod:`workbench.core.io.export_seal`, or this window's record of what it wrote):
        exporting again and again to one name kept a numbered backup of each earlier export."""
        from workbench.core.io.export_seal import unchanged_export
        from workbench.core.io.output_files import (check_folder, check_regular_or_absent, check_writable, keep_backup,
                                                    refuse_beside_journal, same_place)

        target = Path(path)
        running = getattr(self.engine_thread.engine, "output", None) if self.engine_thread is not None else None
        for own in (self.path, self.autosave_path, running):
            if own is not None and same_place(target, own):
                raise WorkbenchError(f"{target} is the open session's file; export to another name")
        from workbench.runner.autosave import refuse_autosave_folder

        refuse_autosave_folder(target, "export")
        refuse_beside_journal(target, "export", "opening that session recovers them first")
        check_folder(target, "export")
        if check_regular_or_absent(target, "export"):
            check_writable(target, "export to another name")  # even an earlier export: the person protected it
            if not (self._wrote(target) or unchanged_export(target)):
                keep_backup(target, "export")
        return target

    def _exported(self, target: Path, *said: str) -> None:
        """Say where an export went, with what else there is to say of it (``said``: a note, a
        warning), and note the file this window has just written (with its size and time, so a
        file put there since is not taken for it). A chart exported for a slide gave no sign that
        it was written. A session that a run of another program is still writing is exported as it
        was opened, which is said (as ``export`` says it): a recommendation from a half-finished
        run read as a final one."""
        from workbench.core.io.session_lock import locked_by_other

        if self.path is not None and not self.running and locked_by_other(self.path):
            said = (*said, "note: a run is still writing this session: the export is of the trials opened; "
                           "export again (after File > Open) once that run has ended")
        self.statusBar().showMessage("; ".join([f"exported {target}", *said]), 30000 if said else 8000)
        try:
            info = target.stat()
        except OSError:
            return
        self._exports_written[str(target.resolve())] = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)

    def _wrote(self, target: Path) -> bool:
        """Whether the file at ``target`` is one this window exported, unchanged since."""
        try:
            info = target.stat()
        except OSError:
            return False
        # the inode and change time too: a copy with the same size and modification time (cp -p) is another file
        return self._exports_written.get(str(target.resolve())) == (info.st_ino, info.st_size, info.st_mtime_ns,
                                                                    info.st_ctime_ns)

    #: export format by file suffix (File > Export best config)
    EXPORT_FORMATS = {**{suffix: fmt for fmt, suffix in EXPORT_SUFFIXES.items()}, ".cuh": "header", ".hpp": "header"}

    def export_best(self, path: str) -> None:
        """Export the recommended config under the constraints and weights in force now.

        The format follows the suffix (``.h``, ``.cuh`` or ``.hpp`` header, ``.cu`` rendered kernel, ``.json``, ``.py``
        CuPy script). Raises WorkbenchError when nothing is feasible (naming each constraint that
        excludes a trial) or the suffix is unknown; nothing is written then.
        """
        from workbench.core.io.export import export_sessions

        fmt = self.EXPORT_FORMATS.get(Path(path).suffix.lower())
        if fmt is None:
            raise WorkbenchError(f"{path}: export to .h (or .cuh, .hpp), .cu, .json or .py")
        if self.model.session is None:
            raise WorkbenchError("no session to export")
        target = self._export_target(path)
        session = self.model.session
        templates, folder = self._export_templates(session.kernel)
        # the file the session came from names it in the export's header, as on the command line
        sources = [str(self.path)] if self.path is not None and not self.model.dirty else None
        # a sweep: the recommendation at the size the window shows (the header says how many
        # trials of other sizes it leaves out, as the command line's --at does)
        plan = export_sessions([session], fmt, path, self.model.constraints, self.model.weights, sources=sources,
                               templates=templates, kernel_dirs=[folder] if folder is not None else (),
                               at=self.model.shown_problem(), check_output=lambda _checked: None)  # (checked above)
        # a rendered kernel not the one measured is said here, not only in the file
        self._exported(target, *([f"warning: {plan.template_changed}"] if plan.template_changed else []),
                       *(f"note: {note}" for note in plan.unfinished))

    def _export_templates(self, kernel: str) -> tuple[dict[str, Any] | None, Path | None]:
        """The templates an export may render: the shipped library plus, for a template made in the
        editor, its declarative spec from the folder the kernel list runs it from; and that folder,
        which a CuPy script searches when it runs (as the command line's ``--kernel-dir`` makes it).

        Only declarative specs are read from that folder (reading one runs no code), because the
        folder can come from a reopened session's settings; (None, None) leaves the lookup to the
        exporter.
        """
        from workbench.core.domain.templates import kernels_dir, load_templates

        template, folder = self._folder_template(kernel)
        if template is None:
            return None, None
        return {**load_templates(str(kernels_dir())), kernel: template}, folder

    def _folder_template(self, kernel: str) -> tuple[Any, Path | None]:
        """The declarative template ``kernel`` of the folder the kernel list runs it from, with that
        folder; (None, None) when it has none. Only declarative specs are read (reading one runs no
        code)."""
        from workbench.core.domain.kernel_spec import load_declarative
        from workbench.core.domain.templates import DECLARATIVE_SUFFIX, two_specs
        from workbench.core.errors import TemplateError

        folder = self.toolbar.kernel_folders.get(kernel)
        if folder is None or not Path(folder).is_dir():
            return None, None
        if (Path(folder) / f"{kernel}.py").is_file() and (Path(folder) / f"{kernel}{DECLARATIVE_SUFFIX}").is_file():
            # which of the two a session was measured with cannot be told: refused, as tune refuses it
            raise TemplateError(two_specs(Path(folder), kernel))
        for spec in sorted(Path(folder).glob("*" + DECLARATIVE_SUFFIX)):
            try:
                template = load_declarative(spec)
            except WorkbenchError:
                continue  # another template of the folder that does not load is not this one's business
            if template.name == kernel:
                return template, Path(folder)
        return None, None

    def _on_export_best(self) -> None:
        if self.model.session is None:
            self._nothing_yet("export")
            return
        filters = "C header (*.h *.cuh *.hpp);;CUDA source (*.cu);;JSON (*.json);;CuPy script (*.py)"
        suggested = str(Path(self._last_dir()) / f"{self.model.session.kernel}_tuned.h")
        path, _ = QFileDialog.getSaveFileName(self, "Export best config", suggested, filters)
        if path:
            self._remember_dir(path)
            self._guarded(lambda: self.export_best(path), "Cannot export")

    def export_chart(self, key: str, path: str) -> None:
        """Write one chart as PNG or SVG (by the file's suffix), with its title, legend and the
        SIMULATED / REPLAY label when the timings were not measured live."""
        from workbench.gui.chart_export import export_chart

        if self.model.session is None and key != "compare":  # an empty "no trials yet" chart was written
            raise WorkbenchError("nothing to export yet: run a kernel or open a session first")
        badge = self.timing_badge.text().strip()
        target = self._export_target(path)
        chart = self.compare if key == "compare" else self.charts[key]  # the Compare tab's curves: a chart too
        if key == "compare":  # overlaid sessions of other kinds are labelled as theirs
            badge = self.compare.export_label(badge)
        export_chart(chart, str(target), badge if badge.startswith(("SIMULATED", "REPLAY", "RECORDED")) else None)
        self._exported(target)

    def _on_export_chart(self, key: str, fmt: str) -> None:
        if self.model.session is None and key != "compare":  # (Compare's curves may be of added files alone)
            self._nothing_yet("export")
            return
        path, _ = QFileDialog.getSaveFileName(self, f"Export chart as {fmt.upper()}",
                                              str(Path(self._last_dir()) / f"{key}.{fmt}"), f"{fmt.upper()} (*.{fmt})")
        if path:
            self._remember_dir(path)
            self._guarded(lambda: self.export_chart(key, path), "Cannot export the chart")
