"""No import cycle anywhere in helpers, so every module can be the first one imported.

The helpers modules' top-level imports of each other form a graph, read from the source with
`ast` (imports inside functions run later and cannot make an import-time cycle); it must have no
cycle. Then one fresh interpreter imports every module, so that each one does import."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "helpers"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_helpers(path: Path, known: set[str]) -> set[str]:
    """The helpers modules `path` imports at its top level: `from x import y` counts x.y when that
    is a submodule (Python imports it on its own), and x when y is a name defined in x."""
    found = set()
    for node in ast.parse(path.read_text()).body:  # top level only
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & known
            found |= submodules
            if len(submodules) < len(node.names):  # a name from the module itself, not a submodule of it
                found.add(node.module)
    return {name for name in found if name in known}


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    # A package's own __init__ importing its submodules is the usual pattern, not a cycle: Python
    # registers the package before running it. A submodule that imports names from its package
    # (`from helpers.bench import x` inside helpers/bench/decode.py) is an edge like any other.
    return {name: imported_helpers(path, known) - {name} for name, path in paths.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []  # state: 1 while on the stack, 2 when done

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_helpers_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) >= 40 and sum(map(len, graph.values())) >= 60  # the graph was read
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


SCRIPT = """
import importlib, pkgutil
import helpers
names = sorted(m.name for m in pkgutil.walk_packages(helpers.__path__, "helpers.") if not m.name.endswith("__main__"))
for name in names:
    importlib.import_module(name)
print(len(names))
"""


def test_every_helpers_module_imports():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(done.stdout.split()[-1]) >= 40
