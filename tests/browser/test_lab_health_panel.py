"""In JupyterLab: the "Training health" sidebar panel over a recorded loop whose learning rate is raised at
iteration RAISE_AT until it goes NaN. Opened from the palette's command before the loop, it says how to start
recording; while the loop runs it shows the recorder's iterations as they end; once the recorder stopped it
marks the first bad iteration and puts that op first, and a click on that op's sparkline at that iteration moves
the debugger sidebar right after that op there. After "Run All" it follows the loop's cell that was queued when
its comm opened. Screenshots (light and dark) in out/screenshots/."""
from __future__ import annotations

import re

from health_notebook import NAN_MLP
from lab_helpers import in_theme, shot
from test_lab import CELLS, RUN_DONE, open_notebook, write_notebook

SETUP = NAN_MLP + '''
import time
import kernelcore_widgets  # the panel's comm target


def train(s, n, pause_s=0.0):
    exe = kc.Executor()
    for it in range(n):
        if it == RAISE_AT:
            s.set("learning_rate_0", np.array(HIGH_LR, "float32"))
        exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
        time.sleep(pause_s)  # slow enough that the panel is seen following the loop
'''

LOOP = '''
with kc.record(main, scope) as rec:
    train(scope, 60, pause_s=0.4)
print("HIT", rec.hit.iteration, rec.hit.op, rec.hit.var)
'''

FOLLOWING = """() => {
  const counts = document.querySelector('#jp-kernelcore-health .jp-Kernelcore-hvCounts');
  const m = counts && /(\\d+) iterations/.exec(counts.textContent);
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  return !!m && Number(m[1]) >= 2 && k.status === 'busy';
}"""

# the same, by the cell's prompt ([*] while it runs): the kernel's status says idle while the loop runs once Lab
# created a comm's subshell beside it (every request, a control channel's too, ends with an idle status)
FOLLOWING_CELL = """k => {
  const counts = document.querySelector('#jp-kernelcore-health .jp-Kernelcore-hvCounts');
  const m = counts && /(\\d+) iterations/.exec(counts.textContent);
  const cell = window.jupyterapp.shell.currentWidget.content.widgets[k];
  const prompt = cell.node.querySelector('.jp-InputPrompt');
  return !!m && Number(m[1]) >= 2 && !!prompt && prompt.textContent.includes('*');
}"""


def _run_cell(page, k: int) -> None:
    """Run code cell k alone (the panel's comm opens once the first cell imported kernelcore_widgets: run
    alone, the panel's empty state is seen before the loop starts)."""
    page.evaluate("""k => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = k;
                            void window.jupyterapp.commands.execute('notebook:run-cell'); }""", k)  # not awaited


def _panel_beside(page, lab, file: str, cells: list[str]):
    """The notebook `file` of `cells` opened, and the Training health panel shown beside it (its locator)."""
    open_notebook(page, lab, write_notebook(lab, file, cells))
    page.evaluate("window.jupyterapp.commands.execute('kernelcore:show-health')")
    panel = page.locator("#jp-kernelcore-health")
    panel.wait_for()
    return panel


def test_the_health_panel_follows_a_recorded_loop_and_a_click_moves_the_debugger_there(page, lab):
    panel = _panel_beside(page, lab, "health_panel.ipynb", [SETUP, LOOP])
    # the palette offers it under its name
    assert page.evaluate("window.jupyterapp.commands.label('kernelcore:show-health')") == \
        "kernelcore: Show training health"
    _run_cell(page, 0)
    hint = panel.locator(".jp-Kernelcore-hpHint")
    hint.filter(has_text="with kc.record(main, scope) as rec:").wait_for(timeout=60_000)  # before the loop
    shot(panel, "health_panel_empty_light")
    _run_cell(page, 1)
    page.wait_for_function(FOLLOWING, timeout=60_000, polling=100)  # live: the loop's cell still runs
    page.wait_for_function(RUN_DONE, timeout=120_000, polling=250)
    cells = page.evaluate(CELLS)
    text = "".join(o.get("text", "") for o in cells[1]["outputs"] if o["output_type"] == "stream")
    it, op, var = re.search(r"^HIT (\d+) (\d+) (\S+)$", text, re.M).groups()

    banner = panel.locator(".jp-Kernelcore-hvFirstBadText")
    banner.filter(has_text=f"iteration {it},").wait_for(timeout=30_000)
    assert f"(o0:{op})" in banner.text_content() and var in banner.text_content(), banner.text_content()
    top = panel.locator(".jp-Kernelcore-hvRow[data-op]").first
    assert top.get_attribute("data-op") == f"o0:{op}"
    assert "jp-Kernelcore-hvBadRow" in top.get_attribute("class")
    assert top.locator("line.jp-Kernelcore-sparkFirstBad").get_attribute("data-iteration") == it
    assert panel.locator(".jp-Kernelcore-hvLossCurve path.jp-Kernelcore-sparkLine").count() == 1
    assert panel.locator(".jp-Kernelcore-hvGradCurve").count() == 4  # two fc layers: a weight and a bias each
    assert f"{int(it) + 1} iterations" in panel.locator(".jp-Kernelcore-hvCounts").text_content()
    shot(panel, "health_panel_light")

    spark = top.locator("svg.jp-Kernelcore-hvOpSpark")
    spark.scroll_into_view_if_needed()
    box = spark.bounding_box()
    spark.click(position={"x": (int(it) + 0.5) * box["width"] / (int(it) + 1), "y": box["height"] / 2})
    sidebar = page.locator("#jp-kernelcore-debugger")
    sidebar.wait_for(timeout=60_000)  # the click showed the debugger sidebar
    page.wait_for_function("want => { const p = document.querySelector('#jp-kernelcore-debugger "
                           ".jp-Kernelcore-dbgPosition'); return p && p.textContent.startsWith(want); }",
                           arg=f"block 0 op #{int(op) + 1} ", timeout=60_000)  # right after the op that went bad
    reason = sidebar.locator(".jp-Kernelcore-dbgReason").text_content()
    assert reason.startswith(f"recorder: iteration {it}:") and var in reason, reason
    assert panel.locator(".jp-Kernelcore-hvChosen").get_attribute("data-op") == f"o0:{op}"
    assert "debugger: recorder: iteration" in panel.locator(".jp-Kernelcore-hpReply").text_content()
    shot(page, "health_panel_debugger_light")
    with in_theme(page, "dark"):
        shot(panel, "health_panel_dark")
        shot(page, "health_panel_debugger_dark")
    assert not page.problems, page.problems


