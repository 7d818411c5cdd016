"""The student copy (helpers.student_copy): every solution is a tagged cell, none survives the copy,
every exercise stub and its check do, and (marked `student`, a few minutes) every student notebook
runs top to bottom from a fresh kernel with each check reporting "not attempted yet".

The slow test runs with `.venv/bin/python -m pytest -m student --dist load tests/test_student_copy.py`
(.ci/run). Every copy is written under pytest's tmp_path, never into the repository, so nbval
never collects one.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import ipykernel.kernelspec
import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers import solutions
from helpers.student_copy import (
    ANSWER_TAG,
    GIVEAWAYS,
    SOLUTION_TAG,
    course_size,
    leaks,
    main,
    make_student_copy,
    notebook_paths,
)

FULL = {path.name: nbformat.read(path, as_version=4) for path in notebook_paths()}
NOT_ATTEMPTED = "not attempted yet"
CELL_SECONDS = 600


@pytest.fixture(scope="module")
def copy_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    make_student_copy(out)
    return out


@pytest.fixture(scope="module")
def student(copy_dir) -> dict[str, nbformat.NotebookNode]:
    return {name: nbformat.read(copy_dir / name, as_version=4) for name in FULL}


def is_solution(cell) -> bool:
    return SOLUTION_TAG in cell.metadata.get("tags", [])


def long_lines(text: str) -> set[str]:
    """Stripped lines longer than 20 characters: shorter ones (`return seq`) are everyday code."""
    return {line.strip() for line in text.splitlines() if len(line.strip()) > 20}


def lines_seen(nb) -> set[str]:
    """Every long line a learner sees: markdown, code and the text of the outputs."""
    seen = set()
    for cell in nb.cells:
        seen |= long_lines(cell.source)
        for output in cell.get("outputs", []):
            seen |= long_lines(output.get("text", "")) | long_lines(str(output.get("data", {}).get("text/plain", "")))
    return seen


def stubs(nb) -> list[int]:
    return [
        i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and "raise NotImplementedError" in cell.source
    ]


def solution_lines() -> set[str]:
    """The code of every solution: the references in helpers.solutions and the ```python blocks of
    the tagged cells. Lines the course's code cells share (a stub's signature, the naive loop that
    decode_cached extends, an import) are not solutions: the learner runs them anyway."""
    lines = set()
    for _, function in inspect.getmembers(solutions, inspect.isfunction):
        lines |= long_lines(inspect.getsource(function))
    for nb in FULL.values():
        for cell in filter(is_solution, nb.cells):
            for block in re.findall(r"```python\n(.*?)```", cell.source, re.S):
                lines |= long_lines(block)
    course_code = set()
    for nb in FULL.values():
        for cell in nb.cells:
            course_code |= long_lines(cell.source) if cell.cell_type == "code" else set()
    return lines - course_code


# ------------------------------------------------------------------ the full course, tagged
@pytest.mark.parametrize("name", FULL)
def test_every_details_block_is_a_cell_of_its_own_tagged_solution(name):
    for i, cell in enumerate(FULL[name].cells):
        if "<details>" in cell.source:
            assert cell.cell_type == "markdown" and is_solution(cell), f"{name} cell {i}: a <details> not tagged"
            alone = re.fullmatch(r"\s*<details>.*?</details>\s*", cell.source, re.S)
            assert alone and cell.source.count("<details>") == 1, f"{name} cell {i}: more than one <details> block"
        elif is_solution(cell):  # a tagged code cell would leave the student notebook broken
            pytest.fail(f"{name} cell {i} is tagged {SOLUTION_TAG} but is not a <details> block")


def test_the_course_has_its_solutions():
    tagged = sum(is_solution(cell) for nb in FULL.values() for cell in nb.cells)
    folded = sum("<summary>Solution: `" in cell.source for nb in FULL.values() for cell in nb.cells)
    assert folded == sum(len(stubs(nb)) for nb in FULL.values()) == 10  # one folded reference per stub
    assert tagged >= 25  # and the answers of the Going deeper exercises


# ------------------------------------------------------------------ the copy
def test_no_solution_survives(student):
    lines = solution_lines()
    assert lines <= set().union(*(lines_seen(nb) for nb in FULL.values()))  # the full course shows them all
    for name, nb in student.items():
        leaked = sorted(lines & lines_seen(nb))
        assert not leaked, f"{name} still shows solution lines: {leaked[:3]}"
        folded = [cell for cell in nb.cells if "<details>" in cell.source and not is_answer(cell)]
        assert not [cell for cell in nb.cells if is_solution(cell)] and not folded, name


