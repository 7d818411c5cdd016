"""The course without its solutions, for an instructor to hand out.

    python -m helpers.student_copy OUT

writes OUT/<name>.ipynb for every notebooks/0*.ipynb, without the cells tagged `solution` (the
folded reference of each stub exercise and the answers of the "Going deeper" exercises), with the
outputs of the code cells tagged `answer` cleared (those whose output answers a "Predict before
you run" question or an exercise) and the markdown cells tagged `answer` (the text that reads such
an output) folded, and OUT/README.md. Everything else stays as committed: the stubs,
their checks, the other outputs. The notebooks still import `helpers`, so the copy runs in the
course's virtual environment; their links such as ../helpers/decoding/ar.py resolve when OUT sits at the
course's root, next to notebooks/.

`leaks(notebooks)` lists what a copy still gives away: a line of a reference solution, an answer
cell with its output or its reading unfolded, a prediction whose cell is not tagged `answer`, a
pointer to folded solutions the copy lacks, and a giveaway named in GIVEAWAYS anywhere a learner
meets it while the exercise is open: every cell up to the next exercise or the end of the core
(below the check too: folding is not hiding), and the docstrings and strings (the checks' hints
among them) of every helpers module the notebook imports. A cell that explains an exercise's
answer is therefore tagged `solution`, as a folded <details> block, and leaves the copy.
tests/test_student_copy.py runs it on the copy, and plants one leak of each kind to see it found.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
from pathlib import Path

import nbformat
from nbconvert.preprocessors import TagRemovePreprocessor

NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
SOLUTION_TAG = "solution"
ANSWER_TAG = "answer"  # a cell that answers a prediction or an exercise: output cleared, or text folded, in the copy
FOLD = "<details><summary>The answer, {} ({}, then open this)</summary>\n\n{}\n\n</details>"
FIRST = {"code": "run the cell above first", "markdown": "try it first"}  # what comes before a reading
CARRY = "**Carry forward:**"  # a folded reading may end with the line the notebook carries forward
PREDICT = "**Predict before you run.**"
OPTIONAL = re.compile(r"^##\s+(\d+\.?\s*)?(going deeper|optional|appendix)", re.I)  # where a core ends
README = """\
# Typewriter and Editor: student copy

The course's notebooks without their solutions, made by `python -m helpers.student_copy`: the
folded solutions are gone, and the outputs that answer a "Predict before you run" question are
cleared (run the cell to see them), with the text that reads them folded just below. They import
the course's `helpers` package: open them from the course's virtual environment (`.venv`), and put
this folder at the course's root, next to `notebooks/`, so that links such as `../helpers/decoding/ar.py`
resolve.

