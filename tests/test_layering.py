"""The engine's packages are floors: each imports only what stands at or below its own floor (imports inside
functions count too), the engine imports nothing of Jupyter or the widgets, and no private name crosses a
package boundary. Read from the source with `ast`; nothing is imported."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "kernelcore"

# floor of each part of kernelcore (a package, or a top-level module); higher imports lower, never the reverse
FLOORS = {
    "errors": 0, "text_safety": 0, "testing": 0,
    "ir": 1,
    "runtime": 2,
    "ops": 3,
    "observe": 4, "transforms": 4, "grad": 4,   # grad fills the rule table that transforms.backward owns
    "native": 4,  # its fast variants wrap the reference kernels of ops and grad (runtime/fast_paths.py)
    "device": 4,  # the fused GPU variants, beside native's C ones
    "formats": 5,
    "api": 6,
    "view": 7,
    "cli": 8, "runtime_env": 8, "__init__": 8,  # runtime_env reports the version and the native library
}

FRONT_END = ("IPython", "ipywidgets", "anywidget", "jupyter_server", "jupyter_client", "ipykernel", "tornado",
             "kernelcore_widgets", "traitlets", "comm")

# where the engine may import the front end (view/notebook.py reaches a running shell without importing IPython)
FRONT_END_ALLOWED: set[tuple[str, str, str | None]] = set()

# private names imported across packages, each with why it stays (none today: a helper a gradient rule shares with
# its forward kernel is public in the ops module)
PRIVATE_ALLOWED: dict[tuple[str, str, str], str] = {}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ENGINE.rglob("*.py")):
        if path.name.endswith("_pb2.py"):
            continue
        rel = path.relative_to(ENGINE).with_suffix("")
        out[".".join(rel.parts)] = path
    return out


def part_of(module: str) -> str:
    """The floor table's key for a module path under kernelcore ('ir.program' -> 'ir', '__init__' -> '__init__')."""
    return module.split(".")[0]


def imports(module: str, path: Path):
    """(target module under kernelcore or an outside top-level name, imported name or None, enclosing function,
    line) for every import of the file, nested ones included."""
    tree = ast.parse(path.read_text())
    package = module.split(".")[:-1]  # the package a relative import starts from (for ir.__init__ too)
    found = []

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Import):
                for a in child.names:
                    found.append((_internal(a.name), None, func, child.lineno))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - (child.level - 1)] + ([child.module] if child.module else [])
                    target = ".".join(base)
                else:
                    target = _internal(child.module or "")
                for a in child.names:
                    found.append((target, a.name, func, child.lineno))
            visit(child, inner)

    visit(tree, None)
    return found


def _internal(name: str) -> str:
    """'kernelcore.ir.program' -> 'ir.program'; an outside module keeps its name with a '!' in front."""
    if name == "kernelcore":
        return "__init__"
    if name.startswith("kernelcore."):
        return name[len("kernelcore."):]
    return "!" + name


def target_part(target: str, name: str | None) -> str:
    if target in ("", "__init__"):  # from kernelcore import x / from . import x at the top
        return name if name in FLOORS else "__init__"
    return part_of(target)


MODULES = modules()


def test_every_part_has_a_floor():
    assert {part_of(m) for m in MODULES} <= set(FLOORS), "give the new package a floor in FLOORS"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_run_downward(module):
    own = part_of(module)
    upward = []
    for target, name, _, line in imports(module, MODULES[module]):
        if target.startswith("!"):
            continue
        part = target_part(target, name)
        if part != own and FLOORS[part] > FLOORS[own]:
            upward.append(f"line {line}: {target or '.'} {name or ''} ({part}, floor {FLOORS[part]})")
    assert not upward, f"{module} (floor {FLOORS[own]}) imports upward: {upward}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_the_engine_imports_no_front_end(module):
    bad = []
    for target, _, func, line in imports(module, MODULES[module]):
        top = target[1:].split(".")[0] if target.startswith("!") else None
        if top in FRONT_END and (module, top, func) not in FRONT_END_ALLOWED:
            bad.append(f"line {line}: {target[1:]} (in {func or 'the module'})")
    assert not bad, f"{module} imports the front end: {bad}"


def test_no_private_name_crosses_a_package():
    crossing = []
    for module, path in MODULES.items():
        for target, name, _, line in imports(module, path):
            if target.startswith("!") or not name or not name.startswith("_") or name.startswith("__"):
                continue
            if target_part(target, name) != part_of(module) and (module, target, name) not in PRIVATE_ALLOWED:
                crossing.append(f"{module}:{line} imports {name} from {target}")
    assert not crossing, crossing


# the reference kernels choose no fast path themselves: the C kernels and the work in parts are variants apart
# (kernelcore/native), which the executor chooses when it prepares an op (kernelcore/runtime/fast_paths.py)
FAST_PATH_MODULES = ("native", "runtime.cpu_parts")


def fast_path_imports(module: str, path: Path) -> list[str]:
    """The imports of kernelcore/native or runtime/cpu_parts.py in a module, as 'line N: target name'."""
    found = []
    for target, name, _, line in imports(module, path):
        whole = f"{target}.{name}" if target and name else target or name or ""
        if any(whole == m or whole.startswith(m + ".") or target == m or target.startswith(m + ".")
               for m in FAST_PATH_MODULES):
            found.append(f"line {line}: {target} {name or ''}".rstrip())
    return found


@pytest.mark.parametrize("module", sorted(m for m in MODULES if part_of(m) in ("ops", "grad")))
def test_reference_kernels_import_no_fast_path(module):
    found = fast_path_imports(module, MODULES[module])
    assert not found, f"{module} imports a fast path: {found}"


def test_the_fast_path_check_sees_an_import(tmp_path):
    """Each way of writing the import is caught: the package, a module of it, a name from it."""
    for text in ("from .. import native", "from ..native import conv", "from ..runtime import cpu_parts",
                 "from ..runtime.cpu_parts import chunks", "import kernelcore.native"):
        path = tmp_path / "m.py"
        path.write_text(text + "\n")
        assert fast_path_imports("ops.m", path), text
    (tmp_path / "m.py").write_text("from ..runtime import fast_paths\nfrom ..runtime.scope import Scope\n")
    assert not fast_path_imports("ops.m", tmp_path / "m.py")


def test_the_table_sees_what_it_checks():
    """The walk reads nested imports and resolves relative ones: a known import of each kind is found."""
    found = imports("ir.program", MODULES["ir.program"])
    assert any(f[:3] == ("errors", "ProgramError", None) for f in found), "relative imports resolve"
    assert any(f[2] is not None for f in found), "imports inside functions are read"
    assert target_part("", "ops") == "ops" and target_part("runtime.scope", "Scope") == "runtime"
