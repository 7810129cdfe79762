"""Where the data shipped with the workbench lives: the template library and the resources.

The repository keeps them at its root (``kernels/``, ``resources/``) beside the ``workbench``
package. A wheel carries the same folders as package data under ``workbench/_data/`` (the mapping
is in ``setup.py``), because a non-editable install copies only packages into site-packages.
:func:`shipped_path` is the one place that knows both: code asks it, never ``__file__``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import workbench

#: The folders shipped with the workbench.
ShippedFolder = Literal["kernels", "resources"]
#: Where a wheel puts them, inside the ``workbench`` package.
DATA_SUBDIR = "_data"


def source_root() -> Path | None:
    """The checkout the running ``workbench`` package belongs to, or None for an installed one.

    A checkout (or an editable install, which runs the checkout's code) has ``pyproject.toml``
    beside the package; site-packages never does, so a stray top-level ``kernels`` folder put there
    by another distribution is not mistaken for ours.
    """
    root = Path(workbench.__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def shipped_path(name: ShippedFolder) -> Path:
    """The folder ``name`` of the running workbench: the checkout's own when running from one,
    else the wheel's copy found through :mod:`importlib.resources`.

    The path is returned even when it does not exist (a broken install); callers report a
    missing folder in their own words.
    """
    root = source_root()
    if root is not None and (root / name).is_dir():
        return root / name
    installed = resources.files(workbench).joinpath(DATA_SUBDIR, name)
    return Path(str(installed))
