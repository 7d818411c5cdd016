"""The course without its solutions, for an instructor to hand out.

    python -m helpers.student_copy OUT

writes OUT/<name>.ipynb for every notebooks/0*.ipynb, without the cells tagged `solution` (the
folded reference of each stub exercise and the answers of the "Going deeper" exercises), and
OUT/README.md. Everything else stays as committed: the stubs, their checks, the outputs. The
notebooks still import `helpers`, so the copy runs in the course's virtual environment; their
links such as ../helpers/ar.py resolve when OUT sits at the course's root, next to notebooks/.
tests/test_student_copy.py checks that every solution is tagged and that none survives.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import nbformat
from nbconvert.preprocessors import TagRemovePreprocessor

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
SOLUTION_TAG = "solution"
README = """\
# Typewriter and Editor: student copy

The course's notebooks without their solutions, made by `python -m helpers.student_copy`.
They import the course's `helpers` package: open them from the course's virtual environment
(`.venv`), and put this folder at the course's root, next to `notebooks/`, so that links such as
`../helpers/ar.py` resolve. The solutions are in the full course, in `notebooks/`.
"""

__all__ = ["SOLUTION_TAG", "course_size", "make_student_copy", "notebook_paths", "strip_solutions"]


def notebook_paths(notebooks_dir=None) -> list[Path]:
    """The course's notebooks, in order: 0*.ipynb in notebooks_dir (default: the course's own)."""
    if notebooks_dir is None:
        notebooks_dir = NOTEBOOKS_DIR
    elif not isinstance(notebooks_dir, str | os.PathLike):
        raise ValueError(f"notebooks_dir must be None, a str or a pathlib.Path, got {notebooks_dir!r}")
    paths = sorted(Path(notebooks_dir).glob("0*.ipynb"))
    if not paths:
        raise ValueError(f"notebooks_dir must be a folder holding the course's 0*.ipynb, got {notebooks_dir!r}")
    return paths


def strip_solutions(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its cells tagged `solution`, every other cell untouched."""
    remove = TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG})
    nb, _ = remove.preprocess(nb, {})
    return nb


def course_size(paths) -> tuple[int, int]:
    """(cells, words) of these notebooks; words are the markdown's, split on whitespace: what a
    learner reads, solutions' code blocks included."""
    cells = words = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        cells += len(nb.cells)
        words += sum(len(cell.source.split()) for cell in nb.cells if cell.cell_type == "markdown")
    return cells, words


def _out_dir(out_dir, notebooks: list[Path]) -> Path:
    if not isinstance(out_dir, str | os.PathLike) or not str(out_dir):
        raise ValueError(f"out_dir must be a folder, as a non-empty str or a pathlib.Path, got {out_dir!r}")
    out, source = Path(out_dir).resolve(), notebooks[0].parent.resolve()
    if out.exists() and not out.is_dir():
        raise ValueError(f"out_dir must be a folder, but {out_dir!r} is a file")
    # the copy must not overwrite the full course, nor sit where nbval collects notebooks
    if out == source or source in out.parents:
        raise ValueError(f"out_dir must be outside {source}: the full course lives there, got {out_dir!r}")
    return out


def make_student_copy(out_dir, notebooks_dir=None) -> list[Path]:
    """Write the notebooks of notebooks_dir (default: the course's) without their solutions to
    out_dir (created if missing), and out_dir/README.md. Returns the notebooks written."""
    notebooks = notebook_paths(notebooks_dir)
    out = _out_dir(out_dir, notebooks)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in notebooks:
        nb = strip_solutions(nbformat.read(path, as_version=4))
        nbformat.write(nb, out / path.name)  # nbformat keeps the cell ids and the committed outputs
        written.append(out / path.name)
    (out / "README.md").write_text(README)
    return written


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.student_copy", description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the folder to write the student copy to (created if missing)")
    args = parser.parse_args(argv)
    try:
        written = make_student_copy(args.out)
    except ValueError as error:
        parser.error(str(error))
    cells, words = course_size(written)
    full_cells, full_words = course_size(notebook_paths())
    print(f"wrote {len(written)} notebooks and README.md to {args.out}: {cells} cells, {words:,} words")
    print(f"the full course: {full_cells} cells, {full_words:,} words")


if __name__ == "__main__":
    main()
