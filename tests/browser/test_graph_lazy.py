"""A big program sent in parts (ProgramJSON version 3) in JupyterLab: a folded group's ops arrive when it is
opened, from the widget's comm and from the kernel comm of a cell result; search opens a group that was
never sent; after a kernel restart the widget says to re-run the cell, and a cell result whose kernel is
gone says so when a group cannot be fetched. Screenshots in JupyterLab Light and Dark."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from lab_helpers import THEMES, set_theme, shot

LAYERS = 60
SETUP = f"""import kernelcore as kc
from kernelcore.ir import op_reads
from kernelcore_widgets import ProgramGraph
op_reads.LAZY_ABOVE = 200   # this {LAYERS * 8}-op program is sent in parts, as a 50,000-op one is
L = kc.layers
main, startup = kc.Program(), kc.Program()
with kc.program_guard(main, startup):
    h = L.data("x", [-1, 8])
    for _ in range({LAYERS}):
        h = L.fc(h, 8, act="relu")
    kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
len(main.global_block().ops)"""

READY = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return !!k && k.status === 'idle' && w.content.widgets.length > 0; }"""
IDLE = """(n) => { const w = window.jupyterapp.shell.currentWidget;
    return w.content.widgets[n].model.executionCount !== null && w.sessionContext.session.kernel.status === 'idle'; }"""


