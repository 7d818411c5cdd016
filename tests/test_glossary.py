"""GLOSSARY.md defines the course's terms: each is used in the notebooks, each link lands on a real
heading, the required terms are there, and every notebook points to the glossary from its first cell."""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "GLOSSARY.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0*.ipynb"))
TERM = re.compile(r"^\*\*(.+?)\*\*", re.MULTILINE)  # the bold term that opens an entry
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
FENCED = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)  # code blocks, whose '# comments' are no headings
GLOSSARY_LINK = re.compile(r"\]\(\.\./GLOSSARY\.md(#[^)\s]*)?\)")

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


def spellings(term: str) -> list[str]:
    """'TV (total variation)' -> ['TV (total variation)', 'TV', 'total variation']; 'a / b' -> [..., 'a', 'b']."""
    parts = [term, re.sub(r"\([^)]*\)", "", term), *re.findall(r"\(([^)]*)\)", term)]
    return list(dict.fromkeys(s.strip() for part in parts for s in [part, *part.split("/")] if s.strip()))


def markdown(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def used_in(text: str, spelling: str) -> bool:
    """A whole-word, case-insensitive match; a plural 's' is allowed ('GEMVs' uses 'GEMV')."""
    return re.search(rf"(?<!\w){re.escape(spelling)}s?(?!\w)", text, re.IGNORECASE) is not None


def anchors(notebook: Path) -> set[str]:
    """JupyterLab's anchor for every markdown heading, any level: its text with each space a '-'."""
    return {h.replace(" ", "-") for h in HEADING.findall(FENCED.sub("", markdown(notebook)))}


def test_the_glossary_has_entries_in_alphabetical_order():
    terms = glossary_terms()
    assert len(terms) >= 30, f"GLOSSARY.md has only {len(terms)} bold terms at the start of a line"
    assert terms == sorted(terms, key=str.casefold), "GLOSSARY.md's terms are not in alphabetical order"


def test_every_term_is_used_in_a_notebook():
    course = "\n".join(markdown(nb) for nb in NOTEBOOKS)
    unused = [t for t in glossary_terms() if not any(used_in(course, s) for s in spellings(t))]
    assert not unused, f"no notebook's markdown uses these glossary terms (in any of their spellings): {unused}"


def test_every_link_resolves_to_a_notebook_heading():
    broken = []
    for target in LINK.findall(GLOSSARY.read_text()):
        path, _, anchor = target.partition("#")
        file = ROOT / path
        if not file.exists():
            broken.append(f"{target} (no file {path})")
        elif anchor and (file.suffix != ".ipynb" or anchor not in anchors(file)):
            broken.append(f"{target} (no heading '{anchor.replace('-', ' ')}' in {path})")
    assert not broken, f"GLOSSARY.md has broken links: {broken}"


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