def is_answer(cell) -> bool:
    return ANSWER_TAG in cell.metadata.get("tags", [])


def test_the_copy_is_the_course_less_its_solution_cells(copy_dir, student):
    assert sorted(p.name for p in copy_dir.iterdir()) == sorted([*FULL, "README.md"])
    for name, nb in student.items():
        kept = [cell for cell in FULL[name].cells if not is_solution(cell)]
        assert len(nb.cells) == len(kept), name
        for cell, full in zip(nb.cells, kept, strict=True):
            if is_answer(full) and full.cell_type == "code":  # the same cell, its output cleared
                assert cell.source == full.source and cell.outputs == [] and full.outputs, (name, cell.id)
            elif is_answer(full):  # the same text, folded under a summary
                assert cell.source.startswith("<details>") and full.source in cell.source, (name, cell.id)
                summary = cell.source.split("</summary>")[0]  # a folded carry-forward line is named, not lost
                assert ("carry forward" in summary) == ("**Carry forward:**" in full.source), (name, cell.id)
            else:
                assert cell == full, (name, cell.id)
        assert nb.metadata == FULL[name].metadata, name  # the saved widget state too


# ------------------------------------------------------------------ what the copy gives away
def test_the_copy_gives_nothing_away(student):
    assert leaks(student) == []
    answered = sum(is_answer(cell) for nb in FULL.values() for cell in nb.cells)
    predictions = sum("**Predict before you run.**" in cell.source for nb in FULL.values() for cell in nb.cells)
    assert answered >= predictions >= 6  # every prediction's cell, at least


HINT_MODULES = {  # notebook -> the module whose checks print its exercises' hints
    "01_chain_rule": "chain_rule",
    "02_ar_decoder": "ar_decoding",
    "03_masked_diffusion": "masked_diffusion",
    "04_roofline": "roofline",
    "06_speculative": "speculative",
}


