"""No import cycle anywhere in helpers: every module can be the first one imported. One fresh
interpreter loads the third-party libraries once, then imports each module with no helpers module
loaded before it (a cycle shows up as an ImportError from a partially initialised module)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = """
import importlib, pkgutil, sys
import matplotlib, numpy, torch  # loaded once: only the order of the helpers modules matters here
import helpers
names = sorted(m.name for m in pkgutil.walk_packages(helpers.__path__, "helpers.") if not m.name.endswith("__main__"))
part, parts = int(sys.argv[1]), int(sys.argv[2])
names = names[part::parts]
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m == "helpers" or m.startswith("helpers.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception as error:
        failed.append(f"{name}: {type(error).__name__}: {error}")
print(len(names), "modules")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


PARTS = 2  # the modules split between two interpreters that run side by side (CI has two cores)


def test_every_helpers_module_imports_first():
    runs = [
        subprocess.Popen([sys.executable, "-c", SCRIPT, str(part), str(PARTS)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=ROOT)
        for part in range(PARTS)
    ]  # fmt: skip
    tried = 0
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, out + err
        tried += int(out.split()[0])
    assert tried >= 40  # every module was tried
