"""GLOSSARY.md defines the course's terms: each is used in the notebooks, each link lands on the markdown cell
that defines it (JupyterLab 4 scrolls to `#cell-id=<id>`) and is named by the heading that cell sits under,
the required terms are there, and every notebook points to the glossary from its first cell."""

import itertools
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "GLOSSARY.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
TERM = re.compile(r"^\*\*(.+?)\*\*", re.MULTILINE)  # the bold term that opens an entry
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")  # (text, target)
HEADING = re.compile(r"^(#{1,3})\s+(.+?)\s*$")  # title, section, subsection: what a link's text may name
FENCE = re.compile(r"^\s*```")  # code blocks, whose '# comments' are no headings
GLOSSARY_LINK = re.compile(r"\]\(\.\./GLOSSARY\.md(#[^)\s]*)?\)")
BRACKETS = re.compile(r"\(([^)]*)\)")

# The terms the glossary must define (a term may be one spelling of an entry, e.g. "TV" of "TV (total variation)").
REQUIRED = [
    "GEMV",
    "STREAM",
    "MBU",
    "model bandwidth utilisation",
    "roofline",
    "ridge point",
    "arithmetic intensity",
    "KV cache",
    "prefill",
    "decode step",
    "memory-bound",
    "launch overhead",
    "CUDA graph",
    "NELBO",
    "masked diffusion",
    "tokens per pass",
    "surprisal gap",
    "confidence order",
    "re-masking",
    "remasking",
    "threshold decoding",
    "speculative decoding",
    "TV",
    "total variation",
    "KL",
    "Kullback–Leibler divergence",
]
# Terms the course uses a lot, which the glossary also promises.
COURSE_TERMS = [
    "autoregressive",
    "chain rule",
    "canvas",
    "marginal",
    "bf16",
    "ceiling",
    "typical projection",
    "drafter",
    "target",
    "acceptance rate",
    "validity",
    "entropy",
]


def glossary_terms() -> list[str]:
    return TERM.findall(GLOSSARY.read_text())


def entries() -> dict[str, str]:
    """Each term with its entry's text, up to the next term."""
    text = GLOSSARY.read_text()
    starts = [m.start() for m in TERM.finditer(text)] + [len(text)]
    return {TERM.match(text, a).group(1): text[a:b] for a, b in itertools.pairwise(starts)}


def bare(term: str) -> str:
    return BRACKETS.sub("", term).strip()


def spellings(term: str) -> list[str]:
    """'TV (total variation)' -> ['TV (total variation)', 'TV', 'total variation']; 'a (b / c)' -> [..., 'b', 'c'].
    Where two entries differ only in their brackets, the brackets tell the senses apart and are no spelling:
    'Kernel (GPU)' -> ['Kernel (GPU)', 'Kernel'], never 'GPU'."""
    shared = [bare(t).casefold() for t in glossary_terms()].count(bare(term).casefold()) > 1
    names = [bare(term), *([] if shared else BRACKETS.findall(term))]
    alternatives = [part for name in names for part in name.split("/")]  # 'b / c' -> 'b', 'c'
    return list(dict.fromkeys(s.strip() for s in [term, *names, *alternatives] if s.strip()))


