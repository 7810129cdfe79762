"""Kernel Tuning Workbench: auto-tune CUDA kernel templates, on a real GPU or a modelled one.

Layers (imports flow one way): ``gui -> runner -> search, backends -> core``.
Nothing outside ``workbench.gui`` imports Qt.
"""

__version__ = "0.1.0"
