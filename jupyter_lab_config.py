# JupyterLab settings for the course: `jupyter lab --config=jupyter_lab_config.py` from the
# repository root serves the whole repository (so helpers/ opens from the file browser), starts
# on notebook 00, and does not fetch JupyterLab news (that pop-up would cover the notebook).
from pathlib import Path

ROOT = Path(__file__).resolve().parent

c = get_config()  # noqa: F821 (provided by Jupyter when it loads this file)
c.ServerApp.root_dir = str(ROOT)
c.LabApp.default_url = "/lab/tree/notebooks/00_start_here.ipynb"
c.ServerApp.allow_root = True  # containers and cloud machines often run as root; the server is local
c.LabApp.app_settings_dir = str(ROOT / ".jupyter" / "lab" / "settings")  # overrides.json lives here
