"""From display to an interactive program graph, in a real JupyterLab and headless Chromium.

    .venv/bin/python bench/browser_graph.py            # ~6.5 min (the 5,000-op unfold alone takes 15-20 s)
    .venv/bin/python bench/browser_graph.py --quick    # smoke run, ~2.5 min, rough figures, no big unfolds
    .venv/bin/python bench/browser_graph.py --big      # Paddle's 5,123-op MLP and a 51,230-op program: time to
                                                       # visible, opening groups, search, expand all, longest
                                                       # main-thread task (bench/browser_graph_big.py)

Programs: training programs of the digits shape (LSTM encoders over [8, B, 8], a stack of relu fc layers,
softmax cross entropy, mean, SGD's `minimize`), built with kernelcore's API, with about 100, 1,000 and 5,000
ops in all (forward, `*_grad` and `sgd` ops; each LSTM adds a step block and its gradient block as
sub-blocks). They are saved as .pdmodel files; the notebook's kernel loads them (`kc.load_program`) before
the timed cells run, so building is not timed.

Per size, a fresh page opens a notebook (its own kernel) with three cells: the setup cell (load the
program), `prog` (the program MIME output, drawn by the labextension's renderer with no widget), and
`ProgramGraph(prog)` (the anywidget). Each timed display clears the cell's output, runs the cell
(`notebook:run-cell`) and records, with `performance.now()` in the page:

- **display** (t = 0): the moment the display message reaches the page's kernel WebSocket (a hook on the
  socket's onmessage, before JupyterLab deserializes it): for `prog` the execute_result carrying
  application/vnd.kernelcore.program+json; for the widget the execute_result carrying the widget view
  (the output starts rendering the widget; its model's comm_open, with the view's ESM, and the `program`
  update came just before it). Kernel-side time (Python building the JSON, the text/html fallback) is
  before t = 0 and printed apart ("kernel").
- **in DOM**: a MutationObserver on the cell sees `svg.jp-Kernelcore-svg` inside the view.
- **painted**: the first frame after that (requestAnimationFrame, then a MessageChannel task: style,
  layout and paint of that frame are done and the main thread is free to take a click).
- **interactive**: the first click answered. As soon as the graph is painted the page dispatches a click
  on the first op node drawn. For the widget the answer is Python's details for that op (the `select`
  message round trip through the kernel: the details pane says "from Python"); for the MIME output
  the answer is the local details (no kernel). A program of more than 300 nodes in a block opens with
  every group of <= 100 ops folded (docs/frontend-contract.md) and shows no op node: there
  "interactive" is "painted" (the folded groups are clickable: a click on one starts its unfold at once),
  and the unfold is timed on its own, once per size (`--quick`: not for 5,000 ops).
- **unfold** (once per size, widget): a click on the first folded group -> the view's new SVG painted
  with that group open, then a click on an op inside -> details from Python (the select round trip).

The first display of each kind in a fresh page is "cold" (the MIME renderer then compiles Graphviz's
WASM once per page; the widget's ESM is imported anew for every widget, so it compiles it every time);
the table gives the median of the later repeats and the cold figure beside it.

Breakdown (same page, same build of the front end's sources): labextension/src/graph.ts and graphpane.ts
bundled with esbuild and driven directly: ProgramGraphModel construction, toDot, Graphviz WASM layout
(`viz.renderString`), DOMParser of the SVG text, sanitizeSvg, GraphPane._install + insertion, forced
style/layout, and the next frame; for the default (folded) view, for the view with its first group
unfolded, and for the whole graph where that is small enough. It needs labextension/node_modules
(esbuild); without it the breakdown is skipped. System `dot -Tsvg` (if /usr/bin/dot exists) lays out
the very DOT texts the browser laid out, for reference, and Python's `program_json()["dot"]` (the full,
unfolded graph) under a time limit.

Requirements: the front end built (`./dev build`: widgets/kernelcore_widgets/static/ProgramGraph.js and
the labextension installed into the venv), /usr/bin/chromium, playwright (never `playwright install`).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT)]

import kernelcore as kc  # noqa: E402
from kernelcore.view.display import PROGRAM_MIME, program_json  # noqa: E402
from _lab_server import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, LabServer  # noqa: E402,F401  (the benches' shared lab)

STATIC = ROOT / "widgets" / "kernelcore_widgets" / "static"
LABEXT = ROOT / "labextension"
ESBUILD = LABEXT / "node_modules" / "@esbuild" / "linux-x64" / "bin" / "esbuild"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
SIZES = (100, 1_000, 5_000)
# (ops, what the target asks for, seconds)
TARGETS = {1_000: 0.5, 5_000: 2.0}

# ---------------------------------------------------------------------------------------------------------
# programs


def _build(n_fc: int, n_rnn: int) -> kc.Program:
    L = kc.layers
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x = L.data("x", [8, -1, 8])
        label = L.data("label", [-1, 1], "int64")
        feats = [L.sequence_last(L.lstm(x, 16)) for _ in range(n_rnn)]
        h = feats[0]
        for f in feats[1:]:
            h = kc.op.elementwise_add(h, f)
        for _ in range(n_fc):
            h = L.fc(h, 16, act="relu")
        loss = L.mean(L.softmax_with_cross_entropy(L.fc(h, 10), label))
        kc.optimizer.SGD(learning_rate=0.01).minimize(loss, startup)
    return main


def op_count(prog: kc.Program) -> int:
    return sum(len(b.ops) for b in prog.blocks)


def build_program(target_ops: int) -> kc.Program:
    """A training program with about `target_ops` ops in all blocks (each relu fc layer adds 8 ops:
    mul, elementwise_add, relu, their three gradients and two sgd)."""
    n_rnn = 1 if target_ops <= 300 else 3
    base = op_count(_build(0, n_rnn))
    return _build(max(0, round((target_ops - base) / 8)), n_rnn)


# ---------------------------------------------------------------------------------------------------------
# JupyterLab (as tests/browser/conftest.py starts it)


# ---------------------------------------------------------------------------------------------------------
# in the page

# Before any page script: stamp kernel WebSocket messages with their arrival time, and time the SVG parse
# of @viz-js/viz (renderSVGElement = Graphviz layout, then DOMParser) and WebAssembly instantiation.
INIT_JS = r"""
(() => {
  const B = (window.__kcb = { msgs: [], parses: [], wasm: [], lastWs: 0, lastWsBytes: 0 });
  const now = () => performance.now();
  const d = Object.getOwnPropertyDescriptor(WebSocket.prototype, 'onmessage');
  Object.defineProperty(WebSocket.prototype, 'onmessage', {
    configurable: true, enumerable: d.enumerable,
    get() { return d.get.call(this); },
    set(fn) {
      d.set.call(this, typeof fn !== 'function' ? fn : function (ev) {
        B.lastWs = now();
        const data = ev.data;
        B.lastWsBytes = data ? (data.byteLength ?? data.size ?? data.length ?? 0) : 0;
        return fn.call(this, ev);
      });
    }
  });
  const parse = DOMParser.prototype.parseFromString;
  DOMParser.prototype.parseFromString = function (s, type) {
    const t0 = now();
    const r = parse.call(this, s, type);
    if (type === 'image/svg+xml') B.parses.push({ t0, t1: now(), chars: s.length });
    return r;
  };
  for (const name of ['instantiate', 'instantiateStreaming', 'compile']) {
    const f = WebAssembly[name];
    if (typeof f !== 'function') continue;
    WebAssembly[name] = function (...a) {
      const t0 = now();
      const p = f.apply(this, a);
      p.then(() => B.wasm.push({ name, t0, t1: now() }), () => undefined);
      return p;
    };
  }
})();
"""

KERNEL_READY = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && !!w.content && w.content.widgets.length > 0;
}"""

