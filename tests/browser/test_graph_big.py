"""A big training program in JupyterLab: it opens as its stages and repeated layers, a folded group opens
on a click, and the graph's labels keep their contrast in JupyterLab Light and Dark (screenshots of both)."""
from __future__ import annotations

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from lab_helpers import THEMES, set_theme, shot

LAYERS = 120
SOURCE = f"""import kernelcore as kc
from kernelcore_widgets import ProgramGraph
L = kc.layers
main, startup = kc.Program(), kc.Program()
with kc.program_guard(main, startup):
    h = L.data("x", [-1, 8])
    for _ in range({LAYERS}):
        h = L.fc(h, 8, act="relu")
    kc.optimizer.SGD(learning_rate=0.1).minimize(L.mean(h), startup)
ProgramGraph(main)"""

# WCAG contrast of each drawn label against its own node's fill, from the computed styles.
CONTRAST_JS = r"""
(root) => {
  const rgb = s => { const m = s.match(/[\d.]+/g); return m ? m.slice(0, 3).map(Number) : null; };
  const parse = c => {
    // color-mix() may compute to color(srgb r g b) with 0..1 components
    const m = c.match(/color\(srgb ([\d.]+) ([\d.]+) ([\d.]+)/);
    if (m) return [Number(m[1]) * 255, Number(m[2]) * 255, Number(m[3]) * 255];
    return rgb(c);
  };
  const lum = ([r, g, b]) => { const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const out = [];
  for (const g of root.querySelectorAll('svg.jp-Kernelcore-svg g.node')) {
    const shape = g.querySelector(':scope > polygon, :scope > path, :scope > ellipse');
    const text = g.querySelector('text');
    if (!shape || !text) continue;
    const fill = parse(getComputedStyle(shape).fill);
    const fg = parse(getComputedStyle(text).fill);
    if (!fill || !fg) continue;
    out.push({ cls: g.getAttribute('class'), ratio: ratio(fill, fg), fill: getComputedStyle(shape).fill, fg: getComputedStyle(text).fill });
  }
  return out;
}
"""


def test_big_program_opens_by_layers_and_reads_in_light_and_dark(page, lab):
    nb = new_notebook(cells=[new_code_cell(SOURCE)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.write(nb, lab.root / "big_graph.ipynb")
    page.goto(f"{lab.url}/lab/tree/big_graph.ipynb?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
        const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
        return !!k && k.status === 'idle' && w.content.widgets.length > 0; }""", timeout=90_000)
    set_theme(page, "light")
    page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 0;
                             return window.jupyterapp.commands.execute('notebook:run-cell'); }""")
    view = page.locator(".jp-Kernelcore-ProgramGraph").first
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=60_000)
    # stages open, the 120 alike layers one folded node per stage
    repeats = view.locator("svg g.node.jp-Kernelcore-gkind-repeat")
    assert repeats.count() == 3
    assert all(f"\u00d7{LAYERS}" in t for t in repeats.all_text_contents())
    stages = view.locator("svg g.cluster.jp-Kernelcore-gkind-stage > text").all_text_contents()
    assert [s.split()[0] for s in stages] == ["forward", "backward", "optimize"]
    assert view.locator("svg g.node").count() < 30
    # a click opens the forward repeat: its layers in ranges of at most 48
    old = view.locator("svg.jp-Kernelcore-svg").element_handle()
    repeats.first.locator("text").first.click()
    page.wait_for_function("(old) => { const s = document.querySelector('.jp-Kernelcore-ProgramGraph svg.jp-Kernelcore-svg');"
                           " return s && s !== old && s.querySelector('g.node.jp-Kernelcore-gkind-range'); }", arg=old,
                           timeout=60_000)
    assert view.locator("svg g.node.jp-Kernelcore-gkind-range").count() == 3  # 48 + 48 + 24
    assert "fc \u00d7120" in view.locator(".jp-Kernelcore-crumbs").text_content()
    for which in THEMES:
        set_theme(page, which)
        found = view.evaluate(CONTRAST_JS)
        assert len(found) >= 6
        worst = min(found, key=lambda f: f["ratio"])
        assert worst["ratio"] >= 4.5, f"{which}: label contrast {worst['ratio']:.2f} on {worst}"
        shot(view, f"big_graph_{which}")
    set_theme(page, "light")
