"""Rules the engine's source keeps, read with `ast` (nothing is imported): modules stay small or say why they
are not, a module reads no other module's private attributes, and Paddle's op-role bits are spelt in one place.
tests/test_layering.py holds the package floors and the private names imported across packages."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ENGINE = Path(__file__).resolve().parents[1] / "kernelcore"
MAX_LINES = 600
# a module past MAX_LINES says why at its top: its docstring holds a paragraph that starts so
REASON_MARK = "Why one file:"
# or it is a generated table (data, not code to split by job), which says so at its top
GENERATED_MARK = "Do not edit by hand"

# modules past MAX_LINES without the mark, each with why it is tolerated; an entry that no longer applies fails
# the test below, so the list only shrinks
LONG_FOR_NOW: dict[str, str] = {}

# (reading module, private attribute) pairs tolerated, each with why; a stale entry fails as above
PRIVATE_READS_FOR_NOW: dict[tuple[str, str], str] = {}


def engine_modules() -> dict[str, Path]:
    return {".".join(p.relative_to(ENGINE).with_suffix("").parts): p
            for p in sorted(ENGINE.rglob("*.py")) if not p.name.endswith("_pb2.py")}


MODULES = engine_modules()
TREES = {m: ast.parse(p.read_text()) for m, p in MODULES.items()}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def private_attributes_defined(tree: ast.Module) -> set[str]:
    """The private names a module defines for itself: its top-level functions and names, its classes' methods
    and class-level names, `self._x = ...`."""
    out = set()
    for item in tree.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _private(item.name):
            out.add(item.name)
        targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
        out.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(item.name):
                    out.add(item.name)
                targets = item.targets if isinstance(item, ast.Assign) else [getattr(item, "target", None)]
                out.update(t.id for t in targets if isinstance(t, ast.Name) and _private(t.id))
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _private(node.attr)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            out.add(node.attr)
    return out


def private_reads_of_others(modules: dict[str, ast.Module]) -> list[tuple[str, int, str, list[str]]]:
    """(module, line, attribute, its owners) for each `x._attr` where `_attr` is private to other modules only
    (`display._read_op` as much as `scope._vars`)."""
    defined = {m: private_attributes_defined(t) for m, t in modules.items()}
    owners = defaultdict(set)
    for m, names in defined.items():
        for n in names:
            owners[n].add(m)
    found = []
    for m, tree in modules.items():
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)) or node.attr in defined[m]:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if owners.get(node.attr):
                found.append((m, node.lineno, node.attr, sorted(owners[node.attr])))
    return found


def test_a_module_past_the_size_says_why_at_its_top():
    long = []
    for module, path in MODULES.items():
        lines = path.read_text().count("\n")
        if lines <= MAX_LINES or module in LONG_FOR_NOW:
            continue
        top = ast.get_docstring(TREES[module]) or ""
        if REASON_MARK not in top and GENERATED_MARK not in top:
            long.append(f"{module}: {lines} lines")
    assert not long, f"split these by job, or say why at the top ({REASON_MARK!r}): {long}"


def test_no_module_reads_another_modules_private_names():
    crossing = [f"{m}:{line} reads {attr} (private to {', '.join(owners)})"
                for m, line, attr, owners in private_reads_of_others(TREES)
                if (m, attr) not in PRIVATE_READS_FOR_NOW]
    assert not crossing, crossing


def test_the_private_read_check_sees_a_crossing():
    """The check itself: one module reading a private attribute another module's class sets is found; a class
    reading its own is not."""
    owner = ast.parse("class Scope:\n    def __init__(self):\n        self._vars = {}\n"
                      "    def names(self):\n        return list(self._vars)\n")
    reader = ast.parse("def local(scope, n):\n    return scope._vars.get(n)\n")
    found = private_reads_of_others({"runtime.scope": owner, "runtime.user": reader})
    assert [(m, attr) for m, _, attr, _ in found] == [("runtime.user", "_vars")]


def test_no_tolerated_exception_has_gone_stale():
    """An exception listed above that no longer applies is removed, so the lists cannot hide a new case."""
    long = {m for m, p in MODULES.items() if p.read_text().count("\n") > MAX_LINES}
    reads = {(m, attr) for m, _, attr, _ in private_reads_of_others(TREES)}
    stale = [m for m in LONG_FOR_NOW if m not in long] + [r for r in PRIVATE_READS_FOR_NOW if r not in reads]
    assert not stale, f"remove these from the lists: {stale}"


def _int_constants(value) -> bool:
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    return all(isinstance(v, ast.Constant) and type(v.value) is int for v in items)


def test_op_roles_are_spelt_in_one_module():
    """Paddle's OpRole bits are named once (ir/op_roles.py); elsewhere they are read from there: no other module
    binds a *ROLE* name to an int at its top."""
    spelt = []
    for module, tree in TREES.items():
        if module == "ir.op_roles":
            continue
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and _int_constants(node.value)):
                continue
            names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            spelt += [f"{module}:{node.lineno} {n}" for n in names if "ROLE" in n.upper()]
    assert not spelt, spelt


def test_test_modules_have_names_of_their_own():
    """pytest imports test files by their base name (the folders hold no __init__.py), so a name used in two
    folders stops the whole run at collection; a file run alone does not show it."""
    tests = Path(__file__).resolve().parent
    seen: dict[str, list[str]] = {}
    for path in tests.rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(tests)))
    assert not {n: ps for n, ps in seen.items() if len(ps) > 1}