HOOK_KERNEL = """() => {
  const B = window.__kcb;
  const k = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  if (B.hooked === k) return;
  B.hooked = k;
  k.anyMessage.connect((_, a) => {
    if (a.direction !== 'recv') return;
    const m = a.msg, c = m.content || {};
    B.msgs.push({ type: m.header.msg_type, t: B.lastWs, t_emit: performance.now(), bytes: B.lastWsBytes,
                  mime: Object.keys(c.data || {}), target: c.target_name || null,
                  method: (c.data && c.data.method) || null, state: c.execution_state || null,
                  model: (c.data && c.data.state && c.data.state._model_name) || null });
  });
}"""

# Run code cell `cell` and time display -> in DOM -> painted -> first click answered (see the docstring).
MEASURE_JS = r"""
async ({ cell, kind, unfold, timeoutMs }) => {
  const B = window.__kcb;
  const app = window.jupyterapp;
  const nb = app.shell.currentWidget.content;
  const c = nb.widgets.filter(w => w.model.type === 'code')[cell];
  const now = () => performance.now();
  const frame = () => new Promise(res => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => res(now());
    ch.port2.postMessage(0);
  }));
  const until = (pred, what, ms = timeoutMs) => new Promise((res, rej) => {
    let obs = null, iv = null, to = null;
    const done = () => { if (obs) obs.disconnect(); clearInterval(iv); clearTimeout(to); };
    const check = () => {
      let v = null;
      try { v = pred(); } catch (e) { v = null; }
      if (v) { const t = now(); done(); res([t, v]); return true; }
      return false;
    };
    if (check()) return;
    obs = new MutationObserver(check);
    obs.observe(c.node, { childList: true, subtree: true, characterData: true, attributes: true });
    iv = setInterval(check, 25);
    to = setTimeout(() => { done(); rej(new Error(`timed out after ${ms} ms waiting for ${what}`)); }, ms);
  });
  const click = el => el.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true, view: window }));
  const head = root => root.querySelector('.jp-Kernelcore-details .jp-Kernelcore-detailsHead');
  const answered = (root, fromPython) => () => {
    const h = head(root);
    return h && (fromPython ? h.textContent.includes('from Python') : true) ? h.textContent : null;
  };

  c.model.outputs.clear();
  await new Promise(r => setTimeout(r, 500));
  await frame();
  B.msgs = []; B.parses = []; B.wasm = [];
  nb.activeCellIndex = nb.widgets.indexOf(c);
  const r = { kind, tExec: now() };
  app.commands.execute('notebook:run-cell');
  const [tDom, svg] = await until(() => c.node.querySelector('.jp-Kernelcore-ProgramGraph svg.jp-Kernelcore-svg'), 'the SVG');
  r.tDom = tDom;
  r.tPaint = await frame();
  const root = svg.closest('.jp-Kernelcore-ProgramGraph');
  r.nodes = svg.querySelectorAll('g.node').length;
  r.edges = svg.querySelectorAll('g.edge').length;
  r.folded = svg.querySelectorAll('g.node.jp-Kernelcore-collapsed').length;
  const fromPython = kind === 'widget';
  const op = svg.querySelector('g.node.jp-Kernelcore-op');
  if (op) {
    r.tClick = now();
    click(op.querySelector('text') || op);
    r.tLocal = now();  // the view shows what the program says at once; Python's answer comes later
    const [tAnswer, text] = await until(answered(root, fromPython), 'the details');
    r.tAnswer = tAnswer; r.answer = text;
    r.tAnswerPaint = await frame();
  }
  if (!op && unfold) {
    const g = svg.querySelector('g.node.jp-Kernelcore-collapsed');
    const status = root.querySelector('.jp-Kernelcore-status');
    r.unfoldLabel = (g.querySelector('text') || g).textContent;
    r.tUnfoldClick = now();
    click(g.querySelector('text') || g);
    r.tUnfoldAck = now();
    r.ackStatus = status ? status.textContent : null;
    const [t2, svg2] = await until(() => {
      const s = root.querySelector('svg.jp-Kernelcore-svg');
      return s && s !== svg ? s : null;
    }, 'the unfolded SVG');
    r.tUnfoldDom = t2;
    r.tUnfoldPaint = await frame();
    r.unfoldNodes = svg2.querySelectorAll('g.node').length;
    r.unfoldEdges = svg2.querySelectorAll('g.edge').length;
    const op2 = svg2.querySelector('g.node.jp-Kernelcore-op');
    if (op2) {
      r.tClick = now();
      click(op2.querySelector('text') || op2);
      r.tLocal = now();
      const [tAnswer, text] = await until(answered(root, fromPython), 'the details');
      r.tAnswer = tAnswer; r.answer = text;
      r.tAnswerPaint = await frame();
    }
  }
  await new Promise(res => setTimeout(res, 300));  // late messages (e.g. an echoed `collapsed`)
  r.status = (root.querySelector('.jp-Kernelcore-status') || {}).textContent || '';
  r.msgs = B.msgs.slice(); r.parses = B.parses.slice(); r.wasm = B.wasm.slice();
  return r;
}
"""

