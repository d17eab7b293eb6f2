"""The graph's comforts in a real JupyterLab: Export SVG / Export PNG (the whole drawing, every drawn label,
a PNG at 2x or capped with a note), keys while the canvas has the focus (arrows, + / -, 0, f, /, Escape;
none without the focus, never Ctrl+F), an opened DenseNet block at 1 px per point or more, and the
Debugger widget's graph opening legible in its pane. Screenshots in Light and Dark."""
from __future__ import annotations

import math
import re
import shutil
import struct
import subprocess
import time
import xml.etree.ElementTree as ET
import zlib

import pytest

from lab_helpers import ROOT, SHOTS, in_theme, shot_in_themes
from test_graph_legible import _write
from test_lab import code_cell, code_sources, errors_of, open_notebook, run_all, write_notebook

pytestmark = pytest.mark.browser

PADDLE = ROOT / ".venv-paddle" / "bin" / "python"
SVG = "{http://www.w3.org/2000/svg}"

# the view box, the screen scale (px per point), the drawn labels, and the focus
STATE_JS = r"""
(root) => {
  const canvas = root.querySelector('.jp-Kernelcore-graphCanvas');
  const svg = canvas.querySelector('svg.jp-Kernelcore-svg');
  const vb = svg.getAttribute('viewBox').split(/[\s,]+/).map(Number);
  const px = [...svg.querySelectorAll('g.node.jp-Kernelcore-op text')].map(t => parseFloat(getComputedStyle(t).fontSize) * svg.getScreenCTM().a);
  return { vb, scale: svg.getScreenCTM().a, minLabelPx: Math.min(...px),
           labels: [...svg.querySelectorAll('text')].map(t => t.textContent),
           focused: document.activeElement === canvas, outline: getComputedStyle(canvas).outlineStyle,
           search: document.activeElement === root.querySelector('.jp-Kernelcore-search') };
}
"""


def _vision(tmp_path_factory, name: str):
    if not PADDLE.exists():
        pytest.skip(f"needs .venv-paddle to write {name}")
    out = tmp_path_factory.mktemp(name)
    subprocess.run([str(PADDLE), str(ROOT / "tests" / "paddle_oracle" / "make_vision_models.py"), str(out), name],
                   check=True, capture_output=True, timeout=600)
    return out / f"{name}.pdmodel"


@pytest.fixture(scope="module")
def resnet18(tmp_path_factory):
    return _vision(tmp_path_factory, "resnet18")


@pytest.fixture(scope="module")
def densenet121(tmp_path_factory):
    return _vision(tmp_path_factory, "densenet121")


def _open_file(page, lab, path: str):
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
    factory = "Kernelcore Graph" if path.endswith(".json") else "Kernelcore Program"
    # this document's view (a restored workspace may hold another, hidden, file view)
    doc = page.evaluate("async ([path, factory]) => (await window.jupyterapp.commands.execute('docmanager:open', "
                        "{ path, factory })).id", [path, factory])
    view = page.locator(f'[id="{doc}"] .jp-Kernelcore-fileView')
    view.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=120_000)
    page.wait_for_timeout(300)
    return view


def _copy_in(lab, model) -> str:
    d = lab.root / "comforts"
    d.mkdir(exist_ok=True)
    shutil.copy(model, d / model.name)
    return f"comforts/{model.name}"


def _download(page, view, label: str):
    t0 = time.perf_counter()
    with page.expect_download(timeout=120_000) as info:
        view.get_by_role("button", name=label).click()
    d = info.value
    assert d.failure() is None, d.failure()
    data = open(d.path(), "rb").read()
    print(f"{label}: {d.suggested_filename}, {len(data):,} bytes, {time.perf_counter() - t0:.2f} s from the click")  # a figure, not a check
    return d.suggested_filename, data


def _svg_labels(data: bytes) -> tuple[ET.Element, list[str]]:
    root = ET.fromstring(data)  # parses, or the test fails here
    assert root.tag == f"{SVG}svg", root.tag
    return root, ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


