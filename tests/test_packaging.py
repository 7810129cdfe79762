"""The wheel a release builds carries the template library and the resources, and an installed
workbench finds them from any folder (not through a checkout)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.core.model import gpus, resource_table
from workbench.core.domain import templates
from workbench.core.domain.shipped import shipped_path, source_root

ROOT = Path(__file__).resolve().parent.parent
#: What ``python -m build`` needs from the checkout (copied, so the build writes nothing into it).
BUILD_INPUTS = ("workbench", "kernels", "resources", "setup.py", "pyproject.toml", "README.md")

pytestmark = pytest.mark.timeout(300)


def test_a_checkout_uses_its_own_folders() -> None:
    assert source_root() == ROOT
    assert shipped_path("kernels") == ROOT / "kernels" and shipped_path("resources") == ROOT / "resources"
    assert templates.kernels_dir() == ROOT / "kernels"
    assert Path(gpus.GPU_DIR) == ROOT / "resources" / "gpus"
    assert resource_table.TABLE_DIR == ROOT / "resources" / "compiled"


def _installed(tmp_path: Path) -> Path:
    """Build the wheel from a copy of the checkout and install it, without dependencies, into a folder."""
    source = tmp_path / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)],
                           capture_output=True, text=True, timeout=240)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    target = tmp_path / "installed"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                              "--target", str(target), str(wheel)], capture_output=True, text=True, timeout=120)
    assert install.returncode == 0, install.stderr[-3000:]
    shutil.rmtree(source)  # nothing may come from the copy the wheel was built from
    # Folders another distribution could leave at the top of site-packages are not ours.
    (target / "kernels").mkdir()
    (target / "resources").mkdir()
    return target


def test_the_installed_wheel_finds_its_kernels_and_resources_from_any_folder(tmp_path: Path) -> None:
    target = _installed(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(target), KERNEL_WORKBENCH_FORCE_NO_GPU="1")
    env.pop("KERNEL_WORKBENCH_KERNELS_DIR", None)
    cli = [str(target / "bin" / "kernel-workbench")]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, capture_output=True, text=True, timeout=180, cwd=elsewhere, env=env)

    where = run(sys.executable, "-c", "import json, workbench; from workbench.core.model import gpus, resource_table; from workbench.core.domain import templates; from workbench.gui import app; print(json.dumps([workbench.__file__, "
                "str(templates.kernels_dir()), gpus.GPU_DIR, str(resource_table.TABLE_DIR), str(app.STYLE_SHEET)]))")
    assert where.returncode == 0, where.stderr
    package, kernels, gpu_dir, table_dir, style = json.loads(where.stdout)
    data = target / "workbench" / "_data"
    assert Path(package) == target / "workbench" / "__init__.py"
    assert Path(kernels) == data / "kernels" and Path(gpu_dir) == data / "resources" / "gpus"
    assert Path(table_dir) == data / "resources" / "compiled" and Path(style).is_file()

    def files(root: Path) -> set[str]:
        return {p.relative_to(root).as_posix() for p in root.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}

    for folder in ("kernels", "resources"):  # every shipped file, not only those the commands below read
        assert files(data / folder) == files(ROOT / folder), folder

    listing = run(*cli, "kernels", "--json")
    assert listing.returncode == 0, listing.stderr
    names = {entry["name"] for entry in json.loads(listing.stdout)}
    assert names == {p.stem for p in (ROOT / "kernels").glob("*.cu")}

    out = elsewhere / "va.json"
    tuned = run(*cli, "tune", "vector_add", "--backend", "sim", "--budget", "3", "--out", str(out))
    assert tuned.returncode == 0, tuned.stderr
    shown = run(*cli, "show", str(out), "--json")
    assert shown.returncode == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert summary["trials"] == 3 and summary["simulated"] is True and summary["best"] is not None


def test_an_installed_command_names_itself_in_its_messages(cli, monkeypatch, tmp_path) -> None:
    """A pip user was told to run `python main.py kernels`, a file they do not have."""
    import sys

    monkeypatch.setattr(sys, "argv", ["/venv/bin/kernel-workbench", *sys.argv[1:]])
    result = cli("tune", "--budget", "3", "--out", tmp_path / "s.json")
    assert result.returncode == 2 and "`kernel-workbench kernels`" in result.stderr, result.stderr
    monkeypatch.setattr(sys, "argv", ["main.py", *sys.argv[1:]])
    assert "`python main.py kernels`" in cli("tune", "--budget", "3", "--out", tmp_path / "s.json").stderr


def test_an_installed_package_says_how_pip_gets_cupy_and_keeps_its_tables(cli, monkeypatch) -> None:
    """The CuPy hint named a checkout's `pip install -e '.[cuda12]'`; --write-table wrote into
    site-packages, a file pip uninstall then left behind."""
    from workbench.backends import cuda_env
    from workbench.core.domain import shipped
    from workbench.core.model import resource_table

    monkeypatch.setattr(shipped, "source_root", lambda: None)
    assert cuda_env.install_hint() == "pip install 'kernel-workbench[cuda12]'"
    monkeypatch.delenv(resource_table.TABLE_DIR_ENV, raising=False)
    result = cli("check-kernels", "--write-table", "--kernel", "vector_add", "--quiet")
    assert result.returncode == 2 and f"set {resource_table.TABLE_DIR_ENV}=FOLDER" in result.stderr, result.stderr


def test_the_compiler_wheels_are_left_out_where_they_have_no_build() -> None:
    """cuda-bindings and the nvidia-cuda wheels have no macOS build: as plain dependencies they made
    pip refuse the whole package on a Mac, where the simulator and replays need none of them."""
    import tomllib

    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    cuda = [d for d in dependencies if d.startswith(("cuda-bindings", "nvidia-cuda"))]
    assert len(cuda) == 3 and all("sys_platform != 'darwin'" in d for d in cuda), cuda
