"""A small program's graph opens legible: labels at 11 CSS px or more (not shrunk to fit a small canvas),
not blown up past 15 px to fill a big one, and no overview box over a narrow canvas. Screenshots in
Light and Dark."""
from __future__ import annotations

import json
import re

from lab_helpers import shot_in_themes

# the smallest and largest on-screen size of the op labels (font size times the SVG's screen scale), and
# whether the overview (minimap) is shown
MEASURE_JS = r"""
(root) => {
  const svg = root.querySelector('svg.jp-Kernelcore-svg');
  const scale = svg.getScreenCTM().a;
  const px = [...svg.querySelectorAll('g.node.jp-Kernelcore-op text')]
    .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  const mini = root.querySelector('.jp-Kernelcore-minimap');
  const canvas = root.querySelector('.jp-Kernelcore-graphCanvas').getBoundingClientRect();
  return { min: Math.min(...px), max: Math.max(...px), labels: px.length,
           minimap: !!mini && !mini.classList.contains('jp-Kernelcore-hidden'),
           canvas: [Math.round(canvas.width), Math.round(canvas.height)] };
}
"""


def _relu_chain(n: int) -> dict:
    """data -> n x relu -> fetch, in the shape Paddle 3 writes (see tests/test_pir_reader.py)."""
    t = {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, [-1, 4], "NCHW", [], 0]}
    ops = [{"#": "1.data", "A": [{"N": "name", "AT": {"#": "0.a_str", "D": "x"}}], "I": [], "O": [{"%": 1, "TT": t}]}]
    ops += [{"#": "1.relu", "A": [], "I": [{"%": i}], "O": [{"%": i + 1, "TT": t}]} for i in range(1, n + 1)]
    ops.append({"#": "1.fetch", "A": [{"N": "col", "AT": {"#": "0.a_i32", "D": 0}}], "I": [{"%": n + 1}],
                "O": [{"%": n + 2, "TT": t}]})
    return {"base_code": {"magic": "pir", "version": 4, "trainable": False},
            "program": {"regions": [{"#": "region_0", "blocks": [{"#": "block_0", "args": [], "ops": ops}]}]}}


def _open_graph(page, lab, folder: str, name: str) -> dict:
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    page.evaluate("(path) => window.jupyterapp.commands.execute('docmanager:open', "
                  "{ path, factory: 'Kernelcore Graph' })", f"{folder}/{name}")
    view = page.locator(".jp-Kernelcore-fileView")
    view.locator("svg g.node.jp-Kernelcore-op").first.wait_for(timeout=60_000)
    return view.evaluate(MEASURE_JS)


def _write(lab, folder: str, name: str, n_ops: int) -> None:
    d = lab.root / folder
    d.mkdir(exist_ok=True)
    (d / name).write_text(json.dumps(_relu_chain(n_ops)))


def test_a_few_ops_in_a_big_canvas_are_not_blown_up(page, lab):
    _write(lab, "legible", "relu1.json", 1)
    m = _open_graph(page, lab, "legible", "relu1.json")
    assert m["labels"] == 3, m
    assert round(m["min"], 2) >= 11 and round(m["max"], 2) <= 15, m
    shot_in_themes(page, page, "graph_small_big_canvas")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_six_ops_in_a_narrow_canvas_stay_legible_without_an_overview(page, lab):
    _write(lab, "legible", "relu6.json", 6)
    page.set_viewport_size({"width": 800, "height": 640})
    m = _open_graph(page, lab, "legible", "relu6.json")
    assert m["labels"] == 8, m
    assert round(m["min"], 2) >= 11, m
    assert m["canvas"][0] < 540 and not m["minimap"], m
    shot_in_themes(page, page, "graph_six_ops_narrow")
    # the rest of the graph is reachable: Fit (twice: whatever the scale) shows all of it, smaller
    fit = page.locator(".jp-Kernelcore-fileView button", has_text=re.compile(r"^Fit$"))
    fit.click()
    fit.click()
    assert page.locator(".jp-Kernelcore-fileView").evaluate(MEASURE_JS)["min"] < m["min"]
