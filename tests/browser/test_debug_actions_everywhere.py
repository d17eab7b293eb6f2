"""Breakpoints from the graphs test_debugger_from_graph.py does not cover, in a real JupyterLab:
- the composite Debugger widget's own graph: click an op, "Break here" (on the Debugger's session), the widget's
  Breakpoints list and the sidebar's both show it, the widget's Continue pauses there;
- a `.pdmodel` opened from the file browser, bound to a live session started in a notebook: "Break on write"
  on a variable, continue from the sidebar, paused right after its writer;
- a ProgramGraph widget over a program other than the live session's: the buttons are off and say why (a
  clone's are on); a program file whose op types the session's program lacks: off too.
Screenshots in out/screenshots/."""
from __future__ import annotations

import re

import pytest

from lab_helpers import click_command, debugger_sidebar, shot, wait_at
from test_lab import code_cell, code_sources, run_notebook, wait_enabled

pytestmark = pytest.mark.browser

SESSION = """import kernelcore_widgets  # registers the kernelcore.debugger comm target
sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)"""


def test_break_here_in_the_debugger_widgets_graph(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    run_notebook(page, lab, "debugger_widget_break.ipynb",
                 [setup, SESSION + "\nfrom kernelcore_widgets import Debugger\nDebugger(sess)"])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    view = code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first
    view.scroll_into_view_if_needed()
    assert "none" in view.locator(".jp-Kernelcore-dbgBreakpoints").text_content()
    view.locator("svg g.node.jp-Kernelcore-op", has_text="elementwise_add").first.dispatch_event("click")
    brk = view.locator("button.jp-Kernelcore-breakHere")
    brk.wait_for()
    wait_enabled(page, ".jp-Kernelcore-Debugger", "jp-Kernelcore-breakHere")
    assert "this debugger's session" in view.locator(".jp-Kernelcore-debugNote").text_content()
    brk.click()
    view.locator(".jp-Kernelcore-debugNote", has_text="added breakpoint #1 block 1 op #2").wait_for()
    view.locator(".jp-Kernelcore-dbgBreakpoint", has_text="#1 block 1 op #2").wait_for()  # the widget's list
    sb.locator(".jp-Kernelcore-bp", has_text="block 1 op #2").wait_for()  # the sidebar's list
    view.locator("button.jp-Kernelcore-action-cont").click()
    position = view.locator(".jp-Kernelcore-position")
    view.locator(".jp-Kernelcore-position", has_text="op #2 elementwise_add t=0").wait_for()
    # traits arrive one by one: wait for the reason too
    reason = view.locator(".jp-Kernelcore-debugControls .jp-Kernelcore-status")
    reason.filter(has_text="breakpoint #1 block 1 op #2").wait_for()
    wait_at(sb, "op #2 elementwise_add t=0")  # the sidebar follows the widget's move
    view.locator("svg g.node.jp-Kernelcore-current", has_text="elementwise_add").first.wait_for()
    shot(view, "debugger_widget_break_here")
    view.locator("button.jp-Kernelcore-action-cont").click()
    view.locator(".jp-Kernelcore-position", has_text="op #2 elementwise_add t=1").wait_for()
    assert position.text_content().endswith("t=1")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


FILE_SESSION = """import numpy as np
import kernelcore as kc
import kernelcore_widgets  # registers the kernelcore.debugger comm target
prog, scope, feeds, fetches = kc.load_inference_model("programs/mlp")
sess = kc.debug(prog, feed={"x": np.random.default_rng(0).random((8, 13), dtype=np.float32)},
                fetch_list=fetches, scope=scope)
sess.position"""


def test_break_on_write_in_a_pdmodel_opened_from_the_file_browser(page, lab):
    run_notebook(page, lab, "file_viewer_break.ipynb", [FILE_SESSION])
    # open the program file from the file browser (the notebook's kernel stays the one the plugin talks to)
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^programs$")).dblclick()
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^mlp\.pdmodel$")).dblclick()
    view = page.locator(".jp-Kernelcore-fileView")
    view.locator("svg g.node").first.wait_for(timeout=60_000)
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 feed")
    view.locator("svg g.node.jp-Kernelcore-var", has_text="fc_1.tmp_2").first.dispatch_event("click")
    b = view.locator("button.jp-Kernelcore-breakOnWrite")
    b.wait_for()
    wait_enabled(page, ".jp-Kernelcore-fileView", "jp-Kernelcore-breakOnWrite")
    assert "live debug session" in view.locator(".jp-Kernelcore-debugNote").text_content()
    b.click()
    view.locator(".jp-Kernelcore-debugNote", has_text="added breakpoint").wait_for()
    sb.locator(".jp-Kernelcore-bp", has_text="write to 'fc_1.tmp_2'").wait_for()
    shot(page, "file_viewer_break_on_write")
    click_command(sb, "cont")
    wait_at(sb, "block 0 op #7 mul")
    reason = sb.locator(".jp-Kernelcore-dbgReason").text_content()
    assert "write to 'fc_1.tmp_2'" in reason and "written by op 'tanh' (block 0, op #6)" in reason, reason
    shot(page, "file_viewer_break_on_write_sidebar")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_a_graph_of_another_program_says_so_and_a_clone_is_accepted(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    other = ("other = prog.clone()\nother.desc.blocks[1].ops[3].type = 'sigmoid'  # another op at block 1 op #3\n"
             "from kernelcore_widgets import ProgramGraph\nProgramGraph(other)")
    same = "ProgramGraph(prog.clone())"
    run_notebook(page, lab, "graph_other_program.ipynb", [setup, SESSION, other, same])
    refused = code_cell(page, 2).locator(".jp-Kernelcore-ProgramGraph").first
    refused.scroll_into_view_if_needed()
    refused.locator("svg g.node.jp-Kernelcore-op", has_text="sigmoid").first.dispatch_event("click")
    refused.locator("button.jp-Kernelcore-breakHere").wait_for()
    assert refused.locator("button.jp-Kernelcore-breakHere").is_disabled()
    assert refused.locator("button.jp-Kernelcore-runToHere").is_disabled()
    note = refused.locator(".jp-Kernelcore-debugNote").text_content()
    assert "runs another program than this graph shows (block 1 op #3 is 'tanh' there, 'sigmoid' here)" in note, note
    shot(refused, "graph_of_another_program")
    accepted = code_cell(page, 3).locator(".jp-Kernelcore-ProgramGraph").first
    accepted.scroll_into_view_if_needed()
    accepted.locator("svg g.node.jp-Kernelcore-op", has_text="tanh").first.dispatch_event("click")
    accepted.locator("button.jp-Kernelcore-breakHere").wait_for()
    assert not accepted.locator("button.jp-Kernelcore-breakHere").is_disabled()
    assert "same ops" in accepted.locator(".jp-Kernelcore-debugNote").text_content()
    # a file whose program has op types the session's lacks (the MLP's feed, mul, relu...): refused too
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^programs$")).dblclick()
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^mlp\.pdmodel$")).dblclick()
    view = page.locator(".jp-Kernelcore-fileView")
    view.locator("svg g.node").first.wait_for(timeout=60_000)
    view.locator("svg g.node.jp-Kernelcore-op", has_text="relu").first.dispatch_event("click")
    view.locator("button.jp-Kernelcore-breakHere").wait_for()
    note = view.locator(".jp-Kernelcore-debugNote")
    note.filter(has_text="another program").wait_for()
    assert view.locator("button.jp-Kernelcore-breakHere").is_disabled()
    assert note.text_content() == ("the live debug session runs another program than this graph shows "
                                   "(it has no 'feed' op)"), note.text_content()
    shot(page, "file_of_another_program")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
