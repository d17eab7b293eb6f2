"""The debugger sidebar against a live session in a real JupyterLab: no widget displayed, only
`kc.debug(...)` in a cell. Continue to a breakpoint, read a variable, step back, reverse-continue to a
watchpoint hit, follow a provenance chain across two RNN timesteps. Screenshots in out/screenshots/."""
from __future__ import annotations

import numpy as np
import pytest

from lab_helpers import click_command, debugger_sidebar, shot, wait_at
from test_lab import code_sources, exec_sources, run_notebook

pytestmark = pytest.mark.browser

SESSION = """import kernelcore_widgets  # registers the kernelcore.debugger comm target
sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
bp = sess.break_on("tanh")
wp = sess.watch(h_new.name, "overflow", bound=0.0)  # every write of h_new: a hit per timestep
prog"""


def test_sidebar_drives_a_live_session(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    ns = exec_sources([setup])
    run_notebook(page, lab, "sidebar_session.ipynb", [setup, SESSION])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    shot(sb, "sidebar_start")

    # continue to the breakpoint; read x_t in Variables
    click_command(sb, "cont")
    wait_at(sb, "op #3 tanh t=0")
    assert "breakpoint" in sb.locator(".jp-Kernelcore-dbgReason").text_content()
    assert sb.locator(".jp-Kernelcore-frame").first.text_content() == "block 1 op #3 tanh t=0"
    x_row = sb.locator(".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='x']").first
    x0 = ns["feed"]["x"][0]
    text = x_row.locator(".jp-Kernelcore-varValue").text_content()
    assert text.startswith(f"float32[{x0.shape[0]}, {x0.shape[1]}]"), text
    shot(sb, "sidebar_breakpoint_t0")

    # one op back: the past, rebuilt; forward again replays the record
    click_command(sb, "back")
    wait_at(sb, "op #2 elementwise_add t=0")
    assert "(past" in sb.locator(".jp-Kernelcore-dbgPosition").text_content()
    shot(sb, "sidebar_back")
    click_command(sb, "cont")
    wait_at(sb, "op #3 tanh t=0")
    click_command(sb, "cont")  # the watch: right after tanh wrote h_new at t=0
    wait_at(sb, "op #4 assign t=0")
    click_command(sb, "cont")
    wait_at(sb, "op #3 tanh t=1")
    click_command(sb, "cont")
    wait_at(sb, "op #4 assign t=1")
    assert "watch" in sb.locator(".jp-Kernelcore-dbgReason").text_content()

    # disable the breakpoint; reverse-continue lands on the previous watch hit (t=0)
    bp_row = sb.locator(".jp-Kernelcore-bp", has_text="op type 'tanh'")
    bp_row.locator("input[type=checkbox]").uncheck()
    page.wait_for_function("() => !document.querySelector('#jp-kernelcore-debugger .jp-Kernelcore-bp input').checked")
    click_command(sb, "reverse_cont")
    wait_at(sb, "op #4 assign t=0")
    status = sb.locator(".jp-Kernelcore-dbgReason").text_content()
    assert "reverse" in status and "watch" in status and "timestep 0" in status
    shot(sb, "sidebar_reverse_to_watch")

    # the watch off too; to the start of t=2, then where did h_prev come from? across t=1 and t=0
    sb.locator(".jp-Kernelcore-bp", has_text="watch").locator("input[type=checkbox]").uncheck()
    page.wait_for_function("() => Array.from(document.querySelectorAll("
                           "'#jp-kernelcore-debugger .jp-Kernelcore-bp input')).every(b => !b.checked)")
    click_command(sb, "step_timestep")
    wait_at(sb, "t=1")
    click_command(sb, "step_timestep")
    wait_at(sb, "op #0 matmul_v2 t=2")
    mem = ns["prog"].global_block().op(0).attr("ex_states")[0]
    sb.locator(f".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='{mem}']").first.click()
    prov = sb.locator(".jp-Kernelcore-provenance")
    prov.locator(".jp-Kernelcore-originLink").first.wait_for()
    links = prov.locator(".jp-Kernelcore-originLink").all_text_contents()
    assert any("written at timestep 1" in t for t in links), links
    assert any("t=1)" in t for t in links) and any("t=0)" in t for t in links), links
    # the same trail is outlined in the sidebar's graph: the step block's ops that wrote the value
    trail = sb.locator(".jp-Kernelcore-sidebarView svg g.node.jp-Kernelcore-trail")
    trail.first.wait_for()
    assert trail.count() >= 2
    shot(sb, "sidebar_provenance")
    prov.locator(".jp-Kernelcore-originLink", has_text="assign (block 1 op #5 t=0)").first.click()
    wait_at(sb, "t=0")
    assert "(past" in sb.locator(".jp-Kernelcore-dbgPosition").text_content()
    # the value shown there is h_new of t=0, as NumPy computes it
    h = np.tanh(ns["feed"]["x"][0] @ ns["scope"].get("w") + ns["feed"]["h0"] @ ns["scope"].get("u"))
    row = sb.locator(f".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='{ns['h_new'].name}']").first
    assert row.locator(".jp-Kernelcore-varValue").text_content().startswith(f"float32[{h.shape[0]}, {h.shape[1]}]")
    shot(sb, "sidebar_provenance_followed")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_sidebar_says_when_the_kernel_restarted(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    run_notebook(page, lab, "sidebar_restart.ipynb", [setup, SESSION])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    sb.locator(".jp-Kernelcore-dbgStatus", has_text="kernel restarted; re-run the cell").wait_for(timeout=60_000)
    assert sb.locator("button.jp-Kernelcore-cmd-step").is_disabled()
    shot(sb, "sidebar_restarted")


def test_clicking_an_op_in_the_sidebar_graph_breaks_or_runs_there(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    run_notebook(page, lab, "sidebar_graph.ipynb", [setup, SESSION])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    graph = sb.locator(".jp-Kernelcore-sidebarView")
    graph.locator("svg g.node.jp-Kernelcore-op", has_text="elementwise_add").first.dispatch_event("click")
    sb.locator("button.jp-Kernelcore-runToHere").click()
    wait_at(sb, "op #2 elementwise_add t=0")
    # the sidebar's graph pane is narrow: the op may lie outside its view, and a user would pan to it; the
    # click is dispatched on the node itself, as the pane's handler receives it
    graph.locator("svg g.node.jp-Kernelcore-op", has_text="matmul_v2").first.dispatch_event("click")
    sb.locator("button.jp-Kernelcore-breakHere").click()
    sb.locator(".jp-Kernelcore-bp", has_text="block 1 op #").wait_for()
    bp_text = sb.locator(".jp-Kernelcore-bp", has_text="block 1 op #").text_content()
    op = int(bp_text.split("op #")[1].split()[0].rstrip("×"))
    assert op in (0, 1)
    click_command(sb, "cont")  # the tanh breakpoint first (t=0), the watch on its output, then the op clicked, at t=1
    wait_at(sb, "op #3 tanh t=0")
    click_command(sb, "cont")
    wait_at(sb, "op #4 assign t=0")
    click_command(sb, "cont")
    wait_at(sb, f"op #{op} matmul_v2 t=1")
    assert sb.locator("svg g.node.jp-Kernelcore-current").count() >= 1  # the graph marks where the run is
    shot(sb, "sidebar_graph_break_here")


# the sidebar's shortcuts (the command table's, kernelcore_widgets/contract/commands.py), pressed with the notebook
# focused in an order where each one moves; each is checked against the same move made on an in-process session
# of the same program
ORDER = ("step", "next", "step_timestep", "back", "back_timestep", "finish", "reverse_cont", "cont")


def _pressed(lumino_keys: str) -> str:
    """Lumino's keystroke ("Accel Shift F11") as Playwright presses it off a Mac ("Control+Shift+F11")."""
    return "+".join("Control" if k == "Accel" else k for k in lumino_keys.split())


def shortcuts() -> list[tuple[str, str]]:
    from kernelcore_widgets.contract.commands import BY_NAME, MOVE_NAMES
    assert sorted(ORDER) == sorted(MOVE_NAMES)
    return [(_pressed(BY_NAME[m].move.keys), m) for m in ORDER]


def test_keyboard_shortcuts_move_the_session(page, lab):
    import kernelcore as kc
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    ns = exec_sources([setup])
    ref = kc.debug(ns["prog"], feed=ns["feed"], fetch_list=[ns["last"]], scope=ns["scope"])
    session = "import kernelcore_widgets\nsess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)"
    run_notebook(page, lab, "sidebar_keys.ipynb", [setup, session])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    page.locator(".jp-Notebook .jp-Cell").first.locator(".jp-InputPrompt").click()
    page.keyboard.press("Escape")  # command mode: the notebook has the focus
    seen = []
    for keys, move in shortcuts():
        before = sb.locator(".jp-Kernelcore-dbgReason").text_content(), \
            sb.locator(".jp-Kernelcore-dbgPosition").text_content()
        getattr(ref, move)()
        page.keyboard.press(keys)
        want = str(ref.position) + ("" if ref.at_present else "  (past")
        page.wait_for_function(
            "([want, reason]) => { const sb = document.querySelector('#jp-kernelcore-debugger');"
            " const p = sb.querySelector('.jp-Kernelcore-dbgPosition');"
            " const r = sb.querySelector('.jp-Kernelcore-dbgReason');"
            " return p && p.textContent.startsWith(want) && r && r.textContent === reason; }",
            arg=[want, ref.stop_reason], timeout=30_000)
        after = sb.locator(".jp-Kernelcore-dbgReason").text_content(), \
            sb.locator(".jp-Kernelcore-dbgPosition").text_content()
        assert after != before, (keys, move, after)
        seen.append((keys, after[1]))
    assert seen[-1][1].startswith("end of the run")
    shot(sb, "sidebar_after_shortcuts")


def test_shortcuts_work_after_a_click_on_the_sidebar_text_and_tooltips_name_the_keys(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    session = "import kernelcore_widgets\nsess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)"
    run_notebook(page, lab, "sidebar_keys_after_click.ipynb", [setup, session])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    assert sb.locator(".jp-Kernelcore-cmd-step").get_attribute("title").endswith("(Ctrl+Shift+F11)")
    assert "Accel" not in " ".join(sb.locator(".jp-Kernelcore-dbgControls button").evaluate_all(
        "bs => bs.map(b => b.title)"))
    for clicked in (".jp-Kernelcore-sidebarTitle", ".jp-Kernelcore-callstack"):
        before = sb.locator(".jp-Kernelcore-dbgPosition").text_content()
        sb.locator(clicked).first.click()
        page.keyboard.press("Control+Shift+F11")
        page.wait_for_function(
            "(before) => document.querySelector('#jp-kernelcore-debugger .jp-Kernelcore-dbgPosition').textContent !== before",
            arg=before, timeout=30_000)
    shot(sb, "sidebar_keys_after_click")
