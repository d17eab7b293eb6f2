"""JupyterLab in Chromium: the example notebooks run from the UI, and the views show what the kernel holds."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import quote

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import kernelcore as kc
from kernelcore.view.display import PROGRAM_MIME, program_json

from lab_helpers import EXAMPLES, ROOT, shot

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
HOSTILE = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
           '"><svg onload="window.__pwned=3">', "javascript:window.__pwned=4"]


def _examples_module():
    spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "examples" / "make_notebooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NB = _examples_module()


def code_sources(name: str) -> list[str]:
    return [c.source for c in NB.NOTEBOOKS[name] if c.cell_type == "code"]


# ---------------------------------------------------------------------------------------------------------
# driving JupyterLab
KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && !!w.content && w.content.widgets.length > 0;
}"""

RUN_DONE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  if (!k || k.status !== 'idle') return false;
  const prompts = Array.from(w.node.querySelectorAll('.jp-InputPrompt')).map(p => p.textContent || '');
  if (prompts.some(t => t.includes('*'))) return false;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const failed = cells.some(c => c.model.outputs.toJSON().some(o => o.output_type === 'error'));
  return failed || cells.every(c => c.model.executionCount !== null);
}"""

CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .map(c => ({source: c.model.sharedModel.getSource(), count: c.model.executionCount,
              outputs: c.model.outputs.toJSON()}))"""


