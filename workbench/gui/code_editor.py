"""A plain-text code editor for CUDA C: line numbers, syntax colours, and marked problem lines.

Built on QPlainTextEdit (the Qt code-editor example's line-number gutter) so it stays light; the
highlighter colours keywords, types, preprocessor lines, numbers, strings and comments, and slot
macros in their own colour so a reader sees where the tuned decisions act.
"""

from __future__ import annotations

import re
from typing import Iterable

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import (
    QColor, QFont, QKeyEvent, QPainter, QPaintEvent, QResizeEvent, QSyntaxHighlighter, QTextCharFormat, QTextCursor,
    QTextDocument, QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

KEYWORDS = ("if else for while do return break continue switch case default struct typedef const static inline "
            "extern template typename unsigned signed sizeof namespace using auto volatile constexpr __global__ "
            "__device__ __host__ __shared__ __constant__ __restrict__ __forceinline__ __launch_bounds__ "
            "__syncthreads __syncwarp").split()
TYPES = "void bool char short int long float double size_t float2 float4 int2 int4 uint32_t int64_t half".split()
CUDA_VARS = "threadIdx blockIdx blockDim gridDim warpSize".split()


def _format(colour: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(colour))
    if bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    fmt.setFontItalic(italic)
    return fmt


class CudaHighlighter(QSyntaxHighlighter):
    """Colours CUDA C; ``set_slots`` adds the slot macros (and PROBLEM_*) as a highlighted class."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.rules: list[tuple[re.Pattern[str], QTextCharFormat]] = [
            (re.compile(r"\b(" + "|".join(map(re.escape, KEYWORDS)) + r")\b"), _format("#0033b3", bold=True)),
            (re.compile(r"\b(" + "|".join(TYPES) + r")\b"), _format("#1750eb")),
            (re.compile(r"\b(" + "|".join(CUDA_VARS) + r")\b"), _format("#871094")),
            (re.compile(r"\b\d+(\.\d*)?([eE][-+]?\d+)?[fFuUlL]*\b"), _format("#1a7f37")),
            (re.compile(r"\bPROBLEM_[A-Z0-9_]+\b"), _format("#b35900", bold=True)),
        ]
        self.slot_rule: tuple[re.Pattern[str], QTextCharFormat] | None = None
        self.preprocessor = _format("#7a3e9d")
        self.string = _format("#067d17")
        self.comment = _format("#8c8c8c", italic=True)

    def set_slots(self, macros: Iterable[str]) -> None:
        names = sorted(set(macros), key=len, reverse=True)
        if names == getattr(self, "_slot_names", None):
            return
        self._slot_names = names
        self.slot_rule = (re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b"), _format("#c7254e", bold=True)) if names else None
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # Qt override
        if text.lstrip().startswith("#"):
            self.setFormat(0, len(text), self.preprocessor)
        for pattern, fmt in self.rules + ([self.slot_rule] if self.slot_rule else []):
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), fmt)
        for match in re.finditer(r'"(\\.|[^"\\])*"', text):
            self.setFormat(match.start(), match.end() - match.start(), self.string)
        # block comments span lines: state 1 = inside /* */
        start = 0 if self.previousBlockState() == 1 else -1
        self.setCurrentBlockState(0)
        pos = 0
        while True:
            if start < 0:
                line = text.find("//", pos)
                block = text.find("/*", pos)
                if line >= 0 and (block < 0 or line < block):
                    self.setFormat(line, len(text) - line, self.comment)
                    return
                if block < 0:
                    return
                start = block
            end = text.find("*/", start + (0 if start == 0 and self.previousBlockState() == 1 else 2))
            if end < 0:
                self.setFormat(start, len(text) - start, self.comment)
                self.setCurrentBlockState(1)
                return
            self.setFormat(start, end + 2 - start, self.comment)
            pos, start = end + 2, -1


class _Gutter(QWidget):
    def __init__(self, editor: "CodeEditor") -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:  # Qt override
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self.editor.paint_gutter(event)


class CodeEditor(QPlainTextEdit):
    """QPlainTextEdit with a line-number gutter and :meth:`mark_lines` for errors and warnings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        font = QFont("Monospace")
        font.setStyleHint(QFont.StyleHint.TypeWriter)
        font.setPointSize(10)
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(4 * self.fontMetrics().horizontalAdvance(" "))
        self.highlighter = CudaHighlighter(self.document())
        self.gutter = _Gutter(self)
        self.marks: dict[int, str] = {}  # line (1-based) -> "error" / "warning"
        self.blockCountChanged.connect(lambda _n: self.setViewportMargins(self.gutter_width(), 0, 0, 0))
        self.updateRequest.connect(self._scroll_gutter)
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        """Tab indents, as in any code editor; Ctrl+Tab and Ctrl+Shift+Tab move the focus on and
        back, so the rest of the window stays reachable from the keyboard (a source editor that
        takes every Tab is otherwise a trap)."""
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier and event.key() in (Qt.Key.Key_Tab,
                                                                                       Qt.Key.Key_Backtab):
            backwards = event.key() == Qt.Key.Key_Backtab or bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            # (QWidget's: QPlainTextEdit's own refuses to move the focus out of an editable text)
            QWidget.focusNextPrevChild(self, not backwards)
            return
        super().keyPressEvent(event)

    def gutter_width(self) -> int:
        digits = max(3, len(str(self.blockCount())))
        return 10 + self.fontMetrics().horizontalAdvance("9") * digits

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        rect = self.contentsRect()
        self.gutter.setGeometry(QRect(rect.left(), rect.top(), self.gutter_width(), rect.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self.gutter)
        painter.fillRect(event.rect(), QColor("#f0f0f0"))
        block = self.firstVisibleBlock()
        number = block.blockNumber() + 1
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = round(self.blockBoundingRect(block).height())
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible():
                mark = self.marks.get(number)
                if mark:
                    painter.fillRect(0, top, self.gutter.width(), height, QColor("#ffb3b3" if mark == "error" else "#ffe39a"))
                painter.setPen(QColor("#888888"))
                painter.drawText(0, top, self.gutter.width() - 4, height, Qt.AlignmentFlag.AlignRight, str(number))
            block = block.next()
            top += height
            number += 1

    def mark_lines(self, marks: dict[int, str]) -> None:
        """Tint these lines (1-based) as ``error`` or ``warning``; an empty dict clears the marks."""
        self.marks = dict(marks)
        selections = []
        for line, kind in sorted(self.marks.items()):
            block = self.document().findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(QColor("#ffe0e0" if kind == "error" else "#fff4cc"))
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = QTextCursor(block)
            selections.append(selection)
        self.setExtraSelections(selections)
        self.gutter.update()

    def go_to_line(self, line: int) -> None:
        block = self.document().findBlockByNumber(max(0, line - 1))
        if block.isValid():
            self.setTextCursor(QTextCursor(block))
            self.centerCursor()
            self.setFocus()
