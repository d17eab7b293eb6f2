"""The example notebooks: committed as examples/make_notebooks.py writes them (no outputs), and each runs
without an error in a kernel (nbclient, no browser; tests/browser/ runs them from JupyterLab's UI)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
FRONT_END = ROOT / "widgets" / "kernelcore_widgets" / "static" / "ProgramGraph.js"


def _maker():
    spec = importlib.util.spec_from_file_location("make_notebooks", EXAMPLES / "make_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MAKER = _maker()


@pytest.mark.parametrize("name", sorted(MAKER.NOTEBOOKS))
def test_committed_notebook_is_what_the_script_writes(name):
    on_disk = nbformat.read(EXAMPLES / name, as_version=4)
    assert on_disk == MAKER.build(name, MAKER.NOTEBOOKS[name]), "run: python examples/make_notebooks.py"
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in on_disk.cells if c.cell_type == "code")


def test_every_example_notebook_is_generated():
    assert sorted(p.name for p in EXAMPLES.glob("*.ipynb")) == sorted(MAKER.NOTEBOOKS)


@pytest.mark.parametrize("name", sorted(MAKER.NOTEBOOKS))
def test_notebook_runs_in_a_kernel(name):
    nbclient = pytest.importorskip("nbclient")
    if not FRONT_END.is_file():
        pytest.skip("front end not built: run ./dev build (the notebooks make widgets)")
    nb = nbformat.read(EXAMPLES / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(EXAMPLES)}})
    client.execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
