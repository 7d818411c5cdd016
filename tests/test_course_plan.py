"""Notebook 00's map and workshop plans can never drift from the notebooks or the instructor's guide:
every notebook is in the map and the full day, both plans add up to their day with a set-up slot,
breaks and a buffer, each notebook's block is its core time split into teaching and exercise minutes,
the exercise minutes are the ones the notebooks state, the guide repeats both plans row for row, and
(where the course's reading-load tool is at hand) no notebook takes longer than it says."""

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
GUIDE = ROOT / "INSTRUCTOR_GUIDE.md"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("0*.ipynb"))
MINUTES = re.compile(r"(\d+) min")
OPTIONAL = re.compile(r"^##\s+(\d+\.?\s*)?(going deeper|optional|appendix)", re.I)  # as the reading-load tool

HALF_DAY, FULL_DAY = "**Half day (4 h).**", "**Full day (8 h).**"
DAY_LENGTH = {HALF_DAY: 240, FULL_DAY: 480}
OTHER_ROWS = {"set-up", "break", "lunch", "buffer and wrap-up"}  # a plan's rows that are not a notebook


def cells_of(name: str) -> list[dict]:
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]


def markdown_of(name: str) -> str:
    return "\n".join("".join(c["source"]) for c in cells_of(name) if c["cell_type"] == "markdown")


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first markdown table after `heading`, header and rule dropped."""
    rest = text[text.index(heading) :]
    block = []
    for line in rest.splitlines()[1:]:
        if line.startswith("|"):
            block.append([cell.strip() for cell in line.strip("|").split("|")])
        elif block:
            break
    assert block, f"no table after {heading!r}"
    return block[2:]


def course_map() -> dict[str, tuple[int, int]]:
    """notebook -> (core minutes, full minutes), from the map's table."""
    rows = table_after(markdown_of("00_start_here"), "## The map")
    return {
        row[0].strip("`"): (int(MINUTES.search(row[1]).group(1)), int(MINUTES.search(row[2]).group(1))) for row in rows
    }


def plan(heading: str, text: str | None = None) -> list[dict]:
    """Every row of a plan's table: its start minute, what, teaching and exercise minutes, prompts."""
    rows = table_after(markdown_of("00_start_here") if text is None else text, heading)
    out = []
    for time, what, teaching, exercises, prompts in rows:
        hours, minutes = time.split(":")
        minutes_in = [int(MINUTES.search(c).group(1)) if c else None for c in (teaching, exercises)]
        out.append(
            {"start": 60 * int(hours) + int(minutes), "what": what, "teaching": minutes_in[0],
             "exercises": minutes_in[1], "prompts": prompts}
        )  # fmt: skip
    return out


def core_exercises(name: str) -> dict[str, int]:
    """function -> minutes, for every '### Exercise ... (N min)' of a notebook's core path."""
    cells, stated, optional = cells_of(name), {}, False
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] != "markdown":
            continue
        for line in source.splitlines():
            if line.startswith("## "):
                optional = bool(OPTIONAL.match(line))
        heading = re.search(r"^### Exercise.*\((\d+) min\)", source, re.M)
        if heading and not optional:
            stub = next("".join(c["source"]) for c in cells[i + 1 :] if c["cell_type"] == "code")
            stated[re.search(r"def (\w+)\(", stub).group(1)] = int(heading.group(1))
    return stated


def notebook_rows(heading: str, text: str | None = None) -> list[dict]:
    return [row for row in plan(heading, text) if row["what"][:2].isdigit()]


def test_every_notebook_is_in_the_map_and_the_full_day_and_the_half_day_starts_at_00():
    assert set(course_map()) == set(NAMES)
    full = [row["what"][:2] for row in notebook_rows(FULL_DAY)]
    assert full == [name[:2] for name in NAMES], "the full day covers each notebook once, in order"
    half = [row["what"][:2] for row in notebook_rows(HALF_DAY)]
    assert half == full[: len(half)] and len(half) >= 3, "the half day covers the first notebooks, in order"


@pytest.mark.parametrize("heading", [HALF_DAY, FULL_DAY])
def test_a_plan_adds_up_to_its_day_with_set_up_breaks_and_a_buffer(heading):
    rows, by_number = plan(heading), {name[:2]: core for name, (core, _) in course_map().items()}
    assert rows[0]["start"] == 0 and rows[0]["what"] == "set-up", "a plan opens with the set-up slot"
    assert rows[-1]["start"] == DAY_LENGTH[heading] and rows[-1]["what"] == "end", f"{heading} does not add up"
    lengths = {}
    for row, following in zip(rows, rows[1:], strict=False):
        length = following["start"] - row["start"]
        assert length > 0, f"the plan goes back in time at {row['what']!r}"
        lengths.setdefault(row["what"], []).append(length)
        if row["what"][:2].isdigit():
            number = row["what"][:2]
            assert length == by_number[number], f"{row['what']!r} gets {length} min, core {by_number[number]}"
            assert row["teaching"] + row["exercises"] == length, f"{row['what']!r}: teaching + exercises != its block"
            stated = sum(core_exercises(next(n for n in NAMES if n.startswith(number))).values())
            assert row["exercises"] == stated, f"{row['what']!r}: {row['exercises']} exercise min, notebook: {stated}"
        else:
            assert row["what"] in OTHER_ROWS, f"neither a notebook nor a pause: {row['what']!r}"
    assert lengths["set-up"] == [10]
    assert len(lengths["break"]) >= 2 and min(lengths["buffer and wrap-up"]) >= 10


