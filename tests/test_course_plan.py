"""The course's times and plans can never drift from what readers took, from the notebooks or from the
instructor's guide. Every stated time comes from notebooks/reading_times.json (the median of the
cold reads, rounded up to 5 minutes) and the newest read lies within 20 % of it; 00's map, each
notebook's Time: line, 00's totals and the guide's plans carry those times; the two-day plan and
the half day add up within their days, with set-up, breaks, lunch and a buffer; each exercise gets
the minutes its notebook states; and (where the course's reading-load tool is at hand) no stated
time is below the tool's floor."""

import importlib.util
import json
import math
import re
import statistics
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
GUIDE = ROOT / "INSTRUCTOR_GUIDE.md"
READS = NOTEBOOKS / "reading_times.json"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("0*.ipynb"))
MINUTES = re.compile(r"(\d+) min")
OPTIONAL = re.compile(r"^##\s+(\d+\.?\s*)?(going deeper|optional|appendix)", re.I)  # as the reading-load tool

DAY_1, DAY_2 = "**Day 1 of two: the typewriter and the editor.**", "**Day 2 of two: the machine and the way out.**"
HALF_DAY = "**Half day (4 h).**"
PLANS = {DAY_1: ("00", "01", "02", "03"), DAY_2: ("04", "05", "06"), HALF_DAY: ("00", "01", "02", "03")}
LONGEST = {DAY_1: 390, DAY_2: 390, HALF_DAY: 240}  # a day ends within 6 h 30 min; the half day is 4 h
OTHER_ROWS = {"set-up", "break", "lunch", "buffer and wrap-up"}  # a plan's rows that are not a notebook
TOLERANCE = 0.20  # the newest read of a notebook's core lies within 20 % of its stated core time


def cells_of(name: str) -> list[dict]:
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]


def markdown_of(name: str) -> str:
    return "\n".join("".join(c["source"]) for c in cells_of(name) if c["cell_type"] == "markdown")


def _minutes(read) -> float:
    return sum(read) / 2 if isinstance(read, list) else float(read)  # a reader's range counts its midpoint


def reads(part: str) -> dict[str, list[float]]:
    """notebook number -> the minutes of each recent read of that part ('core' or 'full'), oldest
    first: the rounds marked as counting, those of the text as it stands."""
    out = {}
    for round_ in json.loads(READS.read_text())["rounds"]:
        if not round_["counts"]:
            continue
        for number, read in round_.get(part, {}).items():
            out.setdefault(number, []).append(_minutes(read))
    return out


def from_reads() -> dict[str, tuple[int, int]]:
    """notebook number -> (core, full) minutes: the median of the reads, rounded up to 5."""

    def up(values):
        return 5 * math.ceil(statistics.median(values) / 5)

    core, full = reads("core"), reads("full")
    return {number: (up(core[number]), up(full[number])) for number in core}


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
    """notebook -> (core minutes, full minutes), from 00's map."""
    rows = table_after(markdown_of("00_start_here"), "## The map")
    return {
        row[0].strip("`"): (int(MINUTES.search(row[1]).group(1)), int(MINUTES.search(row[2]).group(1))) for row in rows
    }


