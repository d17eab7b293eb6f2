"""ResNet-18 as Paddle writes it, in a notebook's ProgramGraph: it opens with its first op in view (not an
empty canvas or one stray parameter), and "Fold all" folds its groups. Screenshots in Light and Dark."""
from __future__ import annotations

import subprocess

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lab_helpers import ROOT, THEMES, set_theme, shot

PADDLE = ROOT / ".venv-paddle" / "bin" / "python"

# the canvas and the first op's box on screen, and how many nodes are drawn
IN_VIEW_JS = r"""
(root) => {
  const canvas = root.querySelector('.jp-Kernelcore-graphCanvas').getBoundingClientRect();
  const inside = r => r.width > 0 && r.right > canvas.left && r.left < canvas.right && r.bottom > canvas.top && r.top < canvas.bottom;
  const nodes = [...root.querySelectorAll('svg.jp-Kernelcore-svg g.node')];
  const ops = nodes.filter(n => /jp-Kernelcore-op\b/.test(n.getAttribute('class') || ''));
  return { nodes: nodes.length, inView: nodes.filter(n => inside(n.getBoundingClientRect())).length,
           firstOpInView: ops.length > 0 && inside(ops[0].getBoundingClientRect()) };
}
"""


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    if not PADDLE.exists():
        pytest.skip("needs .venv-paddle to write ResNet-18")
    out = tmp_path_factory.mktemp("resnet")
    subprocess.run([str(PADDLE), str(ROOT / "tests" / "paddle_oracle" / "make_vision_models.py"), str(out), "resnet18"],
                   check=True, capture_output=True, timeout=300)
    return out / "resnet18.pdmodel"


def _open_notebook(page, lab, source: str, name: str):
    nb = new_notebook(cells=[new_code_cell(source)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.write(nb, lab.root / name)
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
        return !!k && k.status === 'idle' && w.content.widgets.length > 0; }""", timeout=90_000)
    page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 0;
                             return window.jupyterapp.commands.execute('notebook:run-cell'); }""")
    view = page.locator(".jp-Kernelcore-ProgramGraph").first
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=90_000)
    page.wait_for_timeout(500)
    return view


def test_resnet18_opens_at_its_first_op_and_folds(page, lab, resnet18):
    source = f"import kernelcore as kc\nfrom kernelcore_widgets import ProgramGraph\nProgramGraph(kc.load_program({str(resnet18)!r}))"
    view = _open_notebook(page, lab, source, "resnet18_graph.ipynb")
    opened = view.evaluate(IN_VIEW_JS)
    assert opened["firstOpInView"], opened
    assert opened["inView"] >= 5, opened  # a readable piece of the program, not one stray node
    for which in THEMES:
        set_theme(page, which)
        shot(view, f"resnet18_opened_{which}")
    old = view.locator("svg.jp-Kernelcore-svg").element_handle()
    view.get_by_role("button", name="Fold all").click()
    page.wait_for_function("(old) => { const s = document.querySelector('.jp-Kernelcore-ProgramGraph svg.jp-Kernelcore-svg');"
                           " return s && s !== old; }", arg=old, timeout=60_000)
    folded = view.evaluate(IN_VIEW_JS)
    assert folded["nodes"] < opened["nodes"] // 10, (opened, folded)  # 288 nodes -> its few groups
    assert folded["inView"] == folded["nodes"]
    shot(view, "resnet18_folded_dark")
    set_theme(page, "light")