def _open(page, lab, name, cells=("ProgramGraph(main)", "main")):
    """Notebook `name`: SETUP, then `cells`; opened, nothing run."""
    nb = new_notebook(cells=[new_code_cell(c) for c in (SETUP, *cells)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.write(nb, lab.root / name)
    page.goto(f"{lab.url}/lab/tree/{name}?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.wait_for_function(READY, timeout=90_000)
    set_theme(page, "light")


def _run(page, n):
    page.evaluate(f"""() => {{ const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = {n};
                              return window.jupyterapp.commands.execute('notebook:run-cell'); }}""")
    page.wait_for_function(IDLE, arg=n, timeout=90_000)


def _view(page, n):
    view = page.locator(".jp-Notebook .jp-Cell").nth(n).locator(".jp-Kernelcore-ProgramGraph").first
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=60_000)
    return view


def _open_group(page, view, gkind):
    """Click the first folded group of `gkind`; wait for the new drawing; return its node count."""
    old = view.locator("svg.jp-Kernelcore-svg").element_handle()
    view.locator(f"svg g.node.jp-Kernelcore-collapsed.jp-Kernelcore-gkind-{gkind}").first.locator("text").first.click()
    page.wait_for_function("([root, old]) => { const s = root.querySelector('svg.jp-Kernelcore-svg');"
                           " return (s && s !== old) || root.querySelector('.jp-Kernelcore-note:not(:empty)'); }",
                           arg=[view.element_handle(), old], timeout=60_000)
    return view.locator("svg g.node").count()


def _check_lazy_view(page, view, label):
    """The view opened from the skeleton: no op node drawn, groups open on a click (fetched), and search
    reaches a variable of a group never opened."""
    assert view.locator("svg g.node.jp-Kernelcore-gkind-repeat").count() == 3
    assert view.locator("svg g.node.jp-Kernelcore-op").count() < 10  # only the stages' loose ops (mean, ...)
    _open_group(page, view, "repeat")  # the forward repeat: its layers in ranges
    assert view.locator("svg g.node.jp-Kernelcore-gkind-range").count() >= 2
    _open_group(page, view, "range")
    _open_group(page, view, "layer")  # a layer: its ops, fetched now
    ops = view.locator("svg g.node.jp-Kernelcore-op")
    assert ops.count() >= 3, view.locator(".jp-Kernelcore-note").text_content()
    assert not view.locator(".jp-Kernelcore-note").text_content()
    shot(view, f"lazy_{label}_opened_light")
    # search: a variable of the optimize stage, whose groups were never opened
    box = view.locator("input.jp-Kernelcore-search")
    box.fill("fc_41.w_0@GRAD")
    page.wait_for_function("(root) => /match/.test(root.querySelector('.jp-Kernelcore-count').textContent)",
                           arg=view.element_handle(), timeout=30_000)
    box.press("Enter")
    hit = view.locator("svg g.node.jp-Kernelcore-match:not(.jp-Kernelcore-collapsed)")
    hit.first.wait_for(timeout=60_000)
    assert "fc_41.w_0@GRAD" in hit.first.text_content()
    assert "fc" in view.locator(".jp-Kernelcore-crumbs").text_content()


def test_lazy_widget_and_cell_result_open_groups_and_search(page, lab):
    _open(page, lab, "lazy_graph.ipynb")
    _run(page, 0)
    _run(page, 1)
    _check_lazy_view(page, _view(page, 1), "widget")
    _run(page, 2)
    _check_lazy_view(page, _view(page, 2), "mime")
    assert not [p for p in page.problems if "page error" in p], page.problems


def test_kernel_restart_leaves_a_clear_message(page, lab):
    _open(page, lab, "lazy_restart.ipynb")
    _run(page, 0)
    _run(page, 1)
    _run(page, 2)
    widget, mime = _view(page, 1), _view(page, 2)
    assert widget.locator(".jp-Kernelcore-deadNote").count() == 0
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    page.wait_for_function(READY, timeout=90_000)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(1)
    note = cell.locator(".jp-Kernelcore-deadNote")
    note.wait_for(timeout=30_000)
    assert "Kernel restarted" in note.text_content() and "Re-run the cell" in note.text_content()
    # the cell result still draws (it needs no kernel); a group it did not carry cannot be fetched now
    _open_group(page, mime, "repeat")
    page.wait_for_function("(root) => /re-run the cell/.test(root.querySelector('.jp-Kernelcore-note').textContent)",
                           arg=mime.element_handle(), timeout=60_000)
    for which in THEMES:
        set_theme(page, which)
        shot(cell, f"restart_widget_{which}")
        shot(page.locator(".jp-Notebook .jp-Cell").nth(2), f"restart_mime_{which}")
    set_theme(page, "light")


def test_the_file_viewer_opens_a_big_pdmodel_in_parts(page, lab):
    import kernelcore as kc
    from kernelcore.ir.op_reads import LAZY_ABOVE
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        h = L.data("x", [-1, 8])
        for _ in range(260):
            h = L.fc(h, 8, act="relu")
        kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
    assert len(main.global_block().ops) > LAZY_ABOVE  # the server sends it in parts
    kc.save_program(main, lab.root / "big_parts.pdmodel")
    page.goto(f"{lab.url}/lab/tree/big_parts.pdmodel?reset&token={lab.token}")
    view = page.locator(".jp-Kernelcore-fileView .jp-Kernelcore-ProgramGraph")
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=90_000)
    assert view.locator("svg g.node.jp-Kernelcore-op").count() < 10
    _open_group(page, view, "repeat")  # fetched from the server extension, no kernel involved
    assert view.locator("svg g.node.jp-Kernelcore-gkind-range").count() >= 2, view.locator(".jp-Kernelcore-note").text_content()
    _open_group(page, view, "range")
    _open_group(page, view, "layer")
    assert view.locator("svg g.node.jp-Kernelcore-op").count() >= 3
    assert not view.locator(".jp-Kernelcore-note").text_content()
    shot(view, "lazy_file_viewer_opened_light")


def test_side_by_side_opens_groups_of_a_big_pruned_program(page, lab):
    """The pruned program drawn beside is sent in parts too: a click on a folded group of its pane fetches
    that group from the kernel (the main pane's drawing stays as it was)."""
    side = ('op_reads.LAZY_ABOVE = 50  # the pruned program (forward up to fc_55: 400 nodes) is sent in parts too\n'
            'pr = kc.prune(main, ["fc_55.tmp_2"])\nProgramGraph(main, pruned=pr, side_by_side=True)')
    _open(page, lab, "lazy_side_by_side.ipynb", [side])
    _run(page, 0)
    _run(page, 1)
    view = _view(page, 1)
    view.locator(".jp-Kernelcore-sideBySide").wait_for()
    right = view.locator(".jp-Kernelcore-graphPane").nth(1)
    right.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=60_000)
    left_nodes = view.locator(".jp-Kernelcore-graphPane").nth(0).locator("svg g.node").count()
    assert right.locator("svg g.node.jp-Kernelcore-op").count() < 5  # its skeleton: folded groups
    folded = right.locator("svg g.node.jp-Kernelcore-collapsed")
    assert folded.count() >= 1
    old = right.locator("svg.jp-Kernelcore-svg").element_handle()
    folded.first.locator("text").first.click()
    page.wait_for_function("([root, old]) => { const s = root.querySelector('svg.jp-Kernelcore-svg');"
                           " return s && s !== old; }", arg=[right.element_handle(), old], timeout=60_000)
    right.locator("svg g.node.jp-Kernelcore-collapsed, svg g.node.jp-Kernelcore-op").first.wait_for()
    assert not view.locator(".jp-Kernelcore-note").text_content(), view.locator(".jp-Kernelcore-note").text_content()
    assert view.locator(".jp-Kernelcore-graphPane").nth(0).locator("svg g.node").count() == left_nodes
    shot(view, "lazy_side_by_side_opened_light")
    assert not [p for p in page.problems if "page error" in p], page.problems
