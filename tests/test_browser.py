"""The course opened in a real browser: JupyterLab from the course's environment, headless Chromium
through Playwright, *Run All Cells* on every notebook, then no error, every widget drawn, and a
slider that redraws its figure. nbval executes the notebooks but never renders a widget; this does.

Run it with `.venv/bin/python -m pytest -m browser -n 0 -s tests/test_browser.py` after
`sudo apt-get install chromium` (Debian) and `.venv/bin/pip install -r requirements-dev.txt`;
COURSE_CHROMIUM names another Chromium binary. Without them it is skipped (a failure when
COURSE_REQUIRE_BROWSER=1, as in .ci/run). With -s it prints the path of a screenshot per notebook.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path(os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium"))
REQUIRED = os.environ.get("COURSE_REQUIRE_BROWSER") == "1"
HOW_TO_INSTALL = "install them with `apt-get install chromium` and `pip install -r requirements-dev.txt`"
WIDGETS = {  # notebook -> widgets it shows (each a row of controls with at least one slider)
    "00_start_here": 0,
    "01_chain_rule": 1,
    "02_ar_decoder": 1,
    "03_masked_diffusion": 1,
    "04_roofline": 0,
    "05_gpus": 1,
    "06_speculative": 0,
}
RUN_SECONDS = 300  # the slowest notebook runs in about a minute on two cores

pytestmark = pytest.mark.browser


def missing(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (COURSE_REQUIRE_BROWSER=1 requires the browser test)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing(f"Playwright is not installed: {HOW_TO_INSTALL}")
    if not CHROMIUM.exists():
        missing(f"no Chromium at {CHROMIUM}: {HOW_TO_INSTALL}")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def lab(browser, tmp_path_factory):
    """JupyterLab with the course's settings, serving a copy of the notebooks (Run All must not
    rewrite the committed ones). Yields (base URL, token, folder for screenshots)."""
    work = tmp_path_factory.mktemp("lab")
    shutil.copytree(ROOT / "notebooks", work / "notebooks")
    tracker = work / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    # every cell stays in the page, so what is checked below is what a learner scrolls through
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port, token = free_port(), secrets.token_hex(16)
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        f"--config={ROOT / 'jupyter_lab_config.py'}",  # the course's own settings, as the README starts it
        f"--ServerApp.root_dir={work}",
        f"--port={port}",
        f"--IdentityProvider.token={token}",
        "--no-browser",
        "--LabApp.expose_app_in_browser=True",
    ]
    env = os.environ | {
        "JUPYTERLAB_SETTINGS_DIR": str(work / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(work / "workspaces"),
    }
    log = (work / "jupyterlab.log").open("w")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"JupyterLab exited: see {work / 'jupyterlab.log'}")
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab did not answer within a minute: see {work / 'jupyterlab.log'}")
        shots = work / "screenshots"
        shots.mkdir()
        yield base, token, shots
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


ALL_RAN = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!kernel || kernel.status !== 'idle') return false;
    const cells = panel.content.model.cells;
    for (let i = 0; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.type === 'code' && cell.sharedModel.getSource().trim() && cell.executionCount === null) return false;
    }
    return true;
}"""
OUTPUTS = """() => {
    const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
    const out = [];
    for (let i = 0; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.type === 'code') out.push(cell.outputs.toJSON());
    }
    return out;
}"""
KERNEL_IDLE = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const session = panel && panel.sessionContext && panel.sessionContext.session;
    return !!(session && session.kernel && session.kernel.status === 'idle');
}"""


def figure_of(widget):
    """What the widget draws: the sources of its images (matplotlib figures as PNG data)."""
    return widget.evaluate("w => [...w.querySelectorAll('img')].map(img => img.src).join('|')")


@pytest.mark.parametrize("notebook", list(WIDGETS))
def test_run_all_cells_in_jupyterlab(notebook, browser, lab):
    base, token, shots = lab
    start = time.perf_counter()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # a workspace of its own, reset, so that no other notebook is restored next to it
        page.goto(f"{base}/lab/workspaces/{notebook}/tree/notebooks/{notebook}.ipynb?reset&token={token}")
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=60_000)
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        notebook_view = page.locator("#" + page.evaluate("() => window.jupyterapp.shell.currentWidget.content.node.id"))
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
        page.get_by_role("menuitem", name="Run", exact=True).click()  # the menu, as a learner does it
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        page.wait_for_function(ALL_RAN, timeout=RUN_SECONDS * 1000, polling=1000)

        outputs = page.evaluate(OUTPUTS)  # (code cells,) lists of nbformat outputs
        errors = [o for cell in outputs for o in cell if o.get("output_type") == "error"]
        assert not errors, f"{notebook}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
        shown_outputs = "\n".join(notebook_view.locator(".jp-OutputArea").all_inner_texts())  # not the markdown
        assert "Error displaying widget" not in shown_outputs
        assert "Traceback" not in shown_outputs

        widgets = notebook_view.locator(".jp-OutputArea-output .widget-vbox:has(.widget-slider)")
        shown = [w for w in widgets.all() if not w.locator(".widget-vbox:has(.widget-slider)").count()]
        assert len(shown) == WIDGETS[notebook], f"{notebook} shows {len(shown)} widgets"
        for widget in shown:
            widget.scroll_into_view_if_needed()
            page.wait_for_function("w => w.querySelector('img')", arg=widget.element_handle(), timeout=60_000)
            before = figure_of(widget)
            widget.locator(".widget-slider [role=slider]").first.focus()
            page.keyboard.press("ArrowRight")  # one step of the first slider
            page.wait_for_function(
                "([w, old]) => [...w.querySelectorAll('img')].map(i => i.src).join('|') !== old",
                arg=[widget.element_handle(), before],
                timeout=60_000,
            )
            page.wait_for_function(KERNEL_IDLE, timeout=60_000)
        shot = shots / f"{notebook}.png"
        page.screenshot(path=str(shot), full_page=False)
        seconds = time.perf_counter() - start
        print(f"{notebook}: ran every cell, {len(shown)} widget(s) redrawn by a slider, {seconds:.0f} s; {shot}")
    finally:
        page.evaluate("() => window.jupyterapp.shell.currentWidget?.sessionContext?.shutdown()")  # free the kernel
        page.close()
