"""Which files the wheel holds (the project's metadata is in pyproject.toml).

The repository keeps the template library and the resources at its root (``kernels/``,
``resources/``), beside the ``workbench`` package, as the design card lays it out. A non-editable
install copies only packages into site-packages, so the wheel maps those two folders (and their
subfolders) into the package as data: ``kernels/`` becomes ``workbench/_data/kernels``,
``resources/gpus`` becomes ``workbench/_data/resources/gpus``. At run time
``workbench.core.domain.shipped.shipped_path`` finds them there, or at the root of a checkout. The
package list has to be computed (the ``workbench`` packages plus the mapped folders), which
pyproject.toml's static ``packages`` table cannot express; hence this file.
"""

from pathlib import Path

from setuptools import find_packages, setup

#: Repository folders shipped as data, and where they go inside the package.
SHIPPED = ("kernels", "resources")
DATA_PACKAGE = "workbench._data"
#: The files they ship besides Python template specs (which travel as modules of their package).
DATA_FILES = ["*.cu", "*.json", "*.json.gz", "*.md", "*.qss"]


def shipped_packages() -> dict[str, str]:
    """Package name -> repository folder, for every shipped folder and subfolder."""
    mapping = {}
    for top in SHIPPED:
        for folder in [Path(top), *sorted(p for p in Path(top).rglob("*") if p.is_dir())]:
            if "__pycache__" not in folder.parts:
                mapping[".".join((DATA_PACKAGE, *folder.parts))] = folder.as_posix()
    return mapping


MAPPED = shipped_packages()

setup(
    packages=find_packages(include=["workbench", "workbench.*"]) + list(MAPPED),
    package_dir=MAPPED,
    package_data={package: DATA_FILES for package in MAPPED},
)
