"""Every number the instructor's guide quotes from a notebook is tied to the cell it comes from.

In each notebook's section of INSTRUCTOR_GUIDE.md ("## 02 ..."), a paragraph that quotes numbers
ends with a comment naming its cells, `<!-- quotes: 186c1e4d 0d057052 -->` (a cell of another
notebook is written `05:0065dcb2`). Each number of the paragraph must appear in one of those
cells, in its source or in its committed outputs, so that a re-executed notebook whose output
changes a number fails here until the guide follows. Minutes, section and notebook numbers and
checkpoint times are the guide's own and are not quotes."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "INSTRUCTOR_GUIDE.md"
NOTEBOOKS = {p.stem[:2]: p for p in sorted((ROOT / "notebooks").glob("0*.ipynb"))}
QUOTES = re.compile(r"<!--\s*quotes:\s*([^>]*?)\s*-->")
NUMBER = re.compile(r"(?<![\w.{,])(\d{1,3}(?:(?:,|\{,\})\d{3})+|\d+)(\.\d+)?(?![\w{])")
OWN = r"(?:\bnotebooks?|\bsections?|\bsection's|\bexercises?|\bminute|\bday|\btoken)"  # the guide's own numbers
OWN_BEFORE = re.compile(rf"{OWN}\s+(?:[\d.]+\s*(?:to|and|or|,)\s*)*$", re.I)  # 'sections 1.3 to 1.6' too
OWN_AFTER = re.compile(r"^(?:\s*(?:min\b|minutes\b|h\b|hours?\b)|\)\.\*\*|, batch 64\)\.\*\*)")


def quoted_numbers(paragraph: str) -> list[str]:
    """The numbers a paragraph quotes, as written ('8,256', '0.13'), comments and code spans left out."""
    text = QUOTES.sub("", paragraph)
    text = re.sub(r"`[^`]*`", "", text)  # function and file names
    out = []
    for match in NUMBER.finditer(text):
        before, after = text[max(0, match.start() - 30) : match.start()], text[match.end() : match.end() + 20]
        if OWN_BEFORE.search(before) or OWN_AFTER.match(after):
            continue
        if before.endswith("(") and after.startswith(")"):  # a label such as (5.1)
            continue
        if match.group(0) in ("0", "1"):  # the constants of a formula, such as min(1, p/q)
            continue
        out.append(match.group(0).replace("{,}", ","))
    return out


def cell_text(number: str, cell_id: str) -> str:
    notebook, _, cell_id = cell_id.rpartition(":")
    cells = json.loads(NOTEBOOKS[notebook or number].read_text())["cells"]
    cell = next((c for c in cells if c["id"] == cell_id), None)
    assert cell is not None, f"the guide names cell {cell_id} of notebook {notebook or number}, which has none"
    texts = ["".join(cell["source"])]
    for output in cell.get("outputs", []):
        texts += ["".join(output.get("text", "")), "".join(output.get("data", {}).get("text/plain", ""))]
    return "\n".join(texts).replace("{,}", ",")


def appears(number: str, text: str) -> bool:
    forms = {number, number.replace(",", "")}
    return any(re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text) for form in forms)


def paragraphs() -> list[tuple[str, str]]:
    """(notebook number, paragraph) for every paragraph of a notebook's section of the guide, and for
    every paragraph elsewhere that names its cells."""
    out = []
    for part in re.split(r"^(?=## )", GUIDE.read_text(), flags=re.M):
        number = re.match(r"## (0\d) ", part)
        for paragraph in re.split(r"\n\s*\n", part):
            if number and not paragraph.startswith("## "):
                out.append((number.group(1), paragraph))
            elif QUOTES.search(paragraph):
                out.append(("", paragraph))
    return out


@pytest.mark.parametrize(("number", "paragraph"), paragraphs(), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_each_quoted_number_is_in_a_cell_the_paragraph_names(number, paragraph):
    numbers = quoted_numbers(paragraph)
    tie = QUOTES.search(paragraph)
    if not numbers:
        return
    assert tie, f"a paragraph of the guide's {number} quotes {numbers} but names no cells (<!-- quotes: ... -->)"
    texts = [cell_text(number, cell_id) for cell_id in tie.group(1).split()]
    missing = [n for n in numbers if not any(appears(n, text) for text in texts)]
    assert not missing, f"the guide's {number} quotes {missing}, found in none of the cells {tie.group(1)}"


def test_a_changed_number_is_caught(tmp_path, monkeypatch):
    """Break it once: a quoted number the named cell does not hold fails."""
    number, paragraph = next((n, p) for n, p in paragraphs() if n == "02" and "95.9" in p)
    broken = paragraph.replace("95.9", "95.8")
    with pytest.raises(AssertionError, match=r"95\.8"):
        test_each_quoted_number_is_in_a_cell_the_paragraph_names(number, broken)
