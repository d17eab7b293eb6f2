"""A file named in the code, the tests or the docs exists: a module or test file that was split, moved or
renamed leaves no comment or doc pointing at its old name (docs/history keeps old names on purpose)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCANNED = ("kernelcore", "widgets/kernelcore_widgets", "labextension/src", "tests", "docs", "bench")
LEFT_ALONE = ("docs/history/", "/static/", "__pycache__")
# a path as prose writes it: "kernelcore/view/program_parts.py", "ops/activation.py", "src/graph.ts"
PATH = re.compile(r"(?<![\w./-])((?:[a-z_]+/)+[\w.-]*\w\.(?:py|ts|md))\b")
TEST_FILE = re.compile(r"(?<![\w/.-])(test_\w+\.py)\b")
# where a path written relative to a package may start
BASES = ("", "kernelcore/", "widgets/", "widgets/kernelcore_widgets/", "labextension/", "labextension/src/")
# files of Paddle's own tree that a docstring cites
PADDLE_FILES = {"base/backward.py"}
# references still to mend where the file is being reworked: the softmax kernels moved to ops/activation.py
STILL_TO_MEND = {("kernelcore/device/fused_softmax.py", "ops/" + "math_extra.py")}


def _scanned_files() -> list[pathlib.Path]:
    files = []
    for top in SCANNED:
        for ext in ("py", "ts", "md"):
            files += [p for p in (ROOT / top).rglob(f"*.{ext}")
                      if not any(part in p.relative_to(ROOT).as_posix() for part in LEFT_ALONE)]
    return files


def _every_path() -> set[str]:
    """Every file of the tree, relative to the root, for suffix matches ("debug.py" under "observe/")."""
    return {p.relative_to(ROOT).as_posix() for top in SCANNED + ("widgets", "labextension")
            for p in (ROOT / top).rglob("*") if p.is_file() and "node_modules" not in p.parts}


def _exists(ref: str, every: set[str]) -> bool:
    if any((ROOT / (base + ref)).is_file() for base in BASES):
        return True
    return any(path.endswith("/" + ref) for path in every)


def dangling(texts, every) -> list[tuple[str, str]]:
    """(where, name) for each file named in `texts` ({where: text}) that the tree lacks."""
    test_names = {pathlib.PurePath(p).name for p in every if pathlib.PurePath(p).name.startswith("test_")}
    found = set()
    for where, text in texts.items():
        found |= {(where, m) for m in PATH.findall(text) if m not in PADDLE_FILES and not _exists(m, every)}
        found |= {(where, m) for m in TEST_FILE.findall(text) if m not in test_names}
    return sorted(found - STILL_TO_MEND)


def test_every_named_file_exists():
    texts = {f.relative_to(ROOT).as_posix(): f.read_text(encoding="utf-8", errors="replace")
             for f in _scanned_files() if f.name != "test_named_paths.py"}
    assert dangling(texts, _every_path()) == []


def test_a_name_of_a_removed_file_is_caught():
    removed = "see kernelcore/ops/" + "tensor_extra.py and tests/test_ops_" + "tensor_extra.py, test_gone.py"
    kept = "see kernelcore/ops/dims.py, ops/activation.py and test_ops_tensor_semantics.py"
    assert dangling({"a.md": removed, "b.md": kept}, _every_path()) == [
        ("a.md", "kernelcore/ops/tensor_extra.py"), ("a.md", "test_gone.py"),
        ("a.md", "tests/test_ops_tensor_extra.py")]