# The front end's graph code driven directly (the esbuild bundle of bench's entry): where the time goes.
HARNESS_ENTRY = """
import { ProgramGraphModel } from '%(src)s/graph';
import { GraphPane } from '%(src)s/graphpane';
import { sanitizeSvg } from '%(src)s/dom';
import { setLayoutEngine } from '%(src)s/layout';
import { instance } from '%(viz)s';
(globalThis as any).__kcHarness = { ProgramGraphModel, GraphPane, sanitizeSvg, setLayoutEngine, instance };
"""

HARNESS_JS = r"""
async ({ pj, mode, reps }) => {
  const H = window.__kcHarness;
  const now = () => performance.now();
  const frame = () => new Promise(res => requestAnimationFrame(() => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => res(now());
    ch.port2.postMessage(0);
  }));
  if (!window.__kcViz) {
    const t = now();
    window.__kcViz = await H.instance();
    window.__kcVizFirst = now() - t;
  }
  const viz = window.__kcViz;
  const runs = [];
  let dotText = null, info = null;
  for (let i = 0; i < reps; i++) {
    const host = document.createElement('div');
    host.className = 'jp-Kernelcore-ProgramGraph jp-Kernelcore-view';
    host.style.cssText = 'position:fixed;left:0;top:0;width:1400px;height:800px;z-index:100000;background:#fff;overflow:hidden';
    document.body.appendChild(host);
    await frame();
    const r = {};
    let t0 = now();
    const g = new H.ProgramGraphModel(pj);
    r.model = now() - t0;
    const col = new Set(mode === 'full' ? [] : g.defaultCollapsed());
    if (mode === 'unfold1') {
      const first = [...col].find(id => id.startsWith('group_'));
      if (!first) return { skipped: 'no folded group' };
      col.delete(first);
    }
    const m = {};
    H.setLayoutEngine(async dot => {
      m.e0 = now();
      const s = viz.renderString(dot, { format: 'svg', engine: 'dot' });
      m.e1 = now();
      const svg = new DOMParser().parseFromString(s, 'image/svg+xml').documentElement;
      m.e2 = now();
      H.sanitizeSvg(svg);
      m.e3 = now();
      m.chars = s.length;
      if (dotText === null) dotText = dot;
      return svg;
    });
    const pane = new H.GraphPane();
    host.appendChild(pane.el);
    const s0 = now();
    await pane.show(g, col);
    const s1 = now();
    H.setLayoutEngine(null);
    if (!pane.svg) return { error: pane.canvas.textContent };
    r.todot = m.e0 - s0;          // toDot (inside GraphPane.show)
    r.layout = m.e1 - m.e0;       // Graphviz WASM: parse DOT, layout, write SVG text
    r.parse = m.e2 - m.e1;        // DOMParser of the SVG text
    r.sanitize = m.e3 - m.e2;     // sanitizeSvg
    r.install = s1 - m.e3;        // GraphPane._install: id maps, insertion into the page
    t0 = now();
    void document.body.offsetHeight;
    pane.svg.getBBox();
    r.style_layout = now() - t0;  // forced style recalc + layout
    t0 = now();
    r.frame = (await frame()) - t0;  // the next frame (paint)
    r.total = r.model + (now() - s0);
    info = { nodes: pane.svg.querySelectorAll('g.node').length, edges: pane.svg.querySelectorAll('g.edge').length,
             svg_chars: m.chars, dot_chars: dotText.length, graph_nodes: g.nodes.size, clusters: g.clusters.size,
             folded: col.size };
    runs.push(r);
    pane.dispose();
    host.remove();
    await frame();
  }
  return { runs, info, dot: dotText, viz_first_instance_ms: window.__kcVizFirst, graphviz: viz.graphvizVersion };
}
"""