The reference answers live in `helpers/solutions/` (one module per notebook; the notebooks use
them after each exercise, so that they run top to bottom with your stubs unfilled) and in the
full notebooks, in `notebooks/`. Try the exercises before you look.
"""
# Text that would give an exercise away if a learner saw it before attempting it: (notebook,
# exercise, pattern). A leak when found in any cell before the exercise's folded solution.
GIVEAWAYS = [
    (
        "01_chain_rule",
        "sentence_log2prob",
        r"next_token_probs\(\w+\[:\w+\]\)\[\w+\]|divide by math\.log\(2\)|math\.log2 of each factor",
    ),
    ("01_chain_rule", "sample_sentence", r"rng\.choice\(len\("),
    (
        "02_ar_decoder",
        "attend_with_cache",
        r"cache_[kv]\[:, :, [^\]]*\]\s*=(?!=)|arange\(start, start \+ T\)|1\s*/\s*sqrt\(hd\)",
    ),
    ("02_ar_decoder", "top_p_filter", r"cumsum\([^)]*\)\s*-|cumulative sum minus|masked_fill, not masked_fill_"),
    ("03_masked_diffusion", "tokens_per_step", r"divmod\(n(_tokens)?, steps\)|n(_tokens)? // steps"),
    (
        "03_masked_diffusion",
        "commit_most_confident",
        r"stable=True|argsort\([^)]*\)\.argsort\(|keeps? equal values in their|stable sort",
    ),
    (
        "04_roofline",
        "predicted_step_seconds",
        r"\(weights? \+ KV( bytes)?\) / bandwidth|\(weight_bytes \+ kv_bytes\)|total_bytes / \w+\.bandwidth",
    ),
    (
        "04_roofline",
        "crossover_width",
        r"peak (x|\*|×) bytes per weight|peak_flops \* bytes_per_weight|2 x the ridge"
        r"|W\* = 2 x |twice peak / bandwidth",
    ),
    ("05_gpus", "more exercises, 1", r"more passes than the effective ridge|slower than AR on every device whose"),
    ("05_gpus", "more exercises, 2", r"64 times the arithmetic|already uses the spare arithmetic"),
    ("06_speculative", "verify_draft", r"norm\(max\(0, p(\[i\])? - q(\[i\])?\)\)|\(p\[i\] - q\[i\]\)\.clamp"),
    ("06_speculative", "acceptance_rate", r"\\min\(p(\(x\))?, q(\(x\))?\)|np\.minimum\(p, q\)|1 - \\mathrm\{TV\}"),
    ("06_speculative", "more exercises, 2", r"where it loses"),  # the drafter of "Going deeper" exercise 2
]
NO_FOLDED = re.compile(r"solution folded below|folded solution", re.I)  # the copy has none to point to

__all__ = [
    "ANSWER_TAG",
    "GIVEAWAYS",
    "SOLUTION_TAG",
    "course_size",
    "leaks",
    "make_student_copy",
    "notebook_paths",
    "strip_solutions",
]


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
    """The notebook without its cells tagged `solution`; of the cells tagged `answer`, the code
    cells' outputs cleared and the markdown cells (the text that reads an answer's output) folded
    under a summary, so that a learner opens them after running; every other cell untouched."""
    remove = TagRemovePreprocessor(remove_cell_tags={SOLUTION_TAG})
    nb, _ = remove.preprocess(nb, {})
    for i, cell in enumerate(nb.cells):
        if ANSWER_TAG in cell.metadata.get("tags", []):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
            elif not cell.source.startswith("<details>"):
                what = (
                    "what follows from it, and the line to carry forward"
                    if CARRY in cell.source
                    else "and what follows from it"
                )
                above = nb.cells[i - 1].cell_type if i else "markdown"  # an exercise's statement has no cell to run
                cell.source = FOLD.format(what, FIRST[above], cell.source)
    return nb


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def _long_lines(text: str) -> set[str]:
    """Stripped lines longer than 20 characters: shorter ones (`return seq`) are everyday code."""
    return {line.strip() for line in text.splitlines() if len(line.strip()) > 20}


def _shown(cell) -> str:
    """What a learner sees of a cell: its source and the text of its outputs."""
    texts = [cell.source]
    for output in cell.get("outputs", []):
        texts += [str(output.get("text", "")), str(output.get("data", {}).get("text/plain", ""))]
    return "\n".join(texts)


def _solution_lines() -> set[str]:
    """Every long line of the reference solutions, but their signature and docstring, which the
    stubs show too, and imports."""
    import inspect

    from helpers import solutions

    lines = set()
    for _, function in inspect.getmembers(solutions, inspect.isfunction):
        source = inspect.getsource(function)
        body = source.split('"""', 2)[-1] if '"""' in source else source  # after the docstring
        lines |= {line for line in _long_lines(body) if not line.startswith(("from ", "import "))}
    return lines


def leaks(notebooks: dict[str, nbformat.NotebookNode]) -> list[str]:
    """What a student copy (name -> notebook, solutions already removed) still gives away."""
    found, solution_lines = [], _solution_lines()
    for name, nb in notebooks.items():
        stem = name.removesuffix(".ipynb")
        for i, cell in enumerate(nb.cells):
            shown = _shown(cell)
            for line in sorted(solution_lines & _long_lines(shown)):
                found.append(f"{stem} cell {i}: a line of a reference solution: {line!r}")
            if ANSWER_TAG in _tags(cell) and cell.get("outputs"):
                found.append(f"{stem} cell {i}: an answer cell still shows its output")
            if ANSWER_TAG in _tags(cell) and cell.cell_type == "markdown" and not cell.source.startswith("<details>"):
                found.append(f"{stem} cell {i}: an answer's reading is shown unfolded")
            if cell.cell_type == "markdown" and PREDICT in cell.source:
                answer = next((c for c in nb.cells[i + 1 :] if c.cell_type == "code"), None)
                if answer is None or ANSWER_TAG not in _tags(answer):
                    found.append(f"{stem} cell {i}: the cell after a prediction is not tagged {ANSWER_TAG!r}")
            if NO_FOLDED.search(cell.source):
                found.append(f"{stem} cell {i}: points to a folded solution the copy does not have")
        modules = _strings_met(nb)
        for notebook, exercise, pattern in GIVEAWAYS:
            if notebook != stem:
                continue
            for i, cell in enumerate(nb.cells[: _open_until(nb, exercise)]):
                if re.search(pattern, _shown(cell)):
                    found.append(f"{stem} cell {i}: gives {exercise} away while it is open ({pattern})")
            for module, text in modules:
                if re.search(pattern, text):
                    found.append(f"{stem}: gives {exercise} away in {module}'s strings: {text[:60]!r} ({pattern})")
    return found


def _is_stub(source: str) -> bool:
    return bool(re.search(r"^def \w+\(", source, re.M)) and "raise NotImplementedError" in source


def _open_until(nb, exercise: str) -> int:
    """The index of the first cell a learner meets only after the exercise is done: the next
    exercise's stub, or the first optional heading after it (a "more exercises, N" entry, which
    has no stub, stays open to the end)."""
    stub = next((i for i, c in enumerate(nb.cells) if f"def {exercise}(" in c.source), None)
    if stub is None:
        return len(nb.cells)
    for i in range(stub + 1, len(nb.cells)):
        source = nb.cells[i].source
        if nb.cells[i].cell_type == "code" and _is_stub(source):
            return i
        if nb.cells[i].cell_type == "markdown" and any(OPTIONAL.match(line) for line in source.splitlines()):
            return i
    return len(nb.cells)


def _modules_imported(nb) -> list[str]:
    """The helpers modules a notebook's code cells import, submodules named in `from ... import`
    included; helpers.solutions left out (its answers are the point)."""
    names = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        names |= set(re.findall(r"^\s*import (helpers[\w.]*)", cell.source, re.M))
        for package, imported in re.findall(
            r"^\s*from (helpers[\w.]*) import \(?([^)\n]*(?:\n[^)\n]*)*?)\)?$", cell.source, re.M
        ):
            names.add(package)
            for name in re.findall(r"(\w+)(?:\s+as\s+\w+)?", imported):
                if _is_module(f"{package}.{name}"):
                    names.add(f"{package}.{name}")
    return sorted(n for n in names if not n.startswith("helpers.solutions"))


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _strings_met(nb) -> list[tuple[str, str]]:
    """(module, text) for every string constant (docstrings, hints, messages) of the helpers
    modules a notebook imports, and of the modules their imported checks and views live in."""
    found = []
    for name in _modules_imported(nb):
        spec = importlib.util.find_spec(name)
        paths = [Path(spec.origin)]
        if spec.submodule_search_locations:  # a package: the modules its __init__ imports from
            init = paths[0].read_text()
            for sub in re.findall(rf"^from ({re.escape(name)}\.\w+) import", init, re.M):
                paths.append(Path(importlib.util.find_spec(sub).origin))
        for path in paths:
            tree = ast.parse(path.read_text())
            found += [
                (name, node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Constant) and isinstance(node.value, str)
            ]
    return found


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
