"""helpers/ is the map of the course: a stage (common, language, decoding, diffusion, quality, measure,
roofline, projection, speculative) imports only earlier stages, and presentation and tools (views,
widgets, exercises, solutions, bench, train, student_copy, hf_compare) may import any. The rule is
pyproject.toml's import-linter contract; here `lint-imports` keeps it, on the course and on a copy
with one upward import planted."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
STAGES = ["common", "language", "decoding", "diffusion", "quality", "measure", "roofline", "projection", "speculative"]


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": str(LINT_IMPORTS.parent)},
        capture_output=True,
        text=True,
    )


def test_ls_helpers_shows_the_stages_of_the_course():
    packages = {p.name for p in (ROOT / "helpers").iterdir() if (p / "__init__.py").is_file()}
    assert set(STAGES) <= packages
    flat = sorted(p.stem for p in (ROOT / "helpers").glob("*.py") if p.stem != "__init__")
    assert flat == ["hf_compare", "student_copy", "train"], f"modules outside a stage: {flat}"


def test_the_contract_lists_the_stages_in_the_course_s_order():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    layers = [layer.strip() for layer in contract["layers"]]
    assert layers[1:] == [f"helpers.{stage}" for stage in reversed(STAGES)], "the stages, the course's last on top"
    tools = {name.strip() for name in layers[0].split(":")}
    assert {
        p.stem if p.suffix else p.name
        for p in (ROOT / "helpers").iterdir()
        if p.name not in ("__init__.py", "__pycache__")
    } == {name.removeprefix("helpers.") for name in tools} | set(STAGES), (
        "every package and module of helpers/ in a layer"
    )


def test_every_stage_imports_only_earlier_stages():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout[-2000:]
    assert "1 kept, 0 broken" in result.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(ROOT / "helpers", tmp_path / "helpers", ignore=shutil.ignore_patterns("__pycache__"))
    validation = tmp_path / "helpers" / "common" / "validation.py"
    validation.write_text(
        validation.read_text() + "\nfrom helpers.speculative import rule  # planted: common -> speculative\n"
    )
    result = lint(tmp_path)
    assert result.returncode != 0 and "0 kept, 1 broken" in result.stdout
    assert "helpers.common.validation -> helpers.speculative.rule" in result.stdout
