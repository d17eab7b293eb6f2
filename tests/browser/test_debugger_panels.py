"""The debugger's panels as a person uses them in JupyterLab: a long Continue shows "running…", disables the
moves and offers Pause, which stops the run at the next op; values in the narrow sidebar wrap between tokens
and a past timestep's step scope shows its values; the timestep moves say "timestep" in full; the Debugger
widget's details sit below its graph; the LSTM stepper's names keep their underscores. Screenshots (light
and dark) in out/screenshots/."""
from __future__ import annotations

import pytest

from lab_helpers import debugger_sidebar, in_theme, shot, wait_at
from test_lab import code_cell, errors_of, open_notebook, run_all, run_notebook, write_notebook
from test_lab_rnn import SETUP as LSTM_SETUP

pytestmark = pytest.mark.browser

# a StaticRNN over many timesteps: a Continue runs for seconds
LONG_RNN = '''import numpy as np
import kernelcore as kc
import kernelcore_widgets  # registers the kernelcore.debugger comm target
T, B, D, H = 30000, 2, 3, 4
rng = np.random.default_rng(0)
prog = kc.Program()
with kc.program_guard(prog):
    g = prog.global_block()
    x = g.create_var("x", [T, B, D]); h0 = g.create_var("h0", [B, H])
    w = g.create_parameter("w", [D, H]); u = g.create_parameter("u", [H, H])
    rnn = kc.layers.StaticRNN()
    with rnn.step():
        x_t = rnn.step_input(x); h_prev = rnn.memory(init=h0)
        h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.matmul_v2(x_t, w), kc.op.matmul_v2(h_prev, u)))
        rnn.update_memory(h_prev, h_new); rnn.step_output(h_new)
    out = rnn(); last = kc.op.reduce_sum(out, dim=[0])
scope = kc.Scope()
scope.set("w", rng.standard_normal((D, H)).astype(np.float32) * 0.5)
scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.5)
feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32), "h0": np.zeros((B, H), np.float32)}
sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)'''


def _cut(locator) -> list[str]:
    """The texts of the elements whose content is wider or taller than their box (clipped)."""
    return locator.evaluate_all(
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1 || e.scrollHeight > e.clientHeight + 1)"
        ".map(e => e.textContent)")


