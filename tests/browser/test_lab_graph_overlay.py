"""In JupyterLab: overlays on the program graph. A run comparison's max |b - a| per op on a log scale (fills
from the palette, black or white text whichever contrasts more, a legend with the range), and a health-style
overlay with NaN and Infinity in their own colours whose folded groups show their members' maximum and say so
in their tooltips. Screenshots in Light and Dark."""
from __future__ import annotations

from lab_helpers import THEMES, set_theme, shot
from test_lab import code_cell, errors_of, open_notebook, run_all, widget_cells, write_notebook

COMPARED = '''
import numpy as np
import kernelcore as kc
from kernelcore_widgets import ProgramGraph

prog, startup = kc.Program(), kc.Program()
with kc.program_guard(prog, startup):
    x = prog.global_block().create_var("x", [4, 3])
    label = prog.global_block().create_var("label", [4, 1], "int64")
    h = kc.layers.fc(x, 5, act="relu")
    loss = kc.op.mean(kc.layers.cross_entropy(kc.op.softmax(kc.layers.fc(h, 2)), label))
    kc.optimizer.SGD(0.1).minimize(loss)
rng = np.random.default_rng(0)
params = {v.name: rng.standard_normal(v.shape).astype(np.float32) for v in prog.global_block().vars if v.is_parameter}
feed = {"x": rng.standard_normal((4, 3)).astype(np.float32), "label": np.array([[0], [1], [1], [0]], np.int64)}

def run(nudge):
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)  # the learning rate
    for name, value in params.items():
        scope.set(name, value.copy())
    scope.set("fc_1.w_0", params["fc_1.w_0"] * (1 + nudge))
    with kc.trace(retain="references") as tr:
        kc.Executor().run(prog, feed=feed, fetch_list=[loss.name], scope=scope)
    return tr

cmp = kc.compare_runs(run(0.0), run(1e-3))
compared = cmp.overlay(ProgramGraph(prog), "max_abs")
compared
'''

HEALTH = '''
health = ProgramGraph(prog).overlay({0: 1e-6, 1: 1e-3, 2: float("nan"), 3: 0.5, 4: float("inf"), 9: 2.0},
                                    scale="log", label="grad max abs")
health
'''

# each painted node: its fill, its text's fill, their WCAG contrast and its tooltip
PAINTED_JS = r"""
(root) => {
  const rgb = s => (s.match(/\d+(\.\d+)?/g) || []).slice(0, 3).map(Number);
  const lum = c => { const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
                     return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  return [...root.querySelectorAll('svg.jp-Kernelcore-svg g[data-kc-overlay]')].map(el => {
    const shape = el.querySelector(':scope > polygon, :scope > path, :scope > ellipse');
    const text = el.querySelector('text');
    const f = rgb(getComputedStyle(shape).fill), t = rgb(getComputedStyle(text).fill);
    const [hi, lo] = [lum(f), lum(t)].sort((a, b) => b - a);
    return { fill: f, text: t, contrast: (hi + 0.05) / (lo + 0.05), title: el.querySelector('title').textContent,
             label: text.textContent, folded: /jp-Kernelcore-collapsed/.test(el.getAttribute('class') || '') };
  });
}
"""

NAN_FILL = [214, 39, 140]


def _readable(painted: list[dict]) -> None:
    assert painted and all(p["contrast"] >= 4.5 for p in painted), [(p["label"], p["contrast"]) for p in painted]


def test_overlays_colour_the_graph_readably_in_both_themes_and_folded_groups_show_their_members_max(page, lab):
    name = write_notebook(lab, "graph_overlay.ipynb", [COMPARED, HEALTH])
    open_notebook(page, lab, name)
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    first, second = widget_cells(cells)[:2]
    compared = code_cell(page, first).locator(".jp-Kernelcore-ProgramGraph").first
    health = code_cell(page, second).locator(".jp-Kernelcore-ProgramGraph").first
    for view in (compared, health):
        view.scroll_into_view_if_needed()
        view.locator("svg.jp-Kernelcore-svg g[data-kc-overlay]").first.wait_for(timeout=60_000)
        view.locator(".jp-Kernelcore-fit").click()  # more of the graph in the screenshots
    compared.locator(".jp-Kernelcore-fit").click()  # again: all of it, the comparison's spread at a glance
    legend = compared.locator(".jp-Kernelcore-overlayLegend")
    assert "max_abs of b vs a" in legend.text_content() and "(log; values ≤ 0 take the lowest colour)" in legend.text_content()
    for which in THEMES:
        set_theme(page, which)
        painted = compared.evaluate(PAINTED_JS)
        _readable(painted)
        assert len({tuple(p["fill"]) for p in painted}) >= 3  # a gradient, not one colour
        assert all("max_abs of b vs a: " in p["title"] for p in painted)
        compared.scroll_into_view_if_needed()
        shot(compared, f"graph_overlay_compare_{which}")
        painted = health.evaluate(PAINTED_JS)
        _readable(painted)
        nan = [p for p in painted if p["fill"] == NAN_FILL]
        assert len(nan) == 1 and "grad max abs: NaN" in nan[0]["title"], painted
        assert "NaN" in health.locator(".jp-Kernelcore-overlayLegend").text_content()
        health.scroll_into_view_if_needed()
        shot(health, f"graph_overlay_health_{which}")
    old = health.locator("svg.jp-Kernelcore-svg").element_handle()
    health.get_by_role("button", name="Fold all").click()
    page.wait_for_function("(old) => { const s = document.querySelectorAll('.jp-Kernelcore-ProgramGraph svg.jp-Kernelcore-svg')[1];"
                           " return s && s !== old && s.querySelector('g[data-kc-overlay]'); }", arg=old, timeout=60_000)
    folded = [p for p in health.evaluate(PAINTED_JS) if p["folded"]]
    assert folded and all("the max of" in p["title"] for p in folded), folded
    forward = [p for p in folded if "NaN" in p["title"]]  # the group holding op 2 holds its NaN
    assert forward and all(p["fill"] == NAN_FILL for p in forward), folded
    _readable(folded)
    shot(health, "graph_overlay_health_folded_dark")
    set_theme(page, "light")
    shot(health, "graph_overlay_health_folded_light")
