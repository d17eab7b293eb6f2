"""Breakpoints from any graph, and the tensor viewer from the sidebar, in a real JupyterLab:
- a ProgramGraph widget in a notebook cell: click an op, "Break here", continue in the sidebar, paused there;
- a program rendered as a cell output (the MIME renderer): click a variable, "Break on write", continue,
  paused right after the op that wrote it;
- the sidebar's Variables: "View" opens the tensor viewer in the main area; its value follows the session's
  cursor and it says when the variable does not exist there.
Screenshots in out/screenshots/."""
from __future__ import annotations


import numpy as np
import pytest

from lab_helpers import click_command, debugger_sidebar, shot, wait_at
from test_lab import code_cell, code_sources, exec_sources, run_notebook, wait_enabled

pytestmark = pytest.mark.browser

SESSION = """import kernelcore_widgets  # registers the kernelcore.debugger comm target
sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)"""


def _setup():
    return code_sources("rnn_step_debugging.ipynb")[0]


def test_break_here_from_a_program_graph_widget_in_a_cell(page, lab):
    setup = _setup()
    widget = "from kernelcore_widgets import ProgramGraph\nProgramGraph(prog)"
    # the widget first, then the session: the widget's actions turn on when a session starts
    run_notebook(page, lab, "graph_widget_break.ipynb", [setup, widget, SESSION])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    view = code_cell(page, 1).locator(".jp-Kernelcore-ProgramGraph").first
    view.scroll_into_view_if_needed()
    view.locator("svg g.node.jp-Kernelcore-op", has_text="elementwise_add").first.dispatch_event("click")
    brk = view.locator("button.jp-Kernelcore-breakHere")
    brk.wait_for()
    wait_enabled(page, ".jp-Kernelcore-ProgramGraph", "jp-Kernelcore-breakHere")
    note = view.locator(".jp-Kernelcore-debugNote")
    assert "live debug session" in note.text_content(), note.text_content()
    brk.click()
    view.locator(".jp-Kernelcore-debugNote", has_text="added breakpoint").wait_for()
    # the sidebar heard of it through the session (no request of its own)
    sb.locator(".jp-Kernelcore-bp", has_text="block 1 op #2").wait_for()
    shot(view, "graph_widget_break_here")
    click_command(sb, "cont")
    wait_at(sb, "op #2 elementwise_add t=0")
    assert "breakpoint" in sb.locator(".jp-Kernelcore-dbgReason").text_content()
    click_command(sb, "cont")
    wait_at(sb, "op #2 elementwise_add t=1")
    shot(sb, "graph_widget_break_here_sidebar")
    # Run to here from the widget: the sidebar follows the move
    view.locator("svg g.node.jp-Kernelcore-op", has_text="tanh").first.dispatch_event("click")
    view.locator("button.jp-Kernelcore-runToHere").click()
    wait_at(sb, "op #3 tanh t=1")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_no_session_disables_the_widget_actions_and_says_why(page, lab):
    setup = _setup()
    run_notebook(page, lab, "graph_widget_nosession.ipynb",
                 [setup, "from kernelcore_widgets import ProgramGraph\nProgramGraph(prog)"])
    view = code_cell(page, 1).locator(".jp-Kernelcore-ProgramGraph").first
    view.locator("svg g.node.jp-Kernelcore-op", has_text="tanh").first.dispatch_event("click")
    view.locator("button.jp-Kernelcore-breakHere").wait_for()
    assert view.locator("button.jp-Kernelcore-breakHere").is_disabled()
    assert view.locator("button.jp-Kernelcore-runToHere").is_disabled()
    assert "no live debug session" in view.locator(".jp-Kernelcore-debugNote").text_content()
    shot(view, "graph_widget_no_session")


def test_break_on_write_from_a_variable_of_a_rendered_program(page, lab):
    setup = _setup()
    ns = exec_sources([setup])
    h_new = ns["h_new"].name
    run_notebook(page, lab, "mime_break_on_write.ipynb", [setup, SESSION + "\nprog"])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    out = code_cell(page, 1).locator(".jp-Kernelcore-output .jp-Kernelcore-ProgramGraph").first
    out.scroll_into_view_if_needed()
    var = out.locator("svg g.node.jp-Kernelcore-var", has_text=h_new).first
    var.dispatch_event("click")
    b = out.locator("button.jp-Kernelcore-breakOnWrite")
    b.wait_for()
    wait_enabled(page, ".jp-Kernelcore-output", "jp-Kernelcore-breakOnWrite")
    b.click()
    out.locator(".jp-Kernelcore-debugNote", has_text="added breakpoint").wait_for()
    sb.locator(".jp-Kernelcore-bp", has_text=f"write to '{h_new}'").wait_for()
    # Watch...: a range watch from the same panel
    out.locator("button.jp-Kernelcore-watchVar").click()
    out.locator("select.jp-Kernelcore-watchFormCond").select_option("range")
    out.locator("input.jp-Kernelcore-watchFormLo").fill("-0.999")
    out.locator("input.jp-Kernelcore-watchFormHi").fill("0.999")
    out.locator("button.jp-Kernelcore-watchAdd").click()
    sb.locator(".jp-Kernelcore-bp", has_text="outside [-0.999, 0.999]").wait_for()
    shot(out, "mime_break_on_write")
    click_command(sb, "cont")
    wait_at(sb, "t=0")
    reason = sb.locator(".jp-Kernelcore-dbgReason").text_content()
    assert f"write to '{h_new}'" in reason and "written by op 'tanh' (block 1, op #3)" in reason, reason
    assert sb.locator(".jp-Kernelcore-frame").first.text_content() == "block 1 op #4 assign t=0"
    shot(sb, "mime_break_on_write_sidebar")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def _counts(h: np.ndarray) -> dict:
    return {"negative": int((h < 0).sum()), "zero": int((h == 0).sum()), "positive": int((h > 0).sum())}


