"""The desktop workbench: PySide6 + pyqtgraph views over a session. The only package that imports Qt.

Entry point: :func:`workbench.gui.app.main`.
"""
