"""Where an SVG drawing of a program gets slow: every group open, at growing sizes, in JupyterLab + Chromium.

    .venv/bin/python bench/browser_svg_size.py            # 20 .. 240-layer training MLPs, 2 runs each
    .venv/bin/python bench/browser_svg_size.py --quick    # fewer sizes, 1 run

The graph view never draws more than EXPAND_BUDGET (800) nodes on its own: "Expand all" stops there and a
big program opens group by group. This measures what that budget saves. Programs: tests/make_frontend_fixtures
.training_mlp(L) (L relu fc layers, mean loss, SGD: forward, backward and optimize stages), sent whole
(at most op_reads.LAZY_ABOVE ops). Per size, one cell displays `ProgramGraph(prog)` (groups folded, as
a user first sees it); then a cell sets `w.collapsed = []` (every group open) and the time runs from that
cell's run command to the first frame painted with the new SVG:
- **painted**: run command -> painted (Python's trait change, the comm, the layout in the page's Web Worker,
  parsing and inserting the SVG, styling, the paint);
- **longest task**: the longest main-thread task (PerformanceObserver "longtask", >= 50 ms) over that span
  and 300 ms after: the layout runs in a worker, so this is what the page itself spends on an SVG of that size
  (parse, insert, style, paint) - what a canvas or WebGL renderer would replace;
- **nodes**: `g.node` elements in the SVG.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT), str(ROOT / "widgets")]

from browser_graph_big import LONGTASKS_JS, RUN_CELL_JS, _long  # noqa: E402

SIZES = (20, 40, 80, 120, 160, 240)
QUICK_SIZES = (20, 80, 160)

# run code cell `cell` (index among code cells); resolve when a new SVG is painted in code cell `view`
RERENDER_JS = r"""
async ({ cell, view, timeoutMs }) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const code = nb.widgets.filter(w => w.model.type === 'code');
  const root = code[view].node.querySelector('.jp-Kernelcore-ProgramGraph');
  const old = root.querySelector('svg.jp-Kernelcore-svg');
  nb.activeCellIndex = nb.widgets.indexOf(code[cell]);
  const t0 = performance.now();
  window.jupyterapp.commands.execute('notebook:run-cell');
  const svg = await new Promise(res => {
    const iv = setInterval(() => { const s = root.querySelector('svg.jp-Kernelcore-svg');
      if (s && s !== old) { clearInterval(iv); res(s); } }, 5);
    setTimeout(() => { clearInterval(iv); res(null); }, timeoutMs);
  });
  const tPaint = await new Promise(res => requestAnimationFrame(() => { const ch = new MessageChannel();
    ch.port1.onmessage = () => res(performance.now()); ch.port2.postMessage(0); }));
  return { t0, tPaint, ok: !!svg, nodes: svg ? svg.querySelectorAll('g.node').length : null,
           status: (root.querySelector('.jp-Kernelcore-status') || {}).textContent || '' };
}
"""


def run(sizes, reps: int) -> list[dict]:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook
    from playwright.sync_api import sync_playwright

    from _lab_server import CHROMIUM, CHROMIUM_ARGS, VIEWPORT, LabServer

    tmp = Path(tempfile.mkdtemp(prefix="kc_svg_size_"))
    jpath = tmp / "jupyter_path"
    (jpath / "labextensions" / "@kernelcore").mkdir(parents=True)
    os.symlink(ROOT / "widgets" / "kernelcore_widgets" / "labextension",
               jpath / "labextensions" / "@kernelcore" / "labextension")
    os.environ["JUPYTER_PATH"] = str(jpath) + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "widgets"), str(ROOT / "tests"),
                                                os.environ.get("PYTHONPATH", "")])
    cells = [new_code_cell("from kernelcore_widgets import ProgramGraph\nfrom make_frontend_fixtures import training_mlp")]
    for L in sizes:
        cells += [new_code_cell(f"w{L} = ProgramGraph(training_mlp({L}))\nw{L}"),
                  new_code_cell(f"w{L}.collapsed = []"),
                  new_code_cell(f"w{L}.collapsed = w{L}_folded"),
                  new_code_cell(f"w{L}_folded = list(w{L}.collapsed)")]
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"}}
    lab = LabServer(tmp / "lab")
    nbformat.write(new_notebook(cells=cells, metadata=meta), lab.root / "sizes.ipynb")
    rows = []
    try:
        lab.start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            ctx = browser.new_context(viewport=VIEWPORT)
            ctx.add_init_script(LONGTASKS_JS)
            page = ctx.new_page()
            page.set_default_timeout(180_000)
            page.goto(f"{lab.url}/lab/tree/sizes.ipynb?reset&token={lab.token}")
            page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
                const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
                return !!k && k.status === 'idle' && w.content.widgets.length > 0; }""", timeout=90_000, polling=250)
            run_cell = "(i) => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = " \
                       "nb.widgets.indexOf(nb.widgets.filter(w => w.model.type === 'code')[i]); " \
                       "return window.jupyterapp.commands.execute('notebook:run-cell'); }"
            idle = """() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"""
            page.evaluate(run_cell, 0)
            page.wait_for_timeout(2000)
            page.wait_for_function(idle, polling=100)
            for k, L in enumerate(sizes):
                view, unfold, refold, remember = 1 + 4 * k, 2 + 4 * k, 3 + 4 * k, 4 + 4 * k
                r = page.evaluate(RUN_CELL_JS, {"cell": view, "timeoutMs": 170_000})
                folded_nodes = r["nodes"]
                page.wait_for_timeout(500)
                page.evaluate(run_cell, remember)
                page.wait_for_function(idle, polling=100)
                for _ in range(reps):
                    r = page.evaluate(RERENDER_JS, {"cell": unfold, "view": view, "timeoutMs": 170_000})
                    row = {"layers": L, "folded_nodes": folded_nodes, "nodes": r["nodes"], "ok": r["ok"],
                           "painted_ms": r["tPaint"] - r["t0"], "longest_task_ms": _long(page, r["t0"], r["tPaint"]),
                           "status": r["status"][:120]}
                    rows.append(row)
                    print(f"  {L:4d} layers: {row['nodes']} nodes open ({folded_nodes} folded): painted in "
                          f"{row['painted_ms']:.0f} ms, longest main-thread task {row['longest_task_ms']:.0f} ms "
                          f"(ok={row['ok']})", flush=True)
                    page.wait_for_timeout(400)
                    page.evaluate(RERENDER_JS, {"cell": refold, "view": view, "timeoutMs": 170_000})
                    page.wait_for_timeout(400)
            ctx.close()
            browser.close()
    finally:
        lab.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="three sizes, one run each")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    t = time.perf_counter()
    rows = run(QUICK_SIZES if args.quick else SIZES, 1 if args.quick else 2)
    print(f"\nSVG drawings with every group open (load avg {load0:.1f} -> {os.getloadavg()[0]:.1f}; "
          f"{time.perf_counter() - t:.0f} s)")
    print("| layers | nodes drawn | painted (ms) | longest main-thread task (ms) |")
    print("|---|---|---|---|")
    for r in rows:
        print(f"| {r['layers']} | {r['nodes']} | {r['painted_ms']:.0f} | {r['longest_task_ms']:.0f} |")


if __name__ == "__main__":
    main()
