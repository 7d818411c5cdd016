"""The course is an editable install only (README, "Who it is for"): `pip install -r requirements.txt`
installs `helpers` editable, beside notebooks/ and data/. A wheel holds every sub-package, and
importing it away from the course fails at once with a message that names the README's command,
instead of failing later on a missing checkpoint. Built and installed into a fresh virtual
environment here, without the network (no dependencies are installed: the import fails first)."""

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import helpers

ROOT = Path(__file__).resolve().parents[1]
SUB_PACKAGES = sorted(p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "helpers").rglob("__init__.py"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # a clean copy: no build/ left from an earlier run
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "helpers", source / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
    )
    return next(out.glob("typewriter_and_editor-*.whl"))


def test_the_wheel_holds_every_sub_package(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert len(SUB_PACKAGES) >= 6
    missing = [package for package in SUB_PACKAGES if f"{package}/__init__.py" not in names]
    assert not missing, f"the wheel lacks {missing}"


def test_a_non_editable_install_fails_at_import_naming_the_readme_command(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    subprocess.run(  # pip installs the wheel into the fresh environment, offline, without dependencies
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", purelib, str(wheel)],
        check=True,
        capture_output=True,
    )
    result = subprocess.run([str(python), "-c", "import helpers"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode != 0
    assert "ImportError" in result.stderr and helpers.INSTALL in result.stderr, result.stderr[-500:]


def test_the_editable_install_imports_from_the_course():
    assert helpers.COURSE_ROOT == ROOT and (ROOT / "data" / "manifest.json").is_file()