def test_a_long_continue_is_busy_and_pause_stops_it(page, lab):
    run_notebook(page, lab, "debugger_pause.ipynb", [LONG_RNN])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    # the timestep moves say what they do, uncut
    labels = sb.locator(".jp-Kernelcore-dbgControls button.jp-Kernelcore-cmd-step_timestep, "
                        ".jp-Kernelcore-dbgControls button.jp-Kernelcore-cmd-back_timestep")
    assert labels.all_text_contents() == ["Step timestep", "Back timestep"]
    assert not _cut(labels)
    assert not sb.locator("button.jp-Kernelcore-cmd-pause").is_visible()

    sb.locator("button.jp-Kernelcore-cmd-cont").click()
    page.wait_for_selector("#jp-kernelcore-debugger.jp-Kernelcore-isBusy", timeout=10_000)
    assert sb.locator(".jp-Kernelcore-busy").is_visible()
    assert sb.locator("button.jp-Kernelcore-cmd-step").is_disabled()
    assert sb.locator("button.jp-Kernelcore-cmd-cont").is_disabled()
    shot(sb, "sidebar_running")
    sb.locator("button.jp-Kernelcore-cmd-pause").click()
    sb.locator(".jp-Kernelcore-dbgReason", has_text="paused").wait_for(timeout=60_000)
    page.wait_for_selector("#jp-kernelcore-debugger:not(.jp-Kernelcore-isBusy)", timeout=10_000)
    position = sb.locator(".jp-Kernelcore-dbgPosition").text_content()
    assert "recurrent > block 1" in position, position  # stopped inside the loop, far from the end
    assert not sb.locator("button.jp-Kernelcore-cmd-step").is_disabled()
    assert sb.locator(".jp-Kernelcore-reply").text_content() == ""  # neither request failed
    shot(sb, "sidebar_paused")

    # into the past: the previous timestep's step scope (not visible from the cursor) shows its values
    sb.locator("button.jp-Kernelcore-cmd-step_timestep").click()
    page.wait_for_selector("#jp-kernelcore-debugger:not(.jp-Kernelcore-isBusy)")
    sb.locator("button.jp-Kernelcore-cmd-back").click()
    sb.locator(".jp-Kernelcore-dbgPosition", has_text="(past").wait_for()
    hidden = sb.locator(".jp-Kernelcore-scopeVars", has_text="not visible from here").last
    hidden.locator("summary").click()
    values = hidden.locator(".jp-Kernelcore-varValue").all_text_contents()
    assert values and all(v.startswith("float32[") for v in values), values
    tokens = sb.locator(".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-valueToken")
    heights = tokens.evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    assert heights and max(heights) < 1.5 * min(heights), heights  # each token one line: none breaks inside
    shot(sb, "sidebar_past_step_scope")
    with in_theme(page, "dark"):
        shot(sb, "sidebar_past_step_scope_dark")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_the_lstm_debugger_keeps_its_graph_wide_and_its_names_whole(page, lab):
    name = write_notebook(lab, "debugger_lstm_panels.ipynb", [
        LSTM_SETUP, "from kernelcore_widgets import Debugger\nsess = kc.debug(prog, feed=feed, fetch_list=['out'], "
                    "scope=kc.Scope())\ndbg = Debugger(sess)\ndbg", "for _ in range(3):\n    dbg.step_timestep()"])
    open_notebook(page, lab, name)
    assert not errors_of(run_all(page))
    view = code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first
    view.scroll_into_view_if_needed()
    stepper = view.locator(".jp-Kernelcore-dbgRNN")
    stepper.locator(".jp-Kernelcore-stepBox.jp-Kernelcore-current", has_text="t=2").wait_for(timeout=30_000)
    status = stepper.locator(".jp-Kernelcore-status").first.text_content()
    assert status.count("layer 0") == 1, status  # the position names the pass; the status does not repeat it
    # a label that hides its overflow needs a line box taller than the font, or "h_prev" loses its "_"
    names = stepper.locator(".jp-Kernelcore-flowNames, .jp-Kernelcore-varName")
    assert names.count() > 0
    short = names.evaluate_all("els => els.filter(e => e.textContent && getComputedStyle(e).overflow !== 'visible' && "
                               "e.clientHeight < 1.2 * parseFloat(getComputedStyle(e).fontSize)).map(e => e.textContent)")
    assert not short, short

    # the details of a selected node sit below the graph in the Debugger's column: the graph keeps its width
    view.locator("svg.jp-Kernelcore-svg g.node.jp-Kernelcore-op").first.click()
    view.locator(".jp-Kernelcore-details .jp-Kernelcore-debugActionBar").wait_for()
    share = view.locator(".jp-Kernelcore-graphBody").evaluate(
        "b => b.querySelector('.jp-Kernelcore-graphPanes').getBoundingClientRect().width / "
        "b.getBoundingClientRect().width")
    assert share >= 0.6, share
    shot(view, "debugger_lstm_light")
    shot(stepper, "lstm_stepper_light")
    with in_theme(page, "dark"):
        shot(view, "debugger_lstm_dark")
        shot(stepper, "lstm_stepper_dark")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_the_debugger_widget_is_busy_during_a_long_continue_and_its_pause_stops_it(page, lab):
    run_notebook(page, lab, "debugger_widget_pause.ipynb", [
        LONG_RNN.replace("import kernelcore_widgets  # registers the kernelcore.debugger comm target\n", ""),
        "from kernelcore_widgets import Debugger\ndbg = Debugger(sess)\ndbg"])
    view = code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first
    view.scroll_into_view_if_needed()
    controls = view.locator(".jp-Kernelcore-debugControls")
    assert not controls.locator("button.jp-Kernelcore-action-pause").is_visible()
    controls.locator("button.jp-Kernelcore-action-cont").click()
    controls.locator(".jp-Kernelcore-status", has_text="running").wait_for(timeout=10_000)
    assert controls.locator("button.jp-Kernelcore-action-step").is_disabled()
    shot(controls, "debugger_widget_running")
    controls.locator("button.jp-Kernelcore-action-pause").click()
    controls.locator(".jp-Kernelcore-status", has_text="paused").wait_for(timeout=60_000)
    position = controls.locator(".jp-Kernelcore-position").text_content()
    assert "recurrent > block 1" in position, position  # stopped inside the loop, far from the end
    assert not controls.locator("button.jp-Kernelcore-action-step").is_disabled()
    assert not controls.locator("button.jp-Kernelcore-action-pause").is_visible()
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
