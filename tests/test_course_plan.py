"""Notebook 00's map and workshop plan can never drift from the notebooks: every notebook appears in
both, the plan's times add up to the half day, each notebook's slot in the plan is its core time in
the map, and the exercise minutes the plan gives are the ones the notebooks state."""

import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("0*.ipynb"))
MINUTES = re.compile(r"(\d+) min")


def markdown_of(name: str) -> str:
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


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


PLAN, EXTENSION = "**Plan (4 h).**", "**Extension ("  # the half day, and the notebook it leaves for later


def plan(heading: str = PLAN) -> list[tuple[int, str, str]]:
    """(start minute, what, prompts) for every row of a plan's table."""
    rows = table_after(markdown_of("00_start_here"), heading)
    out = []
    for row in rows:
        hours, minutes = row[0].split(":")
        out.append((60 * int(hours) + int(minutes), row[1], row[2] if len(row) > 2 else ""))
    return out


def test_every_notebook_is_in_the_map_and_the_plan():
    assert set(course_map()) == set(NAMES)
    planned = [what.split()[0] for heading in (PLAN, EXTENSION) for _, what, _ in plan(heading) if what[:2].isdigit()]
    assert sorted(planned) == sorted(name[:2] for name in NAMES)  # each notebook once, in one of the two


def test_the_plan_adds_up_to_the_half_day_and_gives_each_notebook_its_core_time():
    slots = course_map()
    by_number = {name[:2]: core for name, (core, _) in slots.items()}
    text = markdown_of("00_start_here")
    extension_minutes = int(re.search(r"\*\*Extension \((\d+) min\)\.\*\*", text).group(1))
    for heading, minutes in ((PLAN, 240), (EXTENSION, extension_minutes)):
        rows = plan(heading)
        assert rows[0][0] == 0 and rows[-1][0] == minutes and rows[-1][1] == "end", f"{heading} does not add up"
        _check_slots(rows, by_number)
    for name, (core, full) in slots.items():
        assert full >= core, f"{name}: the full time is shorter than the core time"


def _check_slots(rows, by_number) -> None:
    for (start, what, _), (end, _, _) in zip(rows, rows[1:], strict=False):
        length = end - start
        assert length > 0, f"the plan goes back in time at {what!r}"
        if what[:2].isdigit():
            assert length == by_number[what[:2]], (
                f"{what!r} gets {length} min in the plan, its core time is {by_number[what[:2]]}"
            )
        else:
            assert what in ("break", "wrap-up"), f"a row of the plan that is neither a notebook nor a break: {what!r}"


def test_the_plan_gives_each_exercise_the_minutes_its_notebook_states():
    stated = {}
    for name in NAMES:
        cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            heading = re.search(r"^### Exercise.*\((\d+) min\)", source, re.M)
            if cell["cell_type"] == "markdown" and heading:
                stub = next("".join(c["source"]) for c in cells[i + 1 :] if c["cell_type"] == "code")
                stated[re.search(r"def (\w+)\(", stub).group(1)] = int(heading.group(1))
    planned = {}
    for heading in (PLAN, EXTENSION):
        for _, _, prompts in plan(heading):
            for function, minutes in re.findall(r"`(\w+)` \((\d+) min\)", prompts):
                planned[function] = int(minutes)
    assert planned == stated
    assert len(stated) >= 10  # two stub exercises in each of 01 to 04 and 06


def _hours_minutes(text: str) -> int:
    """'3 hours 35 minutes' or '3 h 35 min' -> 215."""
    hours, minutes = re.search(r"(\d+) h(?:ours)? (\d+) min", text).groups()
    return 60 * int(hours) + int(minutes)


def test_the_stated_totals_are_the_maps_sums():
    text, slots = markdown_of("00_start_here"), course_map()
    core = sum(c for c, _ in slots.values())
    extra = sum(f - c for c, f in slots.values())
    opening = text[text.index("**Time:**") :].split("\n\n")[0]
    assert _hours_minutes(opening) == core, "00's opening gives another core total than the map's"
    assert f"about {round(extra / 60)} hours more" in opening, f"Going deeper adds {extra} min in the map"
    plan_line = text[text.index(PLAN) :].split("\n\n")[0]
    in_plan = {what.split()[0] for _, what, _ in plan() if what[:2].isdigit()}
    assert _hours_minutes(plan_line) == sum(c for name, (c, _) in slots.items() if name[:2] in in_plan)


def test_each_notebook_states_the_times_of_the_map():
    for name, (core, full) in course_map().items():
        if name.startswith("00"):
            continue
        cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
        opening = "".join(cells[0]["source"])
        stated = opening[opening.index("**Time:**") :].split("\n\n")[0]
        numbers = [int(n) for n in re.findall(r"\b(\d+)\b", stated)]
        assert core in numbers, f"{name} states {stated!r}; the map's core time is {core} min"
        assert full - core in numbers, f"{name} states {stated!r}; the map's Going deeper time is {full - core} min"
