"""In JupyterLab: the training-health view of a loop whose learning rate is raised at iteration RAISE_AT until it
goes NaN. The recorder stops at the first non-finite op output, the view (redrawn live while the loop ran)
marks that iteration and puts that op first, and a click on its sparkline at that iteration opens a Debugger
paused right after that op, whose session the debugger sidebar then drives too. Screenshots (light and dark) in
out/screenshots/."""
from __future__ import annotations

import re

from health_notebook import NAN_MLP
from lab_helpers import shot
from test_lab import code_cell, errors_of, open_notebook, run_all, widget_cells, write_notebook

SETUP = NAN_MLP + '''
from IPython.display import display
from kernelcore_widgets import HealthView


def copy_scope(s):
    out = kc.Scope()
    for v in s.local_vars():
        out.set(v.name, np.array(v.value, copy=True))
    return out


def train(s, n, each=None):
    exe = kc.Executor()
    for it in range(n):
        if it == RAISE_AT:
            s.set("learning_rate_0", np.array(HIGH_LR, "float32"))
        with kc.trace(retain="references") as tr:
            exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
        if each is not None and each(it, tr):
            return


oracle = {}


def first_non_finite(it, tr):
    """NumPy's answer, on a copy of the same state: the first op output holding NaN/Inf."""
    for e in tr.events:
        if e.kind == "op_run" and e.values:
            for name, v in e.values:
                if np.asarray(v).dtype.kind == "f" and not np.isfinite(v).all():
                    oracle.update(iteration=it, op=e.op, var=name)
                    return True
    return False


train(copy_scope(scope), 60, first_non_finite)
print("ORACLE", oracle["iteration"], oracle["op"], oracle["var"])
'''

LOOP = '''
with kc.record(main, scope) as rec:
    view = HealthView(rec, loss=loss.name)
    display(view)
    with view.follow():
        train(scope, 60)
print("HIT", rec.hit.iteration, rec.hit.op, rec.hit.var)
'''


def _theme(page, theme: str, light: bool):
    """Switch JupyterLab's theme (a user setting: it outlives the page, so the test puts Light back)."""
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
    page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{str(light).lower()}'")
    page.locator("#jupyterlab-splash").wait_for(state="detached")  # the splash Lab shows while it restyles


def _printed(cell: dict, word: str) -> list[str]:
    text = "".join(o.get("text", "") for o in cell["outputs"] if o["output_type"] == "stream")
    m = re.search(rf"^{word} (\d+) (\d+) (\S+)$", text, re.M)
    assert m, text
    return list(m.groups())


def test_the_health_view_marks_the_first_bad_iteration_and_a_click_debugs_that_op_there(page, lab):
    name = write_notebook(lab, "health_view.ipynb", [SETUP, LOOP])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    it, op, var = _printed(cells[0], "ORACLE")
    assert _printed(cells[1], "HIT") == [it, op, var]
    (k,) = widget_cells(cells)
    view = code_cell(page, k).locator(".jp-Kernelcore-HealthView").first
    view.scroll_into_view_if_needed()
    banner = view.locator(".jp-Kernelcore-hvFirstBadText")
    banner.wait_for()
    assert f"iteration {it}," in banner.text_content() and f"(o0:{op})" in banner.text_content(), \
        banner.text_content()
    top = view.locator(".jp-Kernelcore-hvRow[data-op]").first
    assert top.get_attribute("data-op") == f"o0:{op}"
    assert "jp-Kernelcore-hvBadRow" in top.get_attribute("class")
    assert top.locator(".jp-Kernelcore-hvFirstBadCell").text_content() == f"it {it}"
    first_bad_line = top.locator("line.jp-Kernelcore-sparkFirstBad")
    assert first_bad_line.get_attribute("data-iteration") == it
    assert view.locator(".jp-Kernelcore-hvLossCurve path.jp-Kernelcore-sparkLine").count() == 1
    assert view.locator(".jp-Kernelcore-hvGradCurve").count() == 4  # two fc layers: a weight and a bias each
    shot(view, "health_view_light")

    spark = top.locator("svg.jp-Kernelcore-hvOpSpark")
    box = spark.bounding_box()
    iterations = int(it) + 1
    spark.click(position={"x": (int(it) + 0.5) * box["width"] / iterations, "y": box["height"] / 2})
    dbg = view.locator(".jp-Kernelcore-hvDebugger .jp-Kernelcore-Debugger")
    dbg.wait_for(timeout=60_000)
    reason = dbg.locator(".jp-Kernelcore-debugControls .jp-Kernelcore-status").first
    page.wait_for_function("el => el.textContent.includes('recorder:')", arg=reason.element_handle())
    text = reason.text_content()
    assert f"iteration {it}:" in text and f"op #{op})" in text and var in text, text
    assert "not deterministic" not in text
    chosen = view.locator(".jp-Kernelcore-hvChosen")
    assert chosen.get_attribute("data-op") == f"o0:{op}"
    dbg.locator("svg.jp-Kernelcore-svg g.node").first.wait_for()
    # the session the click made is the kernel's latest: the debugger sidebar drives it too
    page.evaluate("window.jupyterapp.commands.execute('kernelcore:open-debugger')")
    where = dbg.locator(".jp-Kernelcore-debugControls .jp-Kernelcore-position").first.text_content()
    assert where.startswith(f"block 0 op #{int(op) + 1} "), where  # right after the op that went bad
    page.wait_for_function("want => { const p = document.querySelector('#jp-kernelcore-debugger "
                           ".jp-Kernelcore-dbgPosition'); return p && p.textContent.startsWith(want); }",
                           arg=where, timeout=30_000)
    reason_there = page.locator("#jp-kernelcore-debugger .jp-Kernelcore-dbgReason").text_content()
    assert reason_there.startswith(f"recorder: iteration {it}:"), reason_there
    top_of = "el => el.scrollIntoView({block: 'start'})"  # the Debugger is taller than the page: its top half
    dbg.evaluate(top_of)
    shot(page, "health_view_debugger_light")
    try:
        _theme(page, "JupyterLab Dark", False)
        dbg.evaluate(top_of)
        shot(page, "health_view_debugger_dark")
        view.scroll_into_view_if_needed()
        shot(view.locator(".jp-Kernelcore-hvTable"), "health_view_table_dark")
    finally:
        _theme(page, "JupyterLab Light", True)
    assert not page.problems, page.problems