VIZ_INIT_JS = r"""
async (reps) => {
  const H = window.__kcHarness;
  const out = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    await H.instance();
    out.push(performance.now() - t);
  }
  return out;
}
"""

# What anywidget does with the view's `_esm` for every widget: a Blob URL and a dynamic import.
ESM_IMPORT_JS = r"""
async ({ src, reps }) => {
  const out = [];
  for (let i = 0; i < reps; i++) {
    const t = performance.now();
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    await import(url);
    URL.revokeObjectURL(url);
    out.push(performance.now() - t);
  }
  return out;
}
"""


def build_harness(tmp: Path) -> str | None:
    """The IIFE bundle of labextension/src's graph code with @viz-js/viz, or None (no esbuild)."""
    viz = LABEXT / "node_modules" / "@viz-js" / "viz" / "dist" / "viz.js"
    if not ESBUILD.is_file() or not viz.is_file():
        return None
    entry = tmp / "harness_entry.ts"
    entry.write_text(HARNESS_ENTRY % {"src": (LABEXT / "src").as_posix(), "viz": viz.as_posix()})
    out = tmp / "harness.js"
    p = subprocess.run([str(ESBUILD), str(entry), "--bundle", "--format=iife", "--platform=browser",
                        "--target=es2021", f"--outfile={out}", "--log-level=error"], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"(breakdown skipped: esbuild failed: {p.stderr.strip()[:300]})")
        return None
    return out.read_text()


# ---------------------------------------------------------------------------------------------------------
# system dot

def time_dot(dot_text: str, path: Path, reps: int, timeout: float) -> dict:
    """Median wall seconds of `dot -Tsvg` on `dot_text` ({"s": ..} or {"timeout": limit})."""
    path.write_text(dot_text)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        try:
            subprocess.run(["/usr/bin/dot", "-Tsvg", str(path), "-o", os.devnull], check=True, timeout=timeout,
                           capture_output=True)
        except subprocess.TimeoutExpired:
            return {"timeout": timeout}
        times.append(time.perf_counter() - t)
        if times[-1] > timeout / 3:
            break
    return {"s": statistics.median(times), "n": len(times)}


def dot_version() -> str | None:
    if not os.path.exists("/usr/bin/dot"):
        return None
    p = subprocess.run(["/usr/bin/dot", "-V"], capture_output=True, text=True)
    return (p.stderr or p.stdout).strip()


# ---------------------------------------------------------------------------------------------------------
# one display's figures