def _png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after decoding every pixel row (8-bit RGBA, what a canvas writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, color = ihdr
    assert (depth, color) == (8, 6), ihdr
    assert len(zlib.decompress(idat)) == h * (1 + 4 * w)
    return w, h


def _png_scale(w: float, h: float) -> float:
    """graphexport.ts pngScale: 2x, capped at 16,384 px a side and 64 Mi pixels."""
    return min(2, 16384 / w, 16384 / h, math.sqrt(64 * 1024 * 1024 / (w * h)))


def _check_exports(page, view, stem: str) -> dict:
    state = view.evaluate(STATE_JS)
    name, svg_data = _download(page, view, "Export SVG")
    assert name == f"{stem}.svg"
    root, labels = _svg_labels(svg_data)
    assert sorted(state["labels"]) == sorted(labels), set(state["labels"]) ^ set(labels)
    vb = [float(x) for x in root.get("viewBox").split()]
    name, png_data = _download(page, view, "Export PNG")
    assert name == f"{stem}.png"
    scale = _png_scale(vb[2], vb[3])
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"export_{stem}.png").write_bytes(png_data)  # to look at
    assert _png_size(png_data) == (math.floor(vb[2] * scale), math.floor(vb[3] * scale))
    note = view.locator(".jp-Kernelcore-note").text_content()
    assert ("PNG drawn at" in note) == (scale < 2), note
    # the whole drawing, not the part in view
    assert vb[2] >= state["vb"][2] - 1 or vb[3] >= state["vb"][3] - 1, (vb, state["vb"])
    return {"svg": vb, "labels": len(labels), "png_scale": scale, "note": note}


def test_small_graph_exports_and_answers_keys_only_with_the_focus(page, lab):
    _write(lab, "comforts", "relu6.json", 6)
    view = _open_file(page, lab, "comforts/relu6.json")
    exported = _check_exports(page, view, "relu6")
    assert exported["labels"] >= 8 and exported["png_scale"] == 2, exported  # ops, vars and their edges
    canvas = view.locator(".jp-Kernelcore-graphCanvas")
    before = view.evaluate(STATE_JS)
    assert before["minLabelPx"] >= 11, before  # legible at the default zoom (kept)
    # no focus: the graph's keys do nothing
    page.keyboard.press("ArrowRight")
    page.keyboard.press("+")
    assert view.evaluate(STATE_JS)["vb"] == before["vb"]
    canvas.click(position={"x": 5, "y": 5})
    s = view.evaluate(STATE_JS)
    assert s["focused"] and s["outline"] == "solid", s
    x, y, w, h = s["vb"]
    page.keyboard.press("ArrowRight")
    assert view.evaluate(STATE_JS)["vb"][0] == pytest.approx(x + w / 8)
    page.keyboard.press("Shift+ArrowDown")
    assert view.evaluate(STATE_JS)["vb"][1] == pytest.approx(y + h / 2)
    page.keyboard.press("+")
    assert view.evaluate(STATE_JS)["vb"][2] == pytest.approx(w * 0.8)
    page.keyboard.press("-")
    page.keyboard.press("-")
    assert view.evaluate(STATE_JS)["vb"][2] == pytest.approx(w * 1.25)
    page.keyboard.press("0")
    assert view.evaluate(STATE_JS)["scale"] == pytest.approx(before["scale"], rel=1e-3)
    page.keyboard.press("f")
    page.keyboard.press("f")  # twice: the whole graph
    fitted = view.evaluate(STATE_JS)
    assert fitted["minLabelPx"] < before["minLabelPx"], fitted
    shot_in_themes(page, view, "graph_keys_focused")
    # the command palette's export acts on the graph that last had the focus
    with page.expect_download(timeout=60_000) as info:
        page.evaluate("() => window.jupyterapp.commands.execute('kernelcore:export-graph-svg')")
    assert info.value.suggested_filename == "relu6.svg"
    # in the dark theme the export is dark: its background and labels are the theme's, resolved
    with in_theme(page, "dark"):
        dark_bg = view.evaluate("(root) => getComputedStyle(root.querySelector('.jp-Kernelcore-graphCanvas')).backgroundColor")
        _, dark = _download(page, view, "Export SVG")
        root, _ = _svg_labels(dark)
        assert root[0].tag == f"{SVG}rect" and root[0].get("fill") == dark_bg, (root[0].attrib, dark_bg)
        label_fill = re.search(r"fill:\s*([^;]+)", next(root.iter(f"{SVG}text")).get("style")).group(1)
        assert label_fill != dark_bg and label_fill not in ("rgb(0, 0, 0)", "#000000"), label_fill
        _, png = _download(page, view, "Export PNG")
        (SHOTS / "export_relu6_dark.png").write_bytes(png)
    # Ctrl+F is JupyterLab's (its find box), not the graph's search
    page.keyboard.press("Control+f")
    assert not view.evaluate(STATE_JS)["search"]
    canvas.click(position={"x": 5, "y": 5})
    page.keyboard.press("/")
    s = view.evaluate(STATE_JS)
    assert s["search"] and not s["focused"], s
    page.keyboard.type("relu")
    assert view.locator(".jp-Kernelcore-search").input_value() == "relu"
    view.locator(".jp-Kernelcore-count", has_text=re.compile(r"\d+ match")).wait_for()
    page.keyboard.press("Escape")  # from the search box back to the graph
    assert view.evaluate(STATE_JS)["focused"]
    page.keyboard.press("Escape")  # the graph's: no search
    assert view.locator(".jp-Kernelcore-search").input_value() == ""
    # focus elsewhere again: keys pass by the graph
    view.locator(".jp-Kernelcore-search").focus()
    vb = view.evaluate(STATE_JS)["vb"]
    page.keyboard.press("ArrowLeft")
    assert view.evaluate(STATE_JS)["vb"] == vb
    assert view.evaluate(STATE_JS)["outline"] != "solid"
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_resnet18_exports_whole(page, lab, resnet18):
    view = _open_file(page, lab, _copy_in(lab, resnet18))
    exported = _check_exports(page, view, "resnet18")
    print("resnet18 export", exported)
    assert exported["labels"] > 100, exported
    shot_in_themes(page, view, "graph_export_resnet18")