def _strings(path: Path) -> list[str]:
    """Every str constant of a module, the literal parts of its f-strings among them."""
    tree = ast.parse(path.read_text())
    return [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def test_no_hint_gives_its_exercise_away():
    """A check's hint is shown to the learner before the answer: it may name what is wrong, never
    print the code or formula that GIVEAWAYS knows for the notebook's exercises."""
    exercises = Path(solutions.__file__).resolve().parent.parent / "exercises"
    found = []
    for notebook, exercise, pattern in GIVEAWAYS:
        if notebook in HINT_MODULES:
            module = exercises / f"{HINT_MODULES[notebook]}.py"
            found += [(exercise, text) for text in _strings(module) if re.search(pattern, text)]
    assert found == []


def _planted(student, name, index, change):
    copy = {n: nbformat.from_dict(json.loads(json.dumps(nb))) for n, nb in student.items()}
    change(copy[name].cells[index] if index is not None else copy[name])
    return [leak for leak in leaks(copy) if leak.startswith(name.removesuffix(".ipynb"))]


def _adding(text):
    """A change that appends a line of text to a cell."""
    return lambda cell: setattr(cell, "source", cell.source + "\n" + text)


def _first(nb, test) -> int:
    return next(i for i, cell in enumerate(nb.cells) if test(cell))


def test_a_planted_leak_of_each_kind_is_found(student):
    nb01, nb02, nb00 = student["01_chain_rule.ipynb"], student["02_ar_decoder.ipynb"], student["00_start_here.ipynb"]
    reference = inspect.getsource(solutions.attend_with_cache).splitlines()[-3]  # a line of a solution
    cases = {
        "a line of a reference solution": ("02_ar_decoder.ipynb", 0, lambda c: setattr(c, "source", reference)),
        "an answer cell still shows its output": (
            "01_chain_rule.ipynb",
            _first(nb01, is_answer),
            lambda c: c.outputs.append(nbformat.v4.new_output("stream", text="about 1 row in 77,650\n")),
        ),
        "an answer's reading is shown unfolded": (
            "01_chain_rule.ipynb",
            _first(nb01, lambda c: c.cell_type == "markdown" and is_answer(c)),
            lambda c: setattr(c, "source", "One valid row in 77,650."),
        ),
        "not tagged 'answer'": (
            "02_ar_decoder.ipynb",
            _first(nb02, is_answer),
            lambda c: c.metadata.update(tags=[]),
        ),
        "points to a folded solution": ("00_start_here.ipynb", len(nb00.cells) - 1,
                                        lambda c: setattr(c, "source", c.source + " The solution folded below.")),
        "gives sentence_log2prob away": (
            "01_chain_rule.ipynb", 0, _adding("log_p += math.log(LANG.next_token_probs(x[:k])[token])")
        ),
        "gives verify_draft away": ("06_speculative.ipynb", 0, _adding("A rejection draws from norm(max(0, p - q)).")),
        "gives more exercises, 1 away": (
            "05_gpus.ipynb", 0, _adding("A dLLM with more passes than the effective ridge loses.")
        ),
        "gives attend_with_cache away": (
            "02_ar_decoder.ipynb", 0, _adding("Write them in place: cache_k[:, :, start:start + T] = k")
        ),
        "gives top_p_filter away": (
            "02_ar_decoder.ipynb", 0, _adding("Keep it while the cumulative sum minus its own is below p.")
        ),
        "gives sample_sentence away": ("01_chain_rule.ipynb", 0, _adding("Use rng.choice(len(p), p=p).")),
        "gives tokens_per_step away": (
            "03_masked_diffusion.ipynb",
            1,
            lambda c: setattr(c, "source", "base, extra = divmod(n_tokens, steps)\n" + c.source),
        ),
        "gives predicted_step_seconds away": (
            "04_roofline.ipynb", 0, _adding("✓ agrees with (weights + KV bytes) / bandwidth")
        ),
        "gives crossover_width away": (
            "04_roofline.ipynb", 0, _adding("W* = peak x bytes per weight / (2 x bandwidth)")
        ),
        "gives acceptance_rate away": ("06_speculative.ipynb", 0, _adding("$\\alpha = \\sum_x \\min(p(x), q(x))$")),
        "gives more exercises, 2 away": (
            "06_speculative.ipynb", 0, _adding("Exercise 2 tries the same fix here, where it loses.")
        ),
    }  # fmt: skip
    for kind, (name, index, change) in cases.items():
        found = _planted(student, name, index, change)
        assert any(kind in leak for leak in found), (kind, found)
    planted = {kind.removeprefix("gives ").removesuffix(" away") for kind in cases if kind.startswith("gives ")}
    assert planted == {exercise for _, exercise, _ in GIVEAWAYS} - {"commit_most_confident"}


def _after_check(nb, exercise) -> int:
    """The index of the cell just below an exercise's check."""
    return _first(nb, lambda c: f"def {exercise}(" in c.source) + 2


@pytest.mark.parametrize(
    ("name", "exercise", "text"),
    [
        ("06_speculative.ipynb", "acceptance_rate", "So $\\alpha = \\sum_x \\min(p(x), q(x))$."),
        ("04_roofline.ipynb", "crossover_width", "In float32, W* = 2 x the ridge point."),
    ],
)
def test_a_leak_below_a_check_or_in_a_folded_answer_is_found(student, name, exercise, text):
    """Folding is not hiding: an answer's explanation just below the check, or in a folded answer
    reading, is a leak while the exercise is open; after the next exercise (or the core) it is not."""
    nb = student[name]
    below = _planted(student, name, _after_check(nb, exercise), _adding(text))
    assert any(f"gives {exercise} away while it is open" in leak for leak in below), below
    folded = next(i for i in range(_after_check(nb, exercise), len(nb.cells)) if is_answer(nb.cells[i]))
    assert any(f"gives {exercise} away" in leak for leak in _planted(student, name, folded, _adding(text)))
    deeper = _first(nb, lambda c: c.cell_type == "markdown" and c.source.startswith("## Going deeper"))
    assert _planted(student, name, deeper, _adding(text)) == []


def test_a_leak_in_the_strings_of_an_imported_module_is_found(student, tmp_path, monkeypatch):
    """A docstring or a check's hint is met by the learner too: a giveaway in a module the notebook
    imports is found; the same module not imported is not scanned."""
    module = tmp_path / "helpers_planted.py"
    module.write_text('"""A rejection draws from norm(max(0, p - q))."""\n\nHINT = "compute (p[i] - q[i]).clamp"\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    name = "06_speculative.ipynb"
    code = _first(student[name], lambda c: c.cell_type == "code")
    found = _planted(student, name, code, _adding("import helpers_planted"))
    assert sum("gives verify_draft away in helpers_planted's strings" in leak for leak in found) == 2, found
    assert not _planted(student, name, code, _adding("x = 1"))


def test_every_stub_and_its_check_survive(student):
    for name, full in FULL.items():
        for i in stubs(full):
            stub, check = full.cells[i], full.cells[i + 1]
            j = student[name].cells.index(stub)
            assert student[name].cells[j + 1] == check, f"{name}: the check after the stub {stub.id} is gone"
            assert NOT_ATTEMPTED in "".join(o.get("text", "") for o in check.outputs)


def test_the_copy_is_smaller_by_the_solutions(copy_dir):
    full_cells, full_words = course_size(notebook_paths())
    cells, words = course_size(sorted(copy_dir.glob("0*.ipynb")))
    tagged = sum(is_solution(cell) for nb in FULL.values() for cell in nb.cells)
    assert cells == full_cells - tagged
    assert 0.8 * full_words < words < full_words  # the solutions are a tenth or so of the prose


def test_the_command_line_reports_both_sizes(tmp_path, capsys):
    main([str(tmp_path / "new" / "student")])  # missing folders are created
    cells, words = course_size(sorted((tmp_path / "new" / "student").glob("0*.ipynb")))
    full_cells, full_words = course_size(notebook_paths())
    out = capsys.readouterr().out
    assert f"{cells} cells, {words:,} words" in out and f"the full course: {full_cells} cells, {full_words:,}" in out


def test_the_readme_says_what_the_copy_needs(copy_dir):
    readme = (copy_dir / "README.md").read_text()
    assert "without their solutions" in readme and "helpers" in readme and "`notebooks/`" in readme
    assert "reference answers live in `helpers/solutions/`" in readme and "full notebooks" in readme


@pytest.mark.parametrize(
    "out_dir, notebooks_dir, message",
    [
        (None, None, "out_dir must be a folder"),
        ("", None, "out_dir must be a folder"),
        (notebook_paths()[0].parent, None, "must be outside"),
        (notebook_paths()[0].parent / "student", None, "must be outside"),
        (notebook_paths()[0], None, "is a file"),
        ("unused", 3, "notebooks_dir must be None, a str or a pathlib.Path"),
        ("unused", Path(__file__).parent, "holding the course's 0*.ipynb"),
    ],
)
def test_bad_arguments_are_refused(out_dir, notebooks_dir, message, tmp_path):
    out_dir = tmp_path / out_dir if out_dir == "unused" else out_dir
    with pytest.raises(ValueError, match=re.escape(message)):
        make_student_copy(out_dir, notebooks_dir)
    assert not (tmp_path / "unused").exists()


# ------------------------------------------------------------------ the copy, run (slow)
class CurrentEnvironment(KernelSpecManager):
    """The kernel of the interpreter running the tests, whatever kernels are installed (as nbval's
    --nbval-current-env): the student copy must run in the course's own environment."""

    def get_kernel_spec(self, kernel_name):
        return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES, **ipykernel.kernelspec.get_kernel_dict())


@pytest.mark.student
@pytest.mark.parametrize("name", FULL)
def test_the_student_notebook_runs_top_to_bottom(name, copy_dir):
    nb = nbformat.read(copy_dir / name, as_version=4)  # its own: executing fills in the outputs
    kernel = KernelManager(kernel_spec_manager=CurrentEnvironment())
    client = NotebookClient(nb, km=kernel, timeout=CELL_SECONDS, resources={"metadata": {"path": str(copy_dir)}})
    try:
        client.execute()  # a fresh kernel, started in the copy's folder
    except CellExecutionError as error:
        pytest.fail(f"{name}: a cell raised\n{error}")
    finally:
        kernel.shutdown_kernel(now=True)  # the client leaves a kernel it did not start running
    for i in stubs(nb):
        printed = "".join(output.get("text", "") for output in nb.cells[i + 1].outputs)
        assert NOT_ATTEMPTED in printed, f"{name}: the check after the stub {nb.cells[i].id} printed {printed!r}"