def figures(r: dict) -> dict:
    """Seconds from the display message to each milestone (see the docstring)."""
    msgs = r["msgs"]
    mime = PROGRAM_MIME if r["kind"] == "mime" else WIDGET_MIME
    disp = next((m for m in msgs if m["type"] in ("execute_result", "display_data") and mime in m["mime"]), None)
    if disp is None:
        raise RuntimeError(f"no display message seen: {[m['type'] for m in msgs]}")
    t0 = disp["t"]
    # what reached the page for this display: the MIME bundle; for the widget its comm_open (state, with the
    # view's ESM) and the state updates before the display message (ProgramGraph sets `program` after
    # opening its comm)
    payload = [disp] if r["kind"] == "mime" else [
        m for m in msgs if m["t"] <= t0 and ((m["type"] == "comm_open" and m["model"] == "AnyModel")
                                             or (m["type"] == "comm_msg" and m["method"] == "update"))]
    opened = next((m for m in msgs if m["type"] == "comm_open" and m["model"] == "AnyModel"), None)
    f = {"kernel": (t0 - r["tExec"]) / 1e3, "msg_bytes": sum(m["bytes"] for m in payload),
         "deserialize": sum(m["t_emit"] - m["t"] for m in payload) / 1e3,
         "model_lead": (t0 - opened["t"]) / 1e3 if opened else None,
         "parse_list": [((p["t0"] - t0) / 1e3, (p["t1"] - p["t0"]) / 1e3, p["chars"]) for p in r["parses"]],
         "dom": (r["tDom"] - t0) / 1e3, "painted": (r["tPaint"] - t0) / 1e3, "nodes": r["nodes"], "edges": r["edges"],
         "folded": r["folded"], "status": r["status"]}
    # the view's SVGs (JupyterLab parses its small SVG icons through DOMParser too)
    parses = [p for p in r["parses"] if p["t0"] >= t0 and p["chars"] >= 1000]
    f["parses"] = len(parses)
    if parses:
        p = parses[0]
        f["layout_done"] = (p["t0"] - t0) / 1e3   # Graphviz finished (its SVG text handed to DOMParser)
        f["svg_parse"] = (p["t1"] - p["t0"]) / 1e3
        f["svg_chars"] = p["chars"]
    wasm = [w for w in r["wasm"] if opened is None or w["t0"] >= opened["t"]]
    if wasm:
        f["wasm"] = sum(w["t1"] - w["t0"] for w in wasm) / 1e3
    if "tUnfoldClick" in r:
        f["unfold_ack"] = (r["tUnfoldAck"] - r["tUnfoldClick"]) / 1e3
        f["unfold_dom"] = (r["tUnfoldDom"] - r["tUnfoldClick"]) / 1e3
        f["unfold_painted"] = (r["tUnfoldPaint"] - r["tUnfoldClick"]) / 1e3
        f["unfold_nodes"], f["unfold_edges"] = r["unfoldNodes"], r["unfoldEdges"]
        f["unfold_label"] = r["unfoldLabel"]
        unfold_parses = [p for p in r["parses"] if p["t0"] >= r["tUnfoldClick"] and p["chars"] >= 1000]
        if unfold_parses:
            f["unfold_layout_done"] = (unfold_parses[0]["t0"] - r["tUnfoldClick"]) / 1e3
        f["unfold_parses"] = len(unfold_parses)
    if "tAnswer" in r:
        f["select"] = (r["tAnswer"] - r["tClick"]) / 1e3
        f["select_painted"] = (r["tAnswerPaint"] - r["tClick"]) / 1e3
        if "tUnfoldClick" not in r:
            f["interactive"] = (r["tAnswer"] - t0) / 1e3
    if "tUnfoldClick" not in r and "tAnswer" not in r:
        f["interactive"] = f["painted"]  # folded: no op drawn, the groups answer clicks once painted
    late = [m for m in r["msgs"] if m["type"] == "comm_msg" and m["t"] > t0]
    f["comm_msgs_in"] = len(late)
    return f


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


# ---------------------------------------------------------------------------------------------------------
def run(args) -> dict:
    from playwright.sync_api import sync_playwright
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    tmp = Path(tempfile.mkdtemp(prefix="kc_browser_graph_"))
    result: dict = {"sizes": {}, "load": {}}
    dotv = None if args.no_dot else dot_version()
    result["dot_version"] = dotv
    result["load"]["start"] = os.getloadavg()[0]

    # programs
    progs = {}
    for n in args.sizes:
        t = time.perf_counter()
        built = build_program(n)
        kc.save_program(built, tmp / f"prog_{n}.pdmodel")
        prog = kc.load_program(tmp / f"prog_{n}.pdmodel")  # what the kernel shows (its var order is the file's)
        pj = program_json(prog)
        nodes = sum(len(b["ops"]) + len(b["vars"]) for b in pj["blocks"])
        progs[n] = (prog, pj)
        result["sizes"][n] = {"ops": op_count(prog), "blocks": prog.num_blocks, "nodes": nodes,
                              "json_bytes": len(json.dumps(pj)), "python_dot_bytes": len(pj["dot"] or ""),
                              "build_s": time.perf_counter() - t}
        print(f"built {n}: {op_count(prog)} ops, {nodes} ops+vars in {prog.num_blocks} blocks "
              f"({time.perf_counter() - t:.1f} s)", flush=True)

    harness = build_harness(tmp)
    lab = LabServer(tmp / "lab")
    for n in args.sizes:
        shutil.copy(tmp / f"prog_{n}.pdmodel", lab.root / f"prog_{n}.pdmodel")
        nb = new_notebook(cells=[
            new_code_cell(f"import kernelcore as kc\nfrom kernelcore_widgets import ProgramGraph\n"
                          f"prog = kc.load_program('prog_{n}.pdmodel')\nlen(prog.blocks)"),
            new_code_cell("prog"),
            new_code_cell("ProgramGraph(prog)")],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
                      "language_info": {"name": "python"}})
        nbformat.write(nb, lab.root / f"graph_{n}.ipynb")

    try:
        lab.start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            result["chromium"] = browser.version
            try:
                for n in args.sizes:
                    result["sizes"][n].update(measure_size(browser, lab, n, progs[n][1], harness, args, tmp, dotv))
            finally:
                browser.close()
    finally:
        lab.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    result["load"]["end"] = os.getloadavg()[0]
    return result


