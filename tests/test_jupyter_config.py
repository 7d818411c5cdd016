"""The course's JupyterLab settings: the README starts JupyterLab with them, they serve the whole
repository (so helpers/ opens from the file browser), start on notebook 00, and turn off the news
pop-up that would otherwise cover the notebook."""

import json
import re
from pathlib import Path

from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]


def course_config() -> Config:
    config = Config()
    exec((ROOT / "jupyter_lab_config.py").read_text(), {"get_config": lambda: config, "__file__": str(ROOT / "x")})
    return config


def test_the_readme_starts_jupyterlab_with_the_course_settings():
    first_screen = (ROOT / "README.md").read_text().split("## ")[0]
    assert re.search(r"\.venv/bin/jupyter lab --config=jupyter_lab_config\.py", first_screen)


def test_jupyterlab_serves_the_repository_and_opens_notebook_00():
    config = course_config()
    assert Path(config.ServerApp.root_dir) == ROOT
    opened = config.LabApp.default_url.removeprefix("/lab/tree/")
    assert opened == "notebooks/00_start_here.ipynb" and (ROOT / opened).exists()
    assert config.ServerApp.allow_root  # the README's command works in a container that runs as root


def test_the_news_pop_up_is_off():
    overrides = Path(course_config().LabApp.app_settings_dir) / "overrides.json"
    notification = json.loads(overrides.read_text())["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}