def markdown(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def first_use(text: str, spelling: str) -> int | None:
    """Where a whole-word, case-insensitive use starts; a plural 's' is allowed ('GEMVs' uses 'GEMV'), and so is
    a line break between two words."""
    words = r"\s+".join(re.escape(word) for word in spelling.split())
    found = re.search(rf"(?<!\w){words}s?(?!\w)", text, re.IGNORECASE)
    return None if found is None else found.start()


def used_in(text: str, spelling: str) -> bool:
    return first_use(text, spelling) is not None


def headings(lines: list[str]) -> list[str]:
    """The headings of level 1 to 3 among these markdown lines, outside code blocks."""
    found, in_code = [], False
    for line in lines:
        in_code ^= bool(FENCE.match(line))
        heading = None if in_code else HEADING.match(line)
        if heading:
            found.append(heading.group(2))
    return found


def link_text(notebook: Path, cells: list[dict], index: int, names: list[str]) -> str:
    """What a link to cell `index` must read: 'NN · ' and the heading the term's first use in that cell sits
    under, the nearest level-2 or level-3 heading at or above it (the notebook's title before the first
    section), with a section number's dot dropped: '01 · 1.4 How much is there to predict? Entropy'."""
    above = "\n".join("".join(c["source"]) for c in cells[:index] if c["cell_type"] == "markdown").splitlines()
    text = "".join(cells[index]["source"])
    start = min(pos for pos in (first_use(text, name) for name in names) if pos is not None)
    line_end = text.find("\n", start)
    through_use = text[: len(text) if line_end < 0 else line_end].splitlines()  # up to the end of its line
    heading = (headings(above) + headings(through_use))[-1]
    heading = re.sub(r"^\d\d · ", "", heading)  # the title already starts with the notebook's number
    heading = re.sub(r"^(\d+(?:\.\d+)*)\.\s", r"\1 ", heading)  # '2. The chain rule' -> '2 The chain rule'
    return f"{notebook.stem[:2]} · {heading}"


def test_the_glossary_has_entries_in_alphabetical_order():
    terms = glossary_terms()
    assert len(terms) >= 30, f"GLOSSARY.md has only {len(terms)} bold terms at the start of a line"
    assert terms == sorted(terms, key=str.casefold), "GLOSSARY.md's terms are not in alphabetical order"


def test_every_term_is_used_in_a_notebook():
    course = "\n".join(markdown(nb) for nb in NOTEBOOKS)
    unused = [t for t in glossary_terms() if not any(used_in(course, s) for s in spellings(t))]
    assert not unused, f"no notebook's markdown uses these glossary terms (in any of their spellings): {unused}"


def link_problem(term: str, text: str, target: str) -> str | None:
    """Why a link of `term`'s entry does not land on its definition, or None when it does."""
    path, _, fragment = target.partition("#")
    notebook = ROOT / path
    if notebook.suffix != ".ipynb" or not notebook.is_file():
        return f"{path} is no notebook"
    if not fragment.startswith("cell-id="):
        return f"its fragment '#{fragment}' is not '#cell-id=<the id of the cell that defines the term>'"
    cell_id = fragment.removeprefix("cell-id=")
    cells = json.loads(notebook.read_text())["cells"]
    index = next((i for i, c in enumerate(cells) if c.get("id") == cell_id), None)
    if index is None:
        return f"{path} has no cell with id {cell_id}"
    if cells[index]["cell_type"] != "markdown":
        return f"cell {cell_id} is a {cells[index]['cell_type']} cell, not markdown"
    names = [s for s in spellings(term) if used_in("".join(cells[index]["source"]), s)]
    if not names:
        return f"cell {cell_id} does not use the term in any of its spellings {spellings(term)}"
    expected = link_text(notebook, cells, index, names)
    return None if text == expected else f"its text should name the heading above the cell: [{expected}]"


def test_every_link_lands_on_the_cell_that_defines_its_term():
    broken = []
    for term, entry in entries().items():
        links = LINK.findall(entry)
        if not links:
            broken.append(f"{term}: no link")
        for text, target in links:
            if why := link_problem(term, text, target):
                broken.append(f"{term}: [{text}]({target}): {why}")
    assert not broken, "GLOSSARY.md has links that miss their definition:\n" + "\n".join(broken)


def test_the_glossary_covers_the_required_terms():
    defined = {s.casefold() for t in glossary_terms() for s in spellings(t)}
    missing = [t for t in REQUIRED + COURSE_TERMS if t.casefold() not in defined]
    assert not missing, f"GLOSSARY.md does not define: {missing}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_notebook_links_to_the_glossary(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    first = next("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    linked = GLOSSARY_LINK.search(first) is not None
    assert linked, f"{notebook.name}: its first markdown cell has no link to ../GLOSSARY.md"