def plan(heading: str) -> list[dict]:
    """Every row of one of the guide's plans: its start minute, what, teaching and exercise minutes,
    what the instructor demonstrates and what the learners do."""
    out = []
    for time, what, teaching, exercises, demonstrates, learners in table_after(GUIDE.read_text(), heading):
        hours, minutes = time.split(":")
        minutes_in = [int(MINUTES.search(c).group(1)) if c else None for c in (teaching, exercises)]
        out.append(
            {"start": 60 * int(hours) + int(minutes), "what": what, "teaching": minutes_in[0],
             "exercises": minutes_in[1], "demonstrates": demonstrates, "learners": learners}
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


def notebook_named(number: str) -> str:
    return next(n for n in NAMES if n.startswith(number))


def notebook_rows(heading: str) -> list[dict]:
    return [row for row in plan(heading) if row["what"][:2].isdigit()]


def planned_exercises(row: dict) -> dict[str, int]:
    return {fn: int(m) for fn, m in re.findall(r"`(\w+)` \((\d+) min\)", row["learners"])}


# ------------------------------------------------------------------ times from readers
def test_the_reads_are_recorded_per_notebook_and_round_with_the_commit_each_read():
    rounds = json.loads(READS.read_text())["rounds"]
    assert len(rounds) >= 5
    for round_ in rounds:
        assert round_["commit"] and round_["who"] and round_["core"] and isinstance(round_["counts"], bool), round_
    numbers = {name[:2] for name in NAMES}
    assert set(reads("core")) == numbers and set(reads("full")) == numbers, "every notebook has core and full reads"
    newest = rounds[-1]
    for number, sections in newest["sections"].items():  # the checkpoints' minutes, section by section
        core = sum(minutes for section, minutes in sections.items() if section != "appendix")
        assert core == newest["core"][number], f"{number}: its sections add up to {core}, its core read to another"


def test_the_map_states_the_median_read_of_each_notebook():
    stated, measured = course_map(), from_reads()
    assert set(stated) == set(NAMES)
    for name, times in stated.items():
        assert times == measured[name[:2]], f"{name}: the map says {times}, the reads' medians {measured[name[:2]]}"


def test_the_newest_read_of_each_core_is_within_20_percent_of_its_stated_time():
    stated_times = from_reads()
    for number, minutes in reads("core").items():
        stated = stated_times[number][0]
        assert abs(minutes[-1] - stated) <= TOLERANCE * stated, f"{number}: newest read {minutes[-1]}, stated {stated}"


def test_each_notebook_states_the_times_of_the_map():
    for name, (core, full) in course_map().items():
        opening = "".join(cells_of(name)[0]["source"])
        stated = opening[opening.index("**Time:**") :].split("\n\n")[0]
        numbers = [int(n) for n in re.findall(r"\b(\d+)\b", stated)]
        assert core in numbers, f"{name} states {stated!r}; the map's core time is {core} min"
        assert full - core in numbers, f"{name} states {stated!r}; the map's Going deeper time is {full - core} min"


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


READING_LOAD = ROOT.parent / "shared" / "tools" / "reading_load.py"  # the course's floor, beside the repo


@pytest.mark.skipif(not READING_LOAD.exists(), reason="the reading-load tool is not beside this checkout")
def test_no_stated_time_is_below_the_reading_load_floor():
    spec = importlib.util.spec_from_file_location("reading_load", READING_LOAD)
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    for name, (core, full) in course_map().items():
        parts = tool.load(str(NOTEBOOKS / f"{name}.ipynb"))
        floor_core, floor_optional = parts["core"]["minutes"], parts["optional"]["minutes"]
        assert floor_core <= core, f"{name}: the floor is {floor_core:.1f} min, the stated core {core}"
        assert floor_optional <= full - core, f"{name}: Going deeper's floor {floor_optional:.1f}, stated {full - core}"


# ------------------------------------------------------------------ the plans
def test_the_two_days_cover_every_notebook_once_in_order_and_the_half_day_starts_at_00():
    days = [row["what"][:2] for heading in (DAY_1, DAY_2) for row in notebook_rows(heading)]
    assert days == [name[:2] for name in NAMES], "the two days cover each notebook once, in order"
    for heading, numbers in PLANS.items():
        assert tuple(row["what"][:2] for row in notebook_rows(heading)) == numbers, heading
    half = notebook_rows(HALF_DAY)
    assert all("part" not in row["what"] for row in half[:-1]) and "part" in half[-1]["what"], (
        "the half day ends with a named part of its last notebook"
    )


@pytest.mark.parametrize("heading", list(PLANS))
def test_a_plan_adds_up_within_its_day_with_set_up_breaks_lunch_and_a_buffer(heading):
    rows, core = plan(heading), {n: c for n, (c, _) in from_reads().items()}
    assert rows[0]["start"] == 0 and rows[0]["what"] == "set-up", "a plan opens with the set-up slot"
    assert rows[-1]["what"] == "end" and rows[-1]["start"] <= LONGEST[heading], f"{heading} ends too late"
    if heading == HALF_DAY:
        assert rows[-1]["start"] == LONGEST[heading], "the half day is four hours"
    lengths = {}
    for row, following in zip(rows, rows[1:], strict=False):
        length = following["start"] - row["start"]
        assert length > 0, f"the plan goes back in time at {row['what']!r}"
        lengths.setdefault(row["what"], []).append(length)
        if not row["what"][:2].isdigit():
            assert row["what"] in OTHER_ROWS, f"neither a notebook nor a pause: {row['what']!r}"
            continue
        number = row["what"][:2]
        assert row["teaching"] + row["exercises"] == length, f"{row['what']!r}: teaching + exercises != its block"
        assert row["demonstrates"] and row["learners"], f"{row['what']!r}: say what is shown and what is done"
        stated = core_exercises(notebook_named(number))
        planned = planned_exercises(row)
        assert row["exercises"] == sum(planned.values()), f"{row['what']!r}: its exercise minutes are not its boxes'"
        assert all(stated[fn] == minutes for fn, minutes in planned.items()), f"{row['what']!r}: not the stated boxes"
        if "part" in row["what"]:
            assert length < core[number], f"{row['what']!r} is a part, shorter than the core's {core[number]} min"
            assert "left out" in row["demonstrates"] + row["learners"], f"{row['what']!r} says what it leaves out"
        else:
            assert length == core[number], f"{row['what']!r} gets {length} min, core {core[number]}"
            assert planned == stated, f"{row['what']!r}: every core exercise, with its minutes"
    assert min(lengths["set-up"]) >= 10 and len(lengths["break"]) >= (1 if heading == HALF_DAY else 2)
    assert min(lengths["buffer and wrap-up"]) >= 15
    if heading != HALF_DAY:
        assert lengths["lunch"] == [60], "a day has an hour for lunch"


def test_the_guide_gives_each_notebook_its_teaching_and_exercise_minutes_and_timeboxes():
    guide = GUIDE.read_text()
    rows = {row["what"][:2]: row for heading in (DAY_1, DAY_2) for row in notebook_rows(heading)}
    for name in NAMES:
        section = re.search(rf"^## {name[:2]} .*?(?=^## |\Z)", guide, re.M | re.S)
        assert section, f"INSTRUCTOR_GUIDE.md has no '## {name[:2]} ...' section"
        row = rows[name[:2]]
        line = f"{row['teaching']} min teaching, {row['exercises']} min exercises"
        assert line in section.group(0), f"the guide's {name[:2]} section does not say {line!r}"
        assert "**Checkpoints.**" in section.group(0), f"the guide's {name[:2]} section gives no timing checkpoints"
        for function in core_exercises(name):
            assert f"`{function}`" in section.group(0), f"the guide's {name[:2]} omits {function}"
            box = re.search(rf"`{function}`[^.]*?\bat\s+minute (\d+)", section.group(0))
            assert box, f"the guide's {name[:2]} gives {function} no timebox ('at minute N, live-code ...')"


def test_each_drop_says_the_minutes_it_saves():
    guide = GUIDE.read_text()
    drops = guide[guide.index("## When late: what to drop") :].split("\n## ")[0]
    items = re.findall(r"^\d+\. .*?(?=^\d+\. |\Z)", drops, re.M | re.S)
    assert len(items) >= 6
    for item in items:
        assert re.search(r"saves (\d+) min", item), f"a drop without its minutes: {item[:60]!r}"


def test_the_guide_answers_every_prediction_once():
    guide = GUIDE.read_text()
    for name in NAMES:
        asked = markdown_of(name).count("**Predict before you run.**")
        section = re.search(rf"^## {name[:2]} .*?(?=^## |\Z)", guide, re.M | re.S).group(0)
        labels = re.findall(r"^\*\*Predict before you run \(([^)]+)\)\.\*\*", section, re.M)
        assert len(labels) == asked, f"{name} asks {asked} predictions, the guide answers {len(labels)}"
        assert len(set(labels)) == len(labels), f"the guide labels two of {name}'s predictions alike: {labels}"


def test_untested_fallbacks_are_marked_untested():
    for path in (GUIDE, ROOT / "README.md"):
        for paragraph in re.split(
            r"\n\s*\n|\n(?=\s*- |\d+\. )", re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        ):  # paragraphs and list items
            offered = re.search(r"fallback|fails|offered", paragraph, re.I)  # offered where the course does not run
            if re.search(r"\bBinder\b|\bWindows\b", paragraph) and offered:
                assert "untested" in paragraph.lower() or "not tested" in paragraph.lower(), (path.name, paragraph)