FIT_SETUP = '''
import time
import numpy as np
import kernelcore as kc
import kernelcore_widgets  # the panel's comm target

model = kc.Model(scope=kc.Scope())
hidden = model.fc_layer(input="x", size=16, activation="tanh", input_dim=8)
prob = model.fc_layer(input=hidden, size=3, activation="softmax")
avg_loss = model.mean(model.cross_entropy(input=prob, label="label"))
model.backward(avg_loss)
model.sgd(learning_rate=0.1)
model.initialize_parameters()
rng = np.random.default_rng(1)


def batches(n, pause_s):
    for _ in range(n):
        time.sleep(pause_s)  # slow enough that the panel is seen following the fit
        yield {"x": rng.standard_normal((4, 8)).astype("float32"),
               "label": rng.integers(0, 3, (4, 1)).astype("int64")}
'''

FIT = '''
result = model.fit(batches(30, 0.3), fetch=[avg_loss], record=True)
print("STEPS", result.steps, model.recorder is result.recorder)
'''


def test_the_health_panel_follows_a_recorded_model_fit_by_the_model_s_name(page, lab):
    # model.fit(record=True) binds no recorder of its own: the panel shows it as model.recorder while it runs
    name = write_notebook(lab, "health_panel_fit.ipynb", [FIT_SETUP, FIT])
    open_notebook(page, lab, name)
    # shown twice at once before kernelcore_widgets is imported: the second asks again while the kernel has not
    # answered the first comm yet, whose close by a kernel without the target must not reach a comm Lab forgot
    page.evaluate("""() => { window.jupyterapp.commands.execute('kernelcore:show-health');
                            window.jupyterapp.commands.execute('kernelcore:show-health'); }""")
    panel = page.locator("#jp-kernelcore-health")
    panel.wait_for()
    _run_cell(page, 0)
    panel.locator(".jp-Kernelcore-hpHint").wait_for(timeout=60_000)
    _run_cell(page, 1)
    page.wait_for_function(FOLLOWING, timeout=60_000, polling=100)  # live: the fit's cell still runs
    assert panel.locator(".jp-Kernelcore-hpRecorderName").text_content() == "recorder model.recorder"
    page.wait_for_function(RUN_DONE, timeout=120_000, polling=250)
    cells = page.evaluate(CELLS)
    text = "".join(o.get("text", "") for o in cells[1]["outputs"] if o["output_type"] == "stream")
    assert "STEPS 30 True" in text, text
    panel.locator(".jp-Kernelcore-hvCounts").filter(has_text="30 iterations").wait_for(timeout=30_000)
    assert panel.locator(".jp-Kernelcore-hvLossCurve path.jp-Kernelcore-sparkLine").count() == 1
    assert panel.locator(".jp-Kernelcore-hpRecorderName").text_content() == "recorder model.recorder"
    shot(panel, "health_panel_fit_light")
    with in_theme(page, "dark"):
        shot(panel, "health_panel_fit_dark")
    assert not page.problems, page.problems


def test_after_run_all_the_panel_follows_the_loop_s_cell_that_was_queued_when_its_comm_opened(page, lab):
    # "Run All": the cell importing kernelcore_widgets ends with the loop's cell queued behind it, so the panel's
    # comm opens while the loop runs (beside it, on the comm's kernel subshell), and follows it from there
    panel = _panel_beside(page, lab, "health_panel_run_all.ipynb", [SETUP, LOOP])
    page.evaluate("void window.jupyterapp.commands.execute('notebook:run-all-cells')")  # not awaited
    page.wait_for_function(FOLLOWING_CELL, arg=1, timeout=90_000, polling=100)  # live: the loop's cell still runs
    page.wait_for_function(RUN_DONE, timeout=120_000, polling=250)
    cells = page.evaluate(CELLS)
    text = "".join(o.get("text", "") for o in cells[1]["outputs"] if o["output_type"] == "stream")
    it = re.search(r"^HIT (\d+) ", text, re.M).group(1)
    panel.locator(".jp-Kernelcore-hvFirstBadText").filter(has_text=f"iteration {it},").wait_for(timeout=30_000)
    assert not page.problems, page.problems
