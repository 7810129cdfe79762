"""A chart's header: its title and its own controls on one line, or on more when the chart is narrow.

The charts share a row of the window, and each chart's minimum width was its header's: a title
beside two axis choosers and their check boxes. In presentation mode's large fonts at 1440 px
those minimums took the row's width from the score chart beside them. This header keeps one line
while the whole title and the controls (squeezed to their narrowest if need be) fit side by side,
and otherwise moves groups of controls to lines of their own, so its minimum width is that of its
widest part, not of all of them together.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QSize
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QWidget

from workbench.gui.elided_label import ElidedLabel
from workbench.gui.text import plain_tip

#: the header's margins (left, top, right), px
LEFT, TOP, RIGHT = 6, 2, 6


class ChartHeader(QWidget):
    """A title and groups of controls (:meth:`add_group`). On one line the groups stand right of
    the title, right-aligned; when that does not fit, they flow onto the lines below it, a group
    that does not fit beside the previous one starting a new line."""

    def __init__(self, title: str, tip: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # the title gives up width before a control does: it ends in "…", whole in its tool tip
        self.title = ElidedLabel(title, minimum_chars=4, whole=True)
        self.title.setParent(self)
        self.title.setObjectName("chartTitle")
        self.title.setStyleSheet("QFrame#chartTitle { font-weight: bold; }")
        self.title.setToolTip(plain_tip("\n".join(part for part in (title, tip) if part)))
        self.groups: list[QWidget] = []
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)

    def add_group(self, *widgets: QWidget) -> QWidget:
        """Controls that stay together on one line (a label, its chooser and its check box). No
        space is put between them or between groups: as in the charts' rows before, a label
        brings its own (``"   y"``)."""
        group = QWidget(self)
        row = QHBoxLayout(group)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        for widget in widgets:
            row.addWidget(widget)
        self.groups.append(group)
        group.show()
        self.updateGeometry()
        return group

    # --- layout ----------------------------------------------------------------------------------
    def _line_height(self) -> int:
        return max([self.title.sizeHint().height()] + [group.sizeHint().height() for group in self.groups])

    def one_line(self, width: int | None = None) -> bool:
        """Whether title and controls are (or at ``width`` would be) on one line: the whole title
        and every group at its narrowest fit side by side."""
        room = (self.width() if width is None else width) - LEFT - RIGHT
        return self.title.sizeHint().width() + sum(group.minimumSizeHint().width() for group in self.groups) <= room

    def _flow(self, room: int) -> list[list[tuple[QWidget, int]]]:
        """Lines of (piece, width) when not on one line: each piece at its preferred width, or the
        line's width (at least its minimum) where it is wider than a line."""
        lines: list[list[tuple[QWidget, int]]] = [[]]
        used = 0
        for piece in [self.title, *self.groups]:
            width = max(min(piece.sizeHint().width(), room), piece.minimumSizeHint().width())
            if lines[-1] and used + width > room:
                lines.append([])
                used = 0
            lines[-1].append((piece, width))
            used += width
        return lines

    def sizeHint(self) -> QSize:  # Qt override
        width = self.title.sizeHint().width() + sum(group.sizeHint().width() for group in self.groups)
        return QSize(LEFT + width + RIGHT, TOP + self._line_height())

    def minimumSizeHint(self) -> QSize:  # Qt override
        widest = max(piece.minimumSizeHint().width() for piece in [self.title, *self.groups])
        return QSize(LEFT + widest + RIGHT, TOP + self._line_height())

    def hasHeightForWidth(self) -> bool:  # Qt override
        return True

    def heightForWidth(self, width: int) -> int:  # Qt override
        if self.one_line(width):
            return TOP + self._line_height()
        lines = self._flow(width - LEFT - RIGHT)
        return TOP + sum(max(piece.sizeHint().height() for piece, _ in line) for line in lines)

    def resizeEvent(self, event: Any) -> None:  # Qt override
        super().resizeEvent(event)
        self._place()

    def event(self, event: QEvent) -> bool:  # Qt override: a part's size hint changed (an entry, the font)
        if event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()
            self._place()
        return super().event(event)

    def _place(self) -> None:
        room = max(self.width() - LEFT - RIGHT, 0)
        if self.one_line():
            height = self._line_height()
            title = self.title.sizeHint()
            # the groups share the room beside the whole title, each between its narrowest and its preferred width
            wanted = [group.sizeHint().width() for group in self.groups]
            narrowest = [group.minimumSizeHint().width() for group in self.groups]
            spare = room - title.width() - sum(narrowest)
            slack = sum(w - n for w, n in zip(wanted, narrowest))
            widths = [n + ((w - n) * spare // slack if slack > spare else w - n) for w, n in zip(wanted, narrowest)]
            x = LEFT + room - sum(widths)
            self.title.setGeometry(LEFT, TOP + (height - title.height()) // 2, x - LEFT, title.height())
            for group, width in zip(self.groups, widths):
                hint = group.sizeHint().height()
                group.setGeometry(x, TOP + (height - hint) // 2, width, hint)
                x += width
            return
        y = TOP
        for line in self._flow(room):
            height = max(piece.sizeHint().height() for piece, _ in line)
            x = LEFT
            for piece, width in line:
                hint = piece.sizeHint().height()
                piece.setGeometry(x, y + (height - hint) // 2, width, hint)
                x += width
            y += height
