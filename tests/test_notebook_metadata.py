"""Committed notebooks keep what nbval and the widgets need, and nothing that changes on every run:
outputs and execution counts stay, execution timestamps go (nbstripout, README: Re-executing)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("0*.ipynb"))
WITH_WIDGETS = {"01_chain_rule", "02_ar_decoder", "03_masked_diffusion", "05_gpus"}  # as tests/test_browser.py


def notebook(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_stores_execution_timestamps(path):
    stamped = [i for i, cell in enumerate(notebook(path)["cells"]) if "execution" in cell.get("metadata", {})]
    assert not stamped, (
        f"{path.name}: cells {stamped} store execution timestamps; run "
        "`nbstripout --keep-output --keep-count --keep-id --keep-metadata-keys metadata.widgets notebooks/*.ipynb`"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_counts_and_widget_state_are_kept(path):
    nb = notebook(path)
    code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
    assert code and all(cell["execution_count"] is not None for cell in code), "every code cell keeps its count"
    assert any(cell["outputs"] for cell in code), "the outputs nbval compares are committed"
    if path.stem in WITH_WIDGETS:  # the state a notebook's widgets render from without a kernel
        assert "widgets" in nb["metadata"], "saved widget state must survive the stripping"


def test_the_timing_cells_keep_their_nbval_markers():
    marked = {p.stem for p in NOTEBOOKS if "# NBVAL_IGNORE_OUTPUT" in p.read_text()}
    assert {"02_ar_decoder", "04_roofline", "05_gpus", "06_speculative"} <= marked