def _drawn_top_fraction(view) -> float:
    """Where the highest node drawn in the canvas starts, as a fraction of the canvas's height from its top."""
    return view.evaluate("""(root) => {
        const c = root.querySelector('.jp-Kernelcore-graphCanvas').getBoundingClientRect();
        const tops = [...root.querySelectorAll('svg.jp-Kernelcore-svg g.node')].map(g => g.getBoundingClientRect())
            .filter(r => r.bottom > c.top && r.top < c.bottom && r.right > c.left && r.left < c.right)
            .map(r => Math.max(r.top, c.top) - c.top);
        return tops.length ? Math.min(...tops) / c.height : 1;
    }""")


def test_opening_a_densenet_block_keeps_it_readable(page, lab, densenet121):
    view = _open_file(page, lab, _copy_in(lab, densenet121))
    folded = view.locator("svg.jp-Kernelcore-svg g.node.jp-Kernelcore-collapsed")
    n = folded.count()
    assert n >= 2, n
    # zoomed out to see them all, then open the biggest folded group (a dense block)
    view.locator(".jp-Kernelcore-graphCanvas").click(position={"x": 5, "y": 5})
    for _ in range(6):
        page.keyboard.press("-")
    assert view.evaluate(STATE_JS)["scale"] < 1
    sizes = view.evaluate("""(root) => [...root.querySelectorAll('svg.jp-Kernelcore-svg g.node.jp-Kernelcore-collapsed')]
        .map(g => g.textContent)""")
    ops = [int(m.group(1)) if (m := re.search(r"(\d+) ops", s)) else 0 for s in sizes]
    biggest = ops.index(max(ops))
    old = view.locator("svg.jp-Kernelcore-svg").element_handle()
    folded.nth(biggest).locator("text").first.dispatch_event("click")
    page.wait_for_function("(old) => { const s = document.querySelector('.jp-Kernelcore-fileView svg.jp-Kernelcore-svg');"
                           " return s && s !== old; }", arg=old, timeout=120_000)
    page.wait_for_timeout(300)
    opened = view.evaluate(STATE_JS)
    print("densenet block opened", sizes[biggest], "scale", opened["scale"], "min label px", opened["minLabelPx"])
    assert opened["scale"] >= 1, opened["scale"]
    # the view holds the group, not empty space above it: a group taller than the view starts near its top
    assert _drawn_top_fraction(view) < 0.2, _drawn_top_fraction(view)
    # Enter folds the group just opened, and opens it again (the canvas has the focus)
    view.locator(".jp-Kernelcore-graphCanvas").click(position={"x": 5, "y": 5})
    drawn = view.locator("svg.jp-Kernelcore-svg g.node")
    counts = [drawn.count()]
    for _ in range(2):
        old = view.locator("svg.jp-Kernelcore-svg").element_handle()
        page.keyboard.press("Enter")
        page.wait_for_function("(old) => { const s = document.querySelector('.jp-Kernelcore-fileView svg.jp-Kernelcore-svg');"
                               " return s && s !== old; }", arg=old, timeout=120_000)
        counts.append(drawn.count())
    assert counts[1] < counts[0] == counts[2], counts  # folded, then open again
    assert view.evaluate(STATE_JS)["scale"] >= 1
    shot_in_themes(page, view, "graph_densenet_block_opened")
    _check_exports(page, view, "densenet121")


