"""In JupyterLab: a TensorViewer of a paused session's variable. Zero, a double-clicked cell and "Replace with"
a notebook variable each fork the run (sess.set_value) and the view shows the new value; the colour legend
gives the slice's min and max. Screenshots (light and dark) in out/screenshots/."""
from __future__ import annotations

from lab_helpers import debugger_sidebar, in_theme, shot, wait_at
from test_lab import code_cell, errors_of, open_notebook, run_all, widget_cells, write_notebook

SETUP = '''
import numpy as np
import kernelcore as kc
from kernelcore_widgets import TensorViewer

L = kc.layers
main, startup = kc.Program(), kc.Program()
with kc.program_guard(main, startup):
    x = L.data("x", [-1, 8])
    loss = L.mean(L.fc(x, 16, act="tanh"))
scope = kc.Scope()
kc.Executor().run(startup, scope=scope)
sess = kc.debug(main, feed={"x": np.ones((4, 8), np.float32)}, fetch_list=[loss], scope=scope)
w = main.global_block().ops[0].input("Y")[0]
halves = np.full((8, 16), 0.5, np.float32)
tv = TensorViewer.of(sess, w)
tv
'''


def _cell_center(canvas, i: int, j: int, rows: int = 8, cols: int = 16) -> dict:
    box = canvas.bounding_box()
    return {"x": (j + 0.5) * box["width"] / cols, "y": (i + 0.5) * box["height"] / rows}


def test_zero_edit_cell_and_replace_fork_the_run_and_show_the_new_value(page, lab):
    name = write_notebook(lab, "tensor_edit.ipynb", [SETUP])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    (k,) = widget_cells(cells)
    tv = code_cell(page, k).locator(".jp-Kernelcore-TensorViewer").first
    tv.scroll_into_view_if_needed()
    tv.locator(".jp-Kernelcore-tvLegend").wait_for()
    assert tv.locator(".jp-Kernelcore-tvPosition").text_content().startswith(" at block 0 op #0")
    lo, hi = (float(tv.locator(c).text_content()) for c in (".jp-Kernelcore-tvLegendMin", ".jp-Kernelcore-tvLegendMax"))
    assert lo < hi
    shot(tv, "tensor_edit_before_light")

    status = tv.locator(".jp-Kernelcore-status").last
    tv.locator("button.jp-Kernelcore-tvZero").click()
    tv.locator(".jp-Kernelcore-tvCount", has_text="zero 128").wait_for()
    assert "forked" in status.text_content() and "the trace records the edit" in status.text_content()

    canvas = tv.locator("canvas.jp-Kernelcore-tvCanvas")
    canvas.dblclick(position=_cell_center(canvas, 2, 5))
    box = tv.locator("input.jp-Kernelcore-tvCellValue")
    assert box.get_attribute("aria-label") == "new value of [2, 5]"
    box.fill("7.5")
    box.press("Enter")
    tv.locator(".jp-Kernelcore-tvCount", has_text="positive 1").wait_for()
    canvas.hover(position=_cell_center(canvas, 2, 5))
    assert float(tv.locator(".jp-Kernelcore-tvCell").text_content().split("= ")[1]) == 7.5
    assert float(tv.locator(".jp-Kernelcore-tvLegendMax").text_content()) == 7.5

    tv.locator("input.jp-Kernelcore-tvReplaceName").fill("nowhere")
    tv.locator("button.jp-Kernelcore-tvReplace").click()
    page.wait_for_function("el => el.textContent.includes('not defined')", arg=status.element_handle())
    tv.locator("input.jp-Kernelcore-tvReplaceName").fill("halves")
    tv.locator("button.jp-Kernelcore-tvReplace").click()
    tv.locator(".jp-Kernelcore-tvCount", has_text="positive 128").wait_for()
    assert float(tv.locator(".jp-Kernelcore-tvLegendMin").text_content()) == 0.5
    assert tv.locator(".jp-Kernelcore-tvCell").text_content() == ""  # no cell of the old value stays shown
    shot(tv, "tensor_edit_after_light")
    with in_theme(page, "dark"):
        shot(tv, "tensor_edit_after_dark")
    assert not page.problems, page.problems


PANEL_SESSION = '''
import kernelcore_widgets  # registers the kernelcore.debugger comm target
sess = kc.debug(main, feed={"x": np.ones((4, 8), np.float32)}, fetch_list=[loss], scope=scope)
None
'''


def test_the_sidebar_s_tensor_panel_zeroes_and_sets_a_cell_where_the_session_waits(page, lab):
    setup = SETUP.replace("tv = TensorViewer.of(sess, w)\ntv\n", "")
    name = write_notebook(lab, "tensor_panel_edit.ipynb", [setup, PANEL_SESSION])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 mul")
    row = sb.locator(".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='fc_0.w_0']").first
    row.locator("button.jp-Kernelcore-varView").click()
    panel = page.locator(".jp-Kernelcore-tensorPanel")
    page.wait_for_function("() => document.querySelector('.jp-Kernelcore-tensorPanel')?.dataset.exists === 'true'")
    panel.locator("button.jp-Kernelcore-tvZero").click()
    panel.locator(".jp-Kernelcore-tvCount", has_text="zero 128").wait_for()
    status = panel.locator(".jp-Kernelcore-status").last
    page.wait_for_function("el => el.textContent.includes(\"set 'fc_0.w_0' (zero)\")", arg=status.element_handle())
    assert "the run forked" in status.text_content()
    canvas = panel.locator("canvas.jp-Kernelcore-tvCanvas")
    canvas.dblclick(position=_cell_center(canvas, 1, 2))
    box = panel.locator("input.jp-Kernelcore-tvCellValue")
    box.fill("nan")
    box.press("Enter")
    panel.locator(".jp-Kernelcore-tvCount", has_text="NaN 1").wait_for()
    shot(page, "tensor_panel_edit_light")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