def measure_size(browser, lab, n: int, pj: dict, harness: str | None, args, tmp: Path, dotv) -> dict:
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.add_init_script(INIT_JS)
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    out: dict = {"displays": {"mime": [], "widget": []}}
    try:
        page.goto(f"{lab.url}/lab/tree/graph_{n}.ipynb?reset&token={lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        page.wait_for_function(KERNEL_READY, timeout=90_000, polling=250)
        page.evaluate(HOOK_KERNEL)
        # the setup cell: load the program in the kernel
        page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 0;
                                 return window.jupyterapp.commands.execute('notebook:run-cell'); }""")
        page.wait_for_function("""() => { const c = window.jupyterapp.shell.currentWidget.content.widgets[0];
                                  return c.model.executionCount !== null && window.jupyterapp.shell.currentWidget
                                    .sessionContext.session.kernel.status === 'idle'; }""", timeout=120_000, polling=100)
        timeout_ms = 60_000 if args.quick else 600_000
        order = ["mime", "widget"] * (args.repeat + 1)
        for i, kind in enumerate(order):
            r = page.evaluate(MEASURE_JS, {"cell": 1 if kind == "mime" else 2, "kind": kind, "unfold": False,
                                           "timeoutMs": timeout_ms})
            f = figures(r)
            f["cold"] = i < 2
            out["displays"][kind].append(f)
            print(f"  {n} ops {kind:6s} #{i // 2}: painted {f['painted'] * 1e3:7.1f} ms  interactive "
                  f"{f['interactive'] * 1e3:7.1f} ms  ({f['nodes']} nodes drawn, kernel {f['kernel'] * 1e3:.0f} ms)",
                  flush=True)
        # one unfold of the first folded group (widget)
        folded = out["displays"]["widget"][-1]["folded"] > 0 and out["displays"]["widget"][-1]["nodes"] == \
            out["displays"]["widget"][-1]["folded"]
        if folded and not (args.quick and n > 1_000) and not args.no_unfold:
            r = page.evaluate(MEASURE_JS, {"cell": 2, "kind": "widget", "unfold": True, "timeoutMs": 1_800_000})
            f = figures(r)
            out["unfold"] = f
            print(f"  {n} ops widget unfold '{f['unfold_label'][:40]}': painted {f['unfold_painted']:.2f} s "
                  f"({f['unfold_nodes']} nodes, {f['unfold_edges']} edges), then select {f.get('select', 0) * 1e3:.0f} ms",
                  flush=True)
        # breakdown
        if harness is not None:
            page.add_script_tag(content=harness)
            bd = {}
            bd["viz_instance_ms"] = page.evaluate(VIZ_INIT_JS, 1 if args.quick else 3)
            esm = (STATIC / "ProgramGraph.js").read_text()
            bd["esm_import_ms"] = page.evaluate(ESM_IMPORT_JS, {"src": esm, "reps": 1 if args.quick else 3})
            modes = ["default"]
            if out.get("unfold") or (not args.quick and n > 100 and not args.no_unfold):
                modes.append("unfold1")
            if pj_nodes(pj) <= 600:
                modes = ["full"] if all(len(b["ops"]) + len(b["vars"]) <= 300 for b in pj["blocks"]) else modes + ["full"]
            for mode in modes:
                reps = 1 if mode != "default" or args.quick else 3
                h = page.evaluate(HARNESS_JS, {"pj": pj, "mode": mode, "reps": reps})
                if "runs" not in h:
                    bd[mode] = h
                    continue
                runs = h["runs"]
                bd[mode] = {k: med([x[k] for x in runs]) for k in runs[0]}
                bd[mode].update(h["info"])
                bd["graphviz"] = h.get("graphviz")
                if args.save_dot:
                    Path(args.save_dot).mkdir(parents=True, exist_ok=True)
                    (Path(args.save_dot) / f"browser_{n}_{mode}.dot").write_text(h["dot"])
                if dotv is not None:
                    limit = 60 if args.quick else 300
                    bd[mode]["system_dot"] = time_dot(h["dot"], tmp / f"browser_{n}_{mode}.dot",
                                                      1 if args.quick else 3, limit)
                print(f"  {n} ops breakdown [{mode}]: " + ", ".join(
                    f"{k} {bd[mode][k]:.1f}" for k in ("model", "todot", "layout", "parse", "sanitize", "install",
                                                       "style_layout", "frame")) +
                      " ms" + (f"; system dot {fmt_dot(bd[mode].get('system_dot'))}" if dotv else ""), flush=True)
            out["breakdown"] = bd
        if dotv is not None:
            limit = 10 if args.quick else 60
            out["python_dot"] = time_dot(pj["dot"], tmp / f"python_{n}.dot", 1 if args.quick else 3, limit)
            print(f"  {n} ops system dot on program_json()['dot'] (unfolded): {fmt_dot(out['python_dot'])}", flush=True)
    finally:
        out["page_errors"] = errors
        ctx.close()
    return out


def pj_nodes(pj: dict) -> int:
    return sum(len(b["ops"]) + len(b["vars"]) for b in pj["blocks"])


def fmt_dot(d: dict | None) -> str:
    if not d:
        return "—"
    if "timeout" in d:
        return f"> {d['timeout']:.0f} s (stopped)"
    return f"{d['s'] * 1e3:.0f} ms" if d["s"] < 1 else f"{d['s']:.2f} s"


def ms(x) -> str:
    if x is None:
        return "—"
    return f"{x * 1e3:.0f} ms" if x < 1 else f"{x:.2f} s"


def report(res: dict) -> None:
    print()
    print("Program graph: display to interactive, JupyterLab + headless Chromium")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} logical cores, "
          f"load average {res['load']['start']:.2f} at start, {res['load']['end']:.2f} at end")
    print(f"versions: Chromium {res.get('chromium')}, Python {platform.python_version()}, kernelcore {kc.__version__}, "
          f"{res.get('dot_version') or 'no system dot'}")
    print()
    print("Medians of the warm repeats (cold = the first display of that kind in a fresh page). t = 0: the display")
    print("message reaches the page. kernel: run-cell -> that message (Python side, not counted).")
    print()
    hdr = ("| ops (ops+vars) | output | drawn | in DOM | painted | first click answered | interactive (cold) | "
           "target | status | kernel |")
    print(hdr)
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, s in res["sizes"].items():
        for kind in ("mime", "widget"):
            ds = s["displays"][kind]
            warm = [d for d in ds if not d["cold"]] or ds
            cold = next((d for d in ds if d["cold"]), None)
            inter = med([d["interactive"] for d in warm])
            sel = med([d.get("select") for d in warm])
            drawn = warm[0]["nodes"]
            drawn_s = f"{drawn} nodes" + (f" ({warm[0]['folded']} folded groups)" if warm[0]["folded"] else "")
            click = f"select {ms(sel)}" if sel is not None else "— (no op drawn; groups clickable)"
            target = TARGETS.get(n)
            status = "—"
            if target is not None:
                status = "met" if inter is not None and inter <= target else "**NOT met**"
            label = "MIME (`prog`)" if kind == "mime" else "widget (`ProgramGraph`)"
            print(f"| {s['ops']:,} ({s['nodes']:,}) | {label} | {drawn_s} | {ms(med([d['dom'] for d in warm]))} | "
                  f"{ms(med([d['painted'] for d in warm]))} | {click} | {ms(inter)} ({ms(cold['interactive'] if cold else None)}) | "
                  f"{'≤ ' + ms(target) if target else '—'} | {status} | {ms(med([d['kernel'] for d in warm]))} |")
    print()
    print("Inside a display (warm medians; times from t = 0):")
    print("| ops | output | payload | JSON deserialize | widget model created | WASM instantiate | Graphviz done | "
          "SVG parse | in DOM | painted | SVG parses |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n, s in res["sizes"].items():
        for kind in ("mime", "widget"):
            ds = [d for d in s["displays"][kind] if not d["cold"]] or s["displays"][kind]
            lead = med([d.get("model_lead") for d in ds]) if kind == "widget" else None
            print(f"| {s['ops']:,} | {kind} | {med([d['msg_bytes'] for d in ds]) / 1e6:.2f} MB | "
                  f"{ms(med([d['deserialize'] for d in ds]))} | {('-' + ms(lead)) if lead is not None else '—'} | "
                  f"{ms(med([d.get('wasm') for d in ds]))} | "
                  f"{ms(med([d.get('layout_done') for d in ds]))} | {ms(med([d.get('svg_parse') for d in ds]))} | "
                  f"{ms(med([d['dom'] for d in ds]))} | {ms(med([d['painted'] for d in ds]))} | "
                  f"{max(d['parses'] for d in ds)} |")
    unf = [(n, s["unfold"]) for n, s in res["sizes"].items() if s.get("unfold")]
    if unf:
        print()
        print("Unfolding the first folded group (widget, one click, once per size):")
        print("| ops | group | click -> handled | -> layout done | -> painted | drawn after | then select (round trip) |")
        print("|---|---|---|---|---|---|---|")
        for n, u in unf:
            print(f"| {res['sizes'][n]['ops']:,} | {u['unfold_label'][:48]} | {ms(u['unfold_ack'])} | "
                  f"{ms(u.get('unfold_layout_done'))} | {ms(u['unfold_painted'])} | {u['unfold_nodes']} nodes, "
                  f"{u['unfold_edges']} edges | {ms(u.get('select'))} |")
    bds = [(n, s["breakdown"]) for n, s in res["sizes"].items() if s.get("breakdown")]
    if bds:
        print()
        print("Breakdown: the front end's graph code driven directly in the same page (ms; medians)")
        print("| ops | view | drawn | DOT | model | toDot | Graphviz WASM layout | SVG parse | sanitize | install | "
              "style+layout | frame | total | system dot, same DOT |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n, bd in bds:
            for mode in ("default", "unfold1", "full"):
                b = bd.get(mode)
                if not b or "model" not in b:
                    continue
                print(f"| {res['sizes'][n]['ops']:,} | {mode} | {b['nodes']} nodes, {b['edges']} edges | "
                      f"{b['dot_chars'] / 1e3:.0f} kB | {b['model']:.1f} | {b['todot']:.1f} | {b['layout']:.1f} | "
                      f"{b['parse']:.1f} | {b['sanitize']:.1f} | {b['install']:.1f} | {b['style_layout']:.1f} | "
                      f"{b['frame']:.1f} | {b['total']:.0f} | {fmt_dot(b.get('system_dot'))} |")
        b0 = bds[0][1]
        print(f"Graphviz in the page: {b0.get('graphviz')} (@viz-js/viz). Graphviz WASM instance (compile + instantiate): "
              f"{', '.join(f'{x:.0f}' for x in b0['viz_instance_ms'])} ms; import of ProgramGraph.js from a Blob "
              f"URL (what anywidget does per widget): {', '.join(f'{x:.0f}' for x in b0['esm_import_ms'])} ms")
    if any(s.get("python_dot") for s in res["sizes"].values()):
        print()
        print("System dot on Python's DOT (program_json()['dot'], every node, no folding: the text/html fallback's):")
        for n, s in res["sizes"].items():
            print(f"  {s['ops']:,} ops ({s['nodes']:,} nodes): {fmt_dot(s.get('python_dot'))}")
    errs = [e for s in res["sizes"].values() for e in s.get("page_errors", [])]
    if errs:
        print("\npage errors:", *errs[:5], sep="\n  ")
    print()
    print("Targets")
    print("| target | measured (median, warm) | status |")
    print("|---|---|---|")
    for n, target in TARGETS.items():
        s = res["sizes"].get(n)
        if not s:
            continue
        for kind in ("mime", "widget"):
            ds = [d for d in s["displays"][kind] if not d["cold"]] or s["displays"][kind]
            inter = med([d["interactive"] for d in ds])
            ok = inter is not None and inter <= target
            print(f"| {n:,} ops{' (folded groups)' if ds[0]['folded'] else ''}, {kind}: display -> interactive "
                  f"≤ {target:g} s | {ms(inter)} | {'met' if ok else 'NOT met'} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 warm repeat, no 5,000-op unfold")
    ap.add_argument("--repeat", type=int, default=None, help="warm repeats per kind and size (default 5, quick 1)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated op counts")
    ap.add_argument("--no-unfold", action="store_true", help="skip the unfold timings")
    ap.add_argument("--no-dot", action="store_true", help="skip system dot even where it exists")
    ap.add_argument("--json", help="also write the raw figures here")
    ap.add_argument("--save-dot", metavar="DIR", help="write the DOT texts the browser laid out into DIR")
    ap.add_argument("--big", action="store_true",
                    help="instead: Paddle's 5,123-op MLP and a 51,230-op synthetic program (bench/browser_graph_big.py)")
    args = ap.parse_args(argv)
    if args.big:
        sys.path.insert(0, str(HERE))
        import browser_graph_big
        res = browser_graph_big.run(quick=args.quick)
        browser_graph_big.report(res)
        if args.json:
            Path(args.json).write_text(json.dumps(res, indent=1, default=str))
        return 0
    args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.repeat is None:
        args.repeat = 1 if args.quick else 5
    missing = []
    if not (STATIC / "ProgramGraph.js").is_file():
        missing.append("the front end is not built: run ./dev build")
    if not os.path.exists(CHROMIUM):
        missing.append(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    try:
        import playwright  # noqa: F401
    except ImportError:
        missing.append("playwright is not installed in this venv")
    if missing:
        print("cannot run:", *missing, sep="\n  ")
        return 2
    res = run(args)
    report(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