def test_the_debugger_widgets_graph_opens_legible_in_its_pane(page, lab):
    """Drawn while it has no size (hidden), the Debugger widget's graph opens legible once shown:
    it used to keep the whole-graph view it got at no size, small in its pane."""
    setup = code_sources("rnn_step_debugging.ipynb")[0]
    session = ("import kernelcore_widgets\nfrom kernelcore_widgets import Debugger\n"
               "Debugger(kc.debug(prog, feed=feed, fetch_list=[last], scope=scope))")
    open_notebook(page, lab, write_notebook(lab, "debugger_graph_opens.ipynb", [setup, session]))
    # the output drawn with no size (as in a hidden tab or a collapsed output), shown later
    page.evaluate("""() => { const s = document.createElement('style'); s.id = 'kc-test-hide';
                             s.textContent = '.jp-Kernelcore-Debugger { display: none !important }'; document.head.appendChild(s); }""")
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    graph = code_cell(page, 1).locator(".jp-Kernelcore-Debugger .jp-Kernelcore-ProgramGraph").first
    graph.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(state="attached", timeout=60_000)
    page.wait_for_timeout(500)
    hidden = graph.evaluate("(root) => root.querySelector('.jp-Kernelcore-graphCanvas').clientWidth")
    print("canvas width while hidden", hidden)
    page.evaluate("() => document.getElementById('kc-test-hide').remove()")
    graph.locator("svg.jp-Kernelcore-svg g.node").first.wait_for(timeout=30_000)
    page.wait_for_timeout(500)
    s = graph.evaluate(STATE_JS)
    print("debugger graph", s["scale"], s["minLabelPx"])
    assert round(s["minLabelPx"], 2) >= 11, s
    shot_in_themes(page, code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first, "graph_in_debugger_widget")
    # the debugger's shortcuts still move the session while the graph has the focus
    dbg = code_cell(page, 1).locator(".jp-Kernelcore-Debugger").first
    where = dbg.locator(".jp-Kernelcore-position").text_content()
    graph.locator(".jp-Kernelcore-graphCanvas").click(position={"x": 5, "y": 5})
    assert graph.evaluate(STATE_JS)["focused"]
    page.keyboard.press("Control+Shift+F11")  # kernelcore:step
    page.wait_for_function("([el, was]) => el.textContent !== was", arg=[dbg.locator(".jp-Kernelcore-position").element_handle(), where],
                           timeout=30_000)