def open_notebook(page, lab, name: str) -> None:
    page.goto(f"{lab.url}/lab/tree/{quote(name)}?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.wait_for_function(KERNEL_IDLE, timeout=90_000)


def run_all(page) -> list[dict]:
    """Run All Cells from the Run menu, wait for the last cell, return the cells' outputs."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
    page.wait_for_timeout(500)
    page.wait_for_function(RUN_DONE, timeout=120_000, polling=250)
    page.wait_for_timeout(300)
    page.wait_for_function(RUN_DONE, timeout=30_000, polling=250)  # still done: no late queueing
    return page.evaluate(CELLS)


def code_cell(page, k: int):
    """The k-th code cell's output area (0-based, as in the notebook's code cells)."""
    return page.locator(".jp-Notebook .jp-CodeCell").nth(k).locator(".jp-OutputArea")


def widget_cells(cells: list[dict]) -> list[int]:
    return [k for k, c in enumerate(cells) if any(WIDGET_MIME in o.get("data", {}) for o in c["outputs"])]


def errors_of(cells: list[dict]) -> list[str]:
    return [f"{o.get('ename')}: {o.get('evalue')}" for c in cells for o in c["outputs"] if o["output_type"] == "error"]


def write_notebook(lab, name: str, sources: list[str]) -> str:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources],
                      metadata={"kernelspec": NB.KERNELSPEC, "language_info": {"name": "python"}})
    nbformat.write(nb, lab.root / name)
    return name


def run_notebook(page, lab, name: str, sources: list[str]) -> list[dict]:
    """Write notebook `name` of `sources`, open it and Run All; no cell may end in an error. The cells'
    outputs."""
    write_notebook(lab, name, sources)
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    return cells


def wait_enabled(page, scope_css: str, button_cls: str) -> None:
    """Wait until the button of class `button_cls` inside `scope_css` exists and is enabled."""
    page.wait_for_function(f"() => {{ const b = document.querySelector('{scope_css} button.{button_cls}'); "
                           "return b && !b.disabled; }")


def graph_nodes(view) -> tuple[list[str], list[str]]:
    """(op labels, var names) of the SVG nodes a ProgramGraph view drew."""
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for()
    ops = view.locator("svg.jp-Kernelcore-svg g.node.jp-Kernelcore-op")
    vars_ = view.locator("svg.jp-Kernelcore-svg g.node.jp-Kernelcore-var")
    return ([t.strip() for t in ops.locator("text").all_text_contents()],
            [t for t in (g.locator("text").first.text_content() for g in vars_.all())])


def counts(pj) -> tuple[int, int]:
    return (sum(len(b["ops"]) for b in pj["blocks"]), sum(len(b["vars"]) for b in pj["blocks"]))


def exec_sources(sources: list[str]) -> dict:
    """Run notebook cell sources here, to know what the kernel computes (the cells are seeded)."""
    ns: dict = {}
    for s in sources:
        exec(compile(s, "<notebook>", "exec"), ns)
    return ns


# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", EXAMPLES)
def test_example_notebook_runs_from_the_ui_without_errors(page, lab, name):
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    assert all(c["count"] is not None for c in cells)
    # every widget output rendered a kernelcore view (not "Error displaying widget")
    for k in widget_cells(cells):
        code_cell(page, k).locator(".jp-Kernelcore-view").first.wait_for()
    assert page.get_by_text("Error displaying widget").count() == 0
    page.wait_for_timeout(500)
    shot(page, f"notebook_{Path(name).stem}")


def test_program_graph_has_one_node_per_op_and_var_and_a_click_shows_details(page, lab):
    name = "01_program_graph.ipynb"
    prog = exec_sources(code_sources(name)[:1])["prog"]
    pj = program_json(prog)
    n_ops, n_vars = counts(pj)
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells)
    mime = next(k for k, c in enumerate(cells) if any(PROGRAM_MIME in o.get("data", {}) for o in c["outputs"]))
    # the MIME output (no widget state) and the widget both draw every op and variable once
    for k in (mime, widget_cells(cells)[0]):
        view = code_cell(page, k).locator(".jp-Kernelcore-ProgramGraph").first
        view.scroll_into_view_if_needed()
        ops, names = graph_nodes(view)
        assert sorted(ops) == sorted(o["type"] for b in pj["blocks"] for o in b["ops"]), k
        assert sorted(names) == sorted(v["name"] for b in pj["blocks"] for v in b["vars"]), k
        assert len(ops) == n_ops and len(names) == n_vars
    widget = code_cell(page, widget_cells(cells)[0]).locator(".jp-Kernelcore-ProgramGraph").first
    shot(widget, "program_graph_widget")
    # the graph opens at its first ops at a legible zoom: the search brings the last op into view
    widget.locator("input.jp-Kernelcore-search").fill("softmax")
    widget.locator("input.jp-Kernelcore-search").press("Enter")
    softmax = widget.locator("svg g.node.jp-Kernelcore-op", has_text="softmax")
    softmax.click()
    details = widget.locator(".jp-Kernelcore-details")
    comment = kc.get_op_def("softmax").comment
    details.get_by_text(comment[:40]).first.wait_for()
    # what Python answered (the browser alone knows no attribute comments)
    details.get_by_text("attr_comments").first.wait_for()
    assert widget.locator("svg g.node.jp-Kernelcore-selected", has_text="softmax").count() == 1
    shot(widget, "program_graph_op_details")


def test_pruned_view_greys_exactly_the_removed_ops(page, lab):
    name = "02_prune_and_compare.ipynb"
    ns = exec_sources(code_sources(name)[:2])
    prog, pruned = ns["prog"], ns["pruned"]
    removed = sorted(prog.block(b).op(i).type for b, i in pruned.removed_ops)
    kept = sorted(prog.block(b).op(i).type for (b, i) in pruned.kept.values())
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells)
    first, second = widget_cells(cells)[:2]
    view = code_cell(page, first).locator(".jp-Kernelcore-ProgramGraph").first
    view.scroll_into_view_if_needed()
    graph_nodes(view)
    grey = view.locator("svg g.node.jp-Kernelcore-op.jp-Kernelcore-pruned")
    plain = view.locator("svg g.node.jp-Kernelcore-op:not(.jp-Kernelcore-pruned)")
    assert sorted(t.strip() for t in grey.locator("text").all_text_contents()) == removed
    assert sorted(t.strip() for t in plain.locator("text").all_text_contents()) == kept
    opacity = grey.first.evaluate("el => getComputedStyle(el).opacity")
    assert float(opacity) < 1.0 and float(plain.first.evaluate("el => getComputedStyle(el).opacity")) == 1.0
    shot(view, "pruned_graph")
    side = code_cell(page, second).locator(".jp-Kernelcore-ProgramGraph").first
    side.scroll_into_view_if_needed()
    side.locator(".jp-Kernelcore-sideBySide").wait_for()
    shot(side, "pruned_side_by_side")


def _stats(var) -> dict:
    out = {}
    for s in var.locator(".jp-Kernelcore-stat").all_text_contents():
        k, _, v = s.strip().partition(" ")
        out[k] = v.strip()
    return out


def _assert_shown(var, expected: np.ndarray, what: str) -> None:
    st = _stats(var)
    e = expected.astype(np.float64)
    for k, want in (("min", e.min()), ("max", e.max()), ("mean", e.mean()), ("std", e.std())):
        assert float(st[k]) == pytest.approx(want, rel=1e-3, abs=1e-4), (what, k, st)


def test_stepping_the_rnn_shows_the_kernels_values(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    name = write_notebook(lab, "rnn_live_stepper.ipynb", [
        setup, "from kernelcore_widgets import RNNStepper\nsess = kc.debug(prog, feed=feed, fetch_list=[last], "
               "scope=scope)\nstepper = RNNStepper(sess)\nstepper"])
    ns = exec_sources([setup])
    feed, w, u, T = ns["feed"], ns["scope"].get("w"), ns["scope"].get("u"), ns["T"]
    hs, h = [], feed["h0"]
    for t in range(T):
        h = np.tanh(feed["x"][t] @ w + h @ u)
        hs.append(h)
    open_notebook(page, lab, name)
    assert not errors_of(run_all(page))
    view = code_cell(page, 1).locator(".jp-Kernelcore-RNNStepper").first
    view.scroll_into_view_if_needed()
    nxt, prev = view.locator("button.jp-Kernelcore-next"), view.locator("button.jp-Kernelcore-prev")
    label = view.locator(".jp-Kernelcore-stepLabel")

    def col(role):
        return view.locator(f".jp-Kernelcore-col-{role} .jp-Kernelcore-stepVar").first

    for t in range(3):
        nxt.click()
        view.locator(".jp-Kernelcore-stepBox.jp-Kernelcore-current", has_text=f"t={t}").wait_for()
        assert label.text_content().startswith(f"t = {t}")
        col("x_t").locator(".jp-Kernelcore-stats").wait_for()
        _assert_shown(col("x_t"), feed["x"][t], f"x_t at t={t}")
        _assert_shown(col("h_prev"), feed["h0"] if t == 0 else hs[t - 1], f"h_prev at t={t}")
        shot(view, f"rnn_stepper_t{t}")
    prev.click()  # time travel: timestep 1 rebuilt from the trace, h_new known now
    view.locator(".jp-Kernelcore-stepBox.jp-Kernelcore-current", has_text="t=1").wait_for()
    col("h_new").locator(".jp-Kernelcore-stats").wait_for()
    _assert_shown(col("h_new"), hs[1], "h_new at t=1")
    _assert_shown(col("x_t"), feed["x"][1], "x_t at t=1")
    assert "rebuilt" in view.locator(".jp-Kernelcore-status").first.text_content()
    shot(view, "rnn_stepper_back_to_t1")


def test_debugger_buttons_step_the_session(page, lab):
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    name = write_notebook(lab, "debugger_buttons.ipynb", [
        setup, "from kernelcore_widgets import Debugger\ndbg = Debugger(kc.debug(prog, feed=feed, "
               "fetch_list=[last], scope=scope))\ndbg"])
    open_notebook(page, lab, name)
    assert not errors_of(run_all(page))
    view = code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first
    view.scroll_into_view_if_needed()
    position = view.locator(".jp-Kernelcore-position")
    assert position.text_content() == "block 0 op #0 recurrent"
    view.locator("button.jp-Kernelcore-action-step").click()
    view.locator(".jp-Kernelcore-position", has_text="block 1 op #0 matmul_v2 t=0").wait_for()
    view.locator("button.jp-Kernelcore-action-step_timestep").click()
    view.locator(".jp-Kernelcore-position", has_text="t=1").wait_for()
    view.locator("svg g.node.jp-Kernelcore-current").first.wait_for()
    shot(view, "debugger_t1")
    view.locator("button.jp-Kernelcore-action-cont").click()
    view.locator(".jp-Kernelcore-position", has_text="end of the run").wait_for()
    reason = view.locator(".jp-Kernelcore-debugControls .jp-Kernelcore-status")
    reason.filter(has_text="finished").wait_for()  # traits arrive one by one: wait for this one too
    assert reason.text_content() == "finished" and "finished" not in position.text_content()  # said once
    shot(view, "debugger_finished")


def test_open_a_pdmodel_from_the_file_browser(page, lab):
    pj = program_json(kc.load_program(lab.root / "programs" / "mlp.pdmodel"))
    n_ops, n_vars = counts(pj)
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^programs$")).dblclick()
    page.locator(".jp-DirListing-itemText", has_text=re.compile(r"^mlp\.pdmodel$")).dblclick()
    view = page.locator(".jp-Kernelcore-fileView")
    view.locator("svg g.node").first.wait_for(timeout=60_000)
    ops, names = graph_nodes(view)
    assert len(ops) == n_ops and len(names) == n_vars
    assert sorted(ops) == sorted(o["type"] for o in pj["blocks"][0]["ops"])
    shot(page, "pdmodel_file_viewer")


def test_names_with_html_run_no_script(page, lab):
    names = HOSTILE
    src = f'''
import numpy as np
import kernelcore as kc
from kernelcore_widgets import Debugger, ProgramGraph, ScopeForest, TraceTimeline

NAMES = {names!r}
prog = kc.Program()
with kc.program_guard(prog):
    g = prog.global_block()
    x = g.create_var(NAMES[0], [2, 3])
    w = g.create_parameter(NAMES[1], [3, 3])
    h = g.create_var(NAMES[2], [2, 3])
    g.append_op("mul", inputs={{"X": [x], "Y": [w]}}, outputs={{"Out": [h]}})
    y = g.create_var(NAMES[3], [2, 3])
    g.append_op("relu", inputs={{"X": [h]}}, outputs={{"Out": [y]}})
scope = kc.Scope()
scope.set(NAMES[1], np.ones((3, 3), np.float32))
feed = {{NAMES[0]: np.ones((2, 3), np.float32)}}
with kc.trace() as tr:
    kc.Executor(kc.CPUPlace()).run(prog, feed=feed, fetch_list=[y], scope=scope)
'''
    name = write_notebook(lab, "hostile_names.ipynb", [
        src, "prog", "tr", "ProgramGraph(prog, scope=scope)", "ScopeForest(scope)", "TraceTimeline(tr)",
        "Debugger(kc.debug(prog, feed=feed, fetch_list=[y], scope=kc.Scope()))"])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    graph = code_cell(page, 3).locator(".jp-Kernelcore-ProgramGraph").first
    graph.scroll_into_view_if_needed()
    _, shown = graph_nodes(graph)
    assert sorted(shown) == sorted(n if len(n) <= 36 else n[:35] + "\u2026" for n in names)  # labels: text, cut
    graph.locator("svg g.node.jp-Kernelcore-var").first.click()
    graph.locator(".jp-Kernelcore-details").get_by_text(names[0]).first.wait_for()
    forest = code_cell(page, 4).locator(".jp-Kernelcore-ScopeForest").first
    forest.scroll_into_view_if_needed()
    assert forest.get_by_text(names[1]).count() >= 1  # shown as text
    page.wait_for_timeout(1000)
    assert page.evaluate("() => window.__pwned") is None
    assert page.evaluate("() => document.querySelectorAll('img[src=\"x\"], svg[onload], [onerror]').length") == 0
    shot(page, "hostile_names")


def test_server_endpoint_answers_json(lab):
    status, body = lab.get("kernelcore/program?path=programs/mlp.pdmodel")
    assert status == 200 and body["schema"] == "kernelcore.program"
    assert {k: v for k, v in body.items() if k != "path"} == program_json(kc.load_program(lab.root / "programs/mlp.pdmodel"))
    for path, want, problem in [("../../etc/passwd", 400, "outside"), ("nope.pdmodel", 404, "does not exist"),
                                ("01_program_graph.ipynb", 400, "not a program")]:
        status, body = lab.get(f"kernelcore/program?path={quote(path)}")
        assert status == want and problem in body["message"], (path, status, body)
