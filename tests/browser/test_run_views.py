"""In JupyterLab: the graph's what-ran overlay (ops a run never executed greyed) and the tensor viewer
(value classes, a heatmap with NaN marked, a slider that asks the kernel for another slice)."""
from __future__ import annotations

from lab_helpers import shot
from test_lab import code_cell, errors_of, open_notebook, run_all, widget_cells, write_notebook

SETUP = '''
import numpy as np
import kernelcore as kc
from kernelcore_widgets import ProgramGraph, TensorViewer

prog = kc.Program()
g = prog.global_block()
g.create_var("x0", [2, 3])
g.append_op("scale", {"X": ["x0"]}, {"Out": ["x"]}, {"scale": 1.0})
g.append_op("fill_constant", outputs={"Out": ["i"]}, attrs={"shape": [1], "dtype": 3, "value": 0.0})
g.append_op("fill_constant", outputs={"Out": ["n"]}, attrs={"shape": [1], "dtype": 3, "value": 0.0})
g.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["cond"]})
g.create_var("steps", type=kc.ir.program.VT.STEP_SCOPES)
body = prog.create_block(0)
body.append_op("tanh", {"X": ["x"]}, {"Out": ["x_new"]})
body.append_op("increment", {"X": ["i"]}, {"Out": ["i"]}, {"step": 1.0})
body.append_op("less_than", {"X": ["i"], "Y": ["n"]}, {"Out": ["c_new"]})
body.append_op("assign", {"X": ["x_new"]}, {"Out": ["x"]})
body.append_op("assign", {"X": ["c_new"]}, {"Out": ["cond"]})
prog.rollback()
g.append_op("while", {"X": ["x", "i", "n"], "Condition": ["cond"]}, {"Out": ["x", "i", "cond"], "StepScopes": ["steps"]},
            {"sub_block": body})
with kc.trace() as tr:  # n = 0: the loop's body never runs
    kc.Executor().run(prog, feed={"x0": np.ones((2, 3), np.float32)}, fetch_list=["x"], scope=kc.Scope())
graph = ProgramGraph(prog)
graph.show_run(tr)
graph
'''

VIEWER = '''
a = np.arange(2 * 5 * 6, dtype=np.float32).reshape(2, 5, 6) - 20
a[1, 2, 3] = np.nan
a[0, 0, 0] = np.inf
TensorViewer(a, name="a")
'''


def test_the_overlay_greys_a_loop_body_that_never_ran_and_the_viewer_slices_on_request(page, lab):
    name = write_notebook(lab, "run_views.ipynb", [SETUP, VIEWER])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    first, second = widget_cells(cells)[:2]
    view = code_cell(page, first).locator(".jp-Kernelcore-ProgramGraph").first
    view.scroll_into_view_if_needed()
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for()
    grey = view.locator("svg g.node.jp-Kernelcore-op.jp-Kernelcore-notRun")
    grey.first.wait_for()
    body_ops = {"tanh", "increment", "less_than", "assign"}
    greyed = {t.strip() for t in grey.locator("text").all_text_contents()}
    assert greyed and greyed <= body_ops | {"less_than"}, greyed
    ran = view.locator("svg g.node.jp-Kernelcore-op:not(.jp-Kernelcore-notRun)")
    assert {"scale", "while"} <= {t.strip() for t in ran.locator("text").all_text_contents()}
    assert float(grey.first.evaluate("el => getComputedStyle(el).opacity")) < 1.0
    shot(view, "what_ran_overlay")

    tv = code_cell(page, second).locator(".jp-Kernelcore-TensorViewer").first
    tv.scroll_into_view_if_needed()
    tv.locator(".jp-Kernelcore-tvCount").first.wait_for()
    counts = tv.locator(".jp-Kernelcore-tvCount").all_text_contents()
    assert "NaN 1" in counts and "+Inf 1" in counts and "zero 1" in counts, counts
    assert tv.locator("canvas.jp-Kernelcore-tvCanvas").evaluate("c => c.width > 0 && c.height > 0")
    slider = tv.locator("input.jp-Kernelcore-tvSlider").first
    slider.fill("1")  # axis 0 -> index 1: the kernel sends the other slice
    slider.dispatch_event("change")
    canvas = tv.locator("canvas.jp-Kernelcore-tvCanvas")

    def cell_text(i: int, j: int, rows: int = 5, cols: int = 6) -> str:
        # the cell's center on screen, from the canvas's drawn box (CSS may stretch it past its pixel size)
        box = canvas.bounding_box()
        canvas.hover(position={"x": (j + 0.5) * box["width"] / cols, "y": (i + 0.5) * box["height"] / rows})
        return tv.locator(".jp-Kernelcore-tvCell").text_content()

    page.wait_for_timeout(300)
    for _ in range(40):  # until the kernel's new slice has arrived: cell (2, 3) of a[1] is the NaN
        if cell_text(2, 3) == "[1, 2, 3] = NaN":
            break
        page.wait_for_timeout(250)
    assert cell_text(2, 3) == "[1, 2, 3] = NaN"
    shot(tv, "tensor_viewer")
    # stretched by CSS to three times its drawn size, the heat map still names the cell under the pointer
    canvas.evaluate("c => { c.style.width = (c.width * 3) + 'px'; c.style.height = (c.height * 3) + 'px'; }")
    assert cell_text(4, 5) == "[1, 4, 5] = 39"
    assert cell_text(0, 1) == "[1, 0, 1] = 11"
    assert cell_text(2, 3) == "[1, 2, 3] = NaN"