@pytest.mark.parametrize("heading", [HALF_DAY, FULL_DAY])
def test_a_plan_gives_each_exercise_the_minutes_its_notebook_states(heading):
    stated = {}
    for row in notebook_rows(heading):
        stated |= core_exercises(next(n for n in NAMES if n.startswith(row["what"][:2])))
    planned = {}
    for row in plan(heading):
        for function, minutes in re.findall(r"`(\w+)` \((\d+) min\)", row["prompts"]):
            planned[function] = int(minutes)
    assert planned == stated


HOURS = re.compile(r"(\d+) h(?:ours)?(?: (\d+) min)?\b")  # '3 h 35 min', '3 hours 35 minutes', or '3 h'


def _hours_minutes(text: str) -> int:
    """'3 hours 35 minutes' or '3 h 35 min' -> 215; '3 h' -> 180."""
    hours, minutes = HOURS.search(text).groups()
    return 60 * int(hours) + int(minutes or 0)


def test_the_stated_totals_are_the_maps_sums():
    text, slots = markdown_of("00_start_here"), course_map()
    core = sum(c for c, _ in slots.values())
    extra = sum(f - c for c, f in slots.values())
    opening = text[text.index("**Time:**") :].split("\n\n")[0]
    assert _hours_minutes(opening) == core, "00's opening gives another core total than the map's"
    assert f"about {round(extra / 60)} hours more" in opening, f"Going deeper adds {extra} min in the map"
    by_number = {name[:2]: c for name, (c, _) in slots.items()}
    in_half = {row["what"][:2] for row in notebook_rows(HALF_DAY)}
    half_line = text[text.index(HALF_DAY) + len(HALF_DAY) :].split("\n\n")[0]  # after the day's own "(4 h)"
    stated = [60 * int(h) + int(m or 0) for h, m in HOURS.findall(half_line)]
    assert stated == [sum(by_number[n] for n in in_half), sum(c for n, c in by_number.items() if n not in in_half)]
    full_line = text[text.index(FULL_DAY) + len(FULL_DAY) :].split("\n\n")[0]
    assert _hours_minutes(full_line) == core


def test_each_notebook_states_the_times_of_the_map():
    for name, (core, full) in course_map().items():
        opening = "".join(cells_of(name)[0]["source"])
        stated = opening[opening.index("**Time:**") :].split("\n\n")[0]
        numbers = [int(n) for n in re.findall(r"\b(\d+)\b", stated)]
        assert core in numbers, f"{name} states {stated!r}; the map's core time is {core} min"
        if not name.startswith("00"):
            assert full - core in numbers, f"{name} states {stated!r}; the map's Going deeper time is {full - core} min"


@pytest.mark.parametrize("heading", [HALF_DAY, FULL_DAY])
def test_the_guide_repeats_each_plan_row_for_row(heading):
    assert plan(heading, GUIDE.read_text()) == plan(heading)


def test_the_guide_gives_each_notebook_its_teaching_and_exercise_minutes():
    guide, full_day = GUIDE.read_text(), {row["what"][:2]: row for row in notebook_rows(FULL_DAY)}
    for name in NAMES:
        section = re.search(rf"^## {name[:2]} .*?(?=^## |\Z)", guide, re.M | re.S)
        assert section, f"INSTRUCTOR_GUIDE.md has no '## {name[:2]} ...' section"
        row = full_day[name[:2]]
        line = f"{row['teaching']} min teaching, {row['exercises']} min exercises"
        assert line in section.group(0), f"the guide's {name[:2]} section does not say {line!r}"
        for function in core_exercises(name):
            assert f"`{function}`" in section.group(0), f"the guide's {name[:2]} omits {function}"


READING_LOAD = ROOT.parent / "shared" / "tools" / "reading_load.py"  # the course's calibrated estimate, beside the repo


@pytest.mark.skipif(not READING_LOAD.exists(), reason="the reading-load tool is not beside this checkout")
def test_no_notebook_takes_longer_than_it_says():
    spec = importlib.util.spec_from_file_location("reading_load", READING_LOAD)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for name, (core, full) in course_map().items():
        parts = tool.load(str(NOTEBOOKS / f"{name}.ipynb"))
        estimate = parts["core"]["minutes"], parts["core"]["minutes"] + parts["optional"]["minutes"]
        optional = parts["optional"]["minutes"]
        assert estimate[0] <= core and estimate[1] <= full, f"{name}: estimated {estimate}, stated {(core, full)}"
        assert optional <= full - core, f"{name}: Going deeper estimated {optional:.1f} min, stated {full - core}"


def test_the_guide_answers_every_prediction():
    guide = GUIDE.read_text()
    for name in NAMES:
        asked = markdown_of(name).count("**Predict before you run.**")
        section = re.search(rf"^## {name[:2]} .*?(?=^## |\Z)", guide, re.M | re.S).group(0)
        answered = len(re.findall(r"^\*\*Predict before you run \([\d.]+\)\.\*\*", section, re.M))
        assert answered == asked, f"{name} asks {asked} predictions, the guide answers {answered}"