def test_view_a_tensor_from_the_sidebar_follows_the_cursor(page, lab):
    setup = _setup()
    ns = exec_sources([setup])
    h_new = ns["h_new"].name
    x, w, u = ns["feed"]["x"], ns["scope"].get("w"), ns["scope"].get("u")
    hs, h = [], ns["feed"]["h0"]
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ w + h @ u)
        hs.append(h)
    run_notebook(page, lab, "sidebar_tensor.ipynb",
                 [setup, SESSION + f"\nsess.break_on(write={h_new!r})\nsess.cont(); None"])
    sb = debugger_sidebar(page)
    wait_at(sb, "op #4 assign t=0")
    row = sb.locator(f".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='{h_new}']").first
    row.locator("button.jp-Kernelcore-varView").click()
    panel = page.locator(".jp-Kernelcore-tensorPanel")
    panel.wait_for()
    page.wait_for_function("() => document.querySelector('.jp-Kernelcore-tensorPanel')?.dataset.exists === 'true'")

    def shown_counts():
        return {k: int(panel.locator(f".jp-Kernelcore-tvCount-{k}").text_content().split()[-1])
                for k in ("negative", "zero", "positive")}

    def cell00():
        canvas = panel.locator("canvas.jp-Kernelcore-tvCanvas")
        canvas.hover(position={"x": 2, "y": 2})
        return panel.locator(".jp-Kernelcore-tvCell").text_content()

    panel.locator(".jp-Kernelcore-tvCount-positive").wait_for()
    assert shown_counts() == _counts(hs[0])
    text = cell00()
    assert text.startswith("[0, 0] = ") and abs(float(text.split("= ")[1]) - hs[0][0, 0]) < 1e-3, (text, hs[0][0, 0])
    assert "t=0" in panel.locator(".jp-Kernelcore-tpWhere").text_content()
    shot(page, "tensor_panel_t0")
    # step on: the panel asks again and shows t=1's value
    click_command(sb, "cont")
    wait_at(sb, "op #4 assign t=1")
    page.wait_for_function("() => (document.querySelector('.jp-Kernelcore-tensorPanel .jp-Kernelcore-tpWhere')"
                           "?.textContent || '').includes('t=1')")
    text = cell00()
    assert abs(float(text.split("= ")[1]) - hs[1][0, 0]) < 1e-3, (text, hs[1][0, 0])
    assert shown_counts() == _counts(hs[1])
    # diff vs previous: t=1 minus t=0
    panel.locator("input.jp-Kernelcore-tvDiff").check()
    page.wait_for_function("() => (document.querySelector('.jp-Kernelcore-tensorPanel .jp-Kernelcore-status')"
                           "?.textContent || '').startsWith('value - previous')")
    text = cell00()
    assert abs(float(text.split("= ")[1]) - (hs[1][0, 0] - hs[0][0, 0])) < 1e-3, text
    panel.locator("input.jp-Kernelcore-tvDiff").uncheck()
    # send to notebook from the panel
    panel.locator("input.jp-Kernelcore-tvSendName").fill("h_seen")
    panel.locator("button.jp-Kernelcore-tvSendValue").click()
    panel.locator(".jp-Kernelcore-status", has_text="sent the value to the notebook as 'h_seen'").wait_for()
    shot(page, "tensor_panel_t1")
    # past the run's end the step scopes are gone: the panel says the variable does not exist there
    sb.locator(".jp-Kernelcore-bp", has_text="write to").locator("input[type=checkbox]").uncheck()
    page.wait_for_function("() => !document.querySelector('#jp-kernelcore-debugger .jp-Kernelcore-bp input').checked")
    click_command(sb, "cont")
    wait_at(sb, "end of the run")
    page.wait_for_function("() => document.querySelector('.jp-Kernelcore-tensorPanel')?.dataset.exists === 'false'")
    assert "does not exist at end of the run" in panel.locator(".jp-Kernelcore-status").text_content()
    shot(page, "tensor_panel_gone")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
