"""Where a notebook names a helper, it links to the source file; every such link must resolve."""

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0*.ipynb"))
LINK = re.compile(r"\]\((\.\./[^)\s]+)\)")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_links_to_the_helpers_resolve(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    targets = [t for c in cells if c["cell_type"] == "markdown" for t in LINK.findall("".join(c["source"]))]
    missing = [t for t in targets if not (notebook.parent / t).resolve().exists()]
    assert not missing, f"{notebook.name} links to missing files: {missing}"


def test_the_notebooks_link_the_helpers_they_name():
    linked = sum(
        len(LINK.findall("".join(c["source"]))) for nb in NOTEBOOKS for c in json.loads(nb.read_text())["cells"]
    )
    assert linked >= 20
