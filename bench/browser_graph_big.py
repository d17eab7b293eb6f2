"""Big programs in a real JupyterLab + Chromium: `bench/browser_graph.py --big` runs this.

Programs: the training program Paddle 3.3.1 writes for a 640-layer relu MLP (5,123 ops;
tests/paddle_oracle/make_big_programs.py, run in the Paddle venv, skipped without it) and a synthetic
51,230-op program: that Paddle program ten times over as ten "towers" (every name `n` becomes
`tower<k>.n`), its ops ordered forward, backward, optimize like one training program.

Per program, one fresh page, one notebook (its own kernel); the setup cell loads the program; then:
- **visible**: `ProgramGraph(prog)` cell run (t = 0: the run command, so Python's JSON, the comm, the
  widget module and the layout are all inside) -> the graph's SVG painted (the first frame after it is in
  the DOM). Same for `prog_shown` (the MIME renderer, no widget; a second program object loaded from
  the same file, so its first display is cold too). Programs over 2,000 ops are sent in parts
  (kernelcore/view/program_parts.py): the first display builds the skeleton (cold); later ones of the same,
  unchanged program reuse it (the cache is per program object and version).
- **open**: a click on a folded group (the first repeat; then the first range in it; then a layer in
  that) -> the new SVG painted.
- **search**: a name typed in the search box, Enter -> the groups around the match opened and the match
  drawn (its node carries the match class).
- **expand all**: the button -> the new SVG painted (or the note that says what it refused).
- **longest task**: the longest main-thread task (PerformanceObserver "longtask", >= 50 ms) seen from
  the start of each action to 300 ms after its end.
Screenshots of the view in JupyterLab Light and Dark go to out/screenshots/bench_big_*.png.

The front end under test is this checkout's build: JUPYTER_PATH puts its
widgets/kernelcore_widgets/labextension first, PYTHONPATH its kernelcore and kernelcore_widgets.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHOTS = ROOT / "out" / "screenshots"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"
LONGTASKS_JS = r"""
(() => {
  const L = (window.__kcLong = []);
  try {
    new PerformanceObserver(list => {
      for (const e of list.getEntries()) L.push({ t0: e.startTime, dur: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) { window.__kcLongError = String(e); }
})();
"""

# Run code cell `cell` (index among code cells), resolve when an SVG of the graph is painted in it.
RUN_CELL_JS = r"""
async ({ cell, timeoutMs }) => {
  const app = window.jupyterapp;
  const nb = app.shell.currentWidget.content;
  const c = nb.widgets.filter(w => w.model.type === 'code')[cell];
  c.model.outputs.clear();
  await new Promise(r => setTimeout(r, 300));
  nb.activeCellIndex = nb.widgets.indexOf(c);
  const t0 = performance.now();
  app.commands.execute('notebook:run-cell');
  const svg = await new Promise((res, rej) => {
    const iv = setInterval(() => {
      const s = c.node.querySelector('.jp-Kernelcore-ProgramGraph svg.jp-Kernelcore-svg');
      const err = c.node.querySelector('.jp-Kernelcore-ProgramGraph .jp-Kernelcore-error');
      if (s) { clearInterval(iv); res(s); }
      else if (err) { clearInterval(iv); rej(new Error(err.textContent)); }
    }, 5);
    setTimeout(() => { clearInterval(iv); rej(new Error('timed out waiting for the SVG')); }, timeoutMs);
  });
  const tDom = performance.now();
  const tPaint = await new Promise(res => requestAnimationFrame(() => { const ch = new MessageChannel();
    ch.port1.onmessage = () => res(performance.now()); ch.port2.postMessage(0); }));
  return { t0, tDom, tPaint, nodes: svg.querySelectorAll('g.node').length,
           status: (c.node.querySelector('.jp-Kernelcore-status') || {}).textContent || '' };
}
"""

# In the cell's view: do `what` and wait for a new SVG painted (or, for expand-all, a note).
ACT_JS = r"""
async ({ cell, what, arg, timeoutMs }) => {
  const nb = window.jupyterapp.shell.currentWidget.content;
  const c = nb.widgets.filter(w => w.model.type === 'code')[cell];
  const root = c.node.querySelector('.jp-Kernelcore-ProgramGraph');
  const old = root.querySelector('svg.jp-Kernelcore-svg');
  const click = el => el.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true, view: window }));
  let label = null;
  const t0 = performance.now();
  if (what === 'open') {
    const g = root.querySelector(`svg.jp-Kernelcore-svg g.node.jp-Kernelcore-collapsed.jp-Kernelcore-gkind-${arg}`);
    if (!g) return { skipped: `no folded ${arg}` };
    label = g.textContent;
    click(g.querySelector('text') || g);
  } else if (what === 'search') {
    const input = root.querySelector('input.jp-Kernelcore-search');
    input.value = arg;
    input.dispatchEvent(new Event('input'));
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
  } else if (what === 'expand') {
    click([...root.querySelectorAll('button')].find(b => b.textContent === 'Expand all'));
  }
  const done = () => {
    const s = root.querySelector('svg.jp-Kernelcore-svg');
    if (what === 'search') return s && s.querySelector('g.node.jp-Kernelcore-match:not(.jp-Kernelcore-collapsed)') ? s : null;
    return s && s !== old ? s : null;
  };
  const svg = await new Promise((res, rej) => {
    const iv = setInterval(() => { const s = done(); if (s) { clearInterval(iv); res(s); } }, 5);
    setTimeout(() => { clearInterval(iv); res(null); }, timeoutMs);
  });
  const tDom = performance.now();
  const tPaint = await new Promise(res => requestAnimationFrame(() => { const ch = new MessageChannel();
    ch.port1.onmessage = () => res(performance.now()); ch.port2.postMessage(0); }));
  const note = (root.querySelector('.jp-Kernelcore-note') || {}).textContent || '';
  return { t0, tDom, tPaint, label, ok: !!svg, note, nodes: svg ? svg.querySelectorAll('g.node').length : null,
           crumbs: (root.querySelector('.jp-Kernelcore-crumbs') || {}).textContent || '' };
}
"""


def synthetic_program(base, copies: int):
    """`base` (a kc.Program) `copies` times over as towers `tower<k>.<name>`, ops ordered by role."""
    import kernelcore as kc
    from kernelcore.ir.proto import framework_pb2 as pb

    src = base.desc
    out = pb.ProgramDesc()
    out.CopyFrom(src)
    blk = out.blocks[0]
    del blk.vars[:]
    del blk.ops[:]
    roles = {0: [], 1: [], 2: []}

    def stage(op):
        r = next((a.i for a in op.attrs if a.name == "op_role"), 0)
        return 1 if r & 1 else 2 if r & 2 else 0

    for k in range(copies):
        ren = {}
        for v in src.blocks[0].vars:
            nv = blk.vars.add()
            nv.CopyFrom(v)
            if v.name not in ("feed", "fetch"):
                nv.name = ren.setdefault(v.name, f"tower{k}.{v.name}")
        for op in src.blocks[0].ops:
            no = pb.OpDesc()
            no.CopyFrom(op)
            for slot in list(no.inputs) + list(no.outputs):
                args = [ren.get(a, a) for a in slot.arguments]
                del slot.arguments[:]
                slot.arguments.extend(args)
            for a in no.attrs:
                if a.name == "op_role_var":
                    vals = [ren.get(s, s) for s in a.strings]
                    del a.strings[:]
                    a.strings.extend(vals)
            roles[stage(op)].append(no)
    # one feed/fetch var each, not ten
    seen = set()
    keep = []
    for v in blk.vars:
        if v.name not in seen:
            seen.add(v.name)
            keep.append(v)
    del blk.vars[:]
    blk.vars.extend(keep)
    for r in (0, 1, 2):
        blk.ops.extend(roles[r])
    return kc.Program(out)


def _programs(tmp: Path):
    import kernelcore as kc
    progs = {}
    src = ROOT / "tests" / "paddle_oracle" / "out" / "p3" / "mlp640.main.pb"
    if not src.is_file() and PADDLE3.is_file():
        subprocess.run([str(PADDLE3), str(ROOT / "tests" / "paddle_oracle" / "make_big_programs.py"), str(src.parent)],
                       check=True, capture_output=True, env=dict(os.environ, FLAGS_enable_pir_api="0"))
    if not src.is_file():
        print("no Paddle venv: the 5,123-op Paddle program is skipped, and so is the synthetic one built from it")
        return progs
    base = kc.load_program(src)
    progs["paddle_mlp640"] = base
    progs["synthetic_51k"] = synthetic_program(base, 10)
    for name, p in progs.items():
        kc.save_program(p, tmp / f"{name}.pdmodel")
    return progs


KERNEL_BUILD_JS = r"""
async () => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const code = "from kernelcore.view.program_parts import parts_of as _po\n" +
               "print(round(_po(prog).build_s, 3), round(_po(prog_shown).build_s, 3))";
  let text = '';
  const future = kernel.requestExecute({ code, silent: false, store_history: false });
  future.onIOPub = msg => { if (msg.header.msg_type === 'stream') text += msg.content.text; };
  await future.done;
  return text.trim();
}
"""


def _kernel_build_seconds(page) -> list:
    """[widget's, cell result's] outline build time in the kernel (ProgramParts.build_s)."""
    try:
        return [float(x) for x in page.evaluate(KERNEL_BUILD_JS).split()]
    except Exception as e:  # a diagnostic: the figures above stand without it
        return [f"unavailable: {e}"]


def _long(page, t0: float, t1: float) -> float:
    tasks = page.evaluate("() => window.__kcLong")
    durs = [t["dur"] for t in tasks if t["t0"] + t["dur"] >= t0 and t["t0"] <= t1 + 300]
    return max(durs) if durs else 0.0


def run(quick: bool = False) -> dict:
    sys.path[:0] = [str(ROOT), str(ROOT / "widgets")]
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook
    from playwright.sync_api import sync_playwright

    from _lab_server import CHROMIUM, CHROMIUM_ARGS, LabServer
    from kernelcore.view.display import program_json

    tmp = Path(tempfile.mkdtemp(prefix="kc_graph_big_"))
    res: dict = {"load_start": os.getloadavg()[0], "programs": {}}
    progs = _programs(tmp)
    from kernelcore.view.program_parts import ProgramParts
    import kernelcore as kc
    for name, p in progs.items():
        t = time.perf_counter()
        kc.load_program(tmp / f"{name}.pdmodel")  # what the setup cell does: parse and check the file
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        pj = program_json(p)
        js = time.perf_counter() - t
        t = time.perf_counter()
        skel = ProgramParts(p).skeleton("p1")  # what the cell sends: the skeleton (cold: no cache)
        ss = time.perf_counter() - t
        res["programs"][name] = {"ops": sum(len(b.ops) for b in p.blocks), "load_s": load_s, "program_json_s": js,
                                 "json_mb": len(json.dumps(pj)) / 1e6, "skeleton_s": ss,
                                 "skeleton_kb": len(json.dumps(skel)) / 1e3}
        r = res["programs"][name]
        print(f"{name}: {r['ops']} ops, load_program {load_s:.2f} s, whole program_json {js:.2f} s / {r['json_mb']:.1f} MB, skeleton {ss:.2f} s / "
              f"{r['skeleton_kb']:.1f} kB (this process, cold)", flush=True)
    # this checkout's front end and Python first
    jpath = tmp / "jupyter_path"
    (jpath / "labextensions" / "@kernelcore").mkdir(parents=True)
    os.symlink(ROOT / "widgets" / "kernelcore_widgets" / "labextension",
               jpath / "labextensions" / "@kernelcore" / "labextension")
    os.environ["JUPYTER_PATH"] = str(jpath) + os.pathsep + os.environ.get("JUPYTER_PATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "widgets"), os.environ.get("PYTHONPATH", "")])
    lab = LabServer(tmp / "lab")
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"}}
    for name in progs:
        shutil.copy(tmp / f"{name}.pdmodel", lab.root / f"{name}.pdmodel")
        nb = new_notebook(cells=[
            new_code_cell(f"import kernelcore as kc\nfrom kernelcore_widgets import ProgramGraph\n"
                          f"prog = kc.load_program('{name}.pdmodel')\n"
                          f"prog_shown = kc.load_program('{name}.pdmodel')\nlen(prog.blocks)"),
            new_code_cell("ProgramGraph(prog)"), new_code_cell("prog_shown")], metadata=meta)
        nbformat.write(nb, lab.root / f"{name}.ipynb")
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        lab.start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            res["chromium"] = browser.version
            try:
                for name in progs:
                    res["programs"][name].update(_measure(browser, lab, name, quick))
            finally:
                browser.close()
    finally:
        lab.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    res["load_end"] = os.getloadavg()[0]
    return res


def _measure(browser, lab, name: str, quick: bool) -> dict:
    from _lab_server import VIEWPORT
    ctx = browser.new_context(viewport=VIEWPORT)
    ctx.add_init_script(LONGTASKS_JS)
    page = ctx.new_page()
    page.set_default_timeout(180_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    out: dict = {}
    try:
        page.goto(f"{lab.url}/lab/tree/{name}.ipynb?reset&token={lab.token}")
        page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)
        page.wait_for_function("""() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return !!k && k.status === 'idle' && w.content.widgets.length > 0; }""", timeout=90_000, polling=250)
        out["worker_served"] = page.evaluate("""async () => (await fetch(
            document.baseURI.split('/lab')[0] + '/lab/extensions/@kernelcore/labextension/static/kc-layout-worker.js',
            { method: 'HEAD' })).status""")
        page.evaluate("""() => { const nb = window.jupyterapp.shell.currentWidget.content; nb.activeCellIndex = 0;
                                 return window.jupyterapp.commands.execute('notebook:run-cell'); }""")
        page.wait_for_function("""() => { const w = window.jupyterapp.shell.currentWidget;
            return w.content.widgets[0].model.executionCount !== null && w.sessionContext.session.kernel.status === 'idle'; }""",
                               timeout=180_000, polling=100)
        # a person reads the setup cell's result before running the next one; the page uses that time to
        # start its layout worker (layout.ts warm(): Graphviz compiles once a kernel uses kernelcore)
        page.wait_for_timeout(int(os.environ.get('KC_BENCH_PAUSE_MS', '2000')))
        reps = 1 if quick else 3
        for cell, kind in ((1, "widget"), (2, "mime")):
            vis = []
            for _ in range(reps):
                r = page.evaluate(RUN_CELL_JS, {"cell": cell, "timeoutMs": 170_000})
                vis.append({"visible_s": (r["tPaint"] - r["t0"]) / 1e3, "nodes": r["nodes"],
                            "longest_task_ms": _long(page, r["t0"], r["tPaint"])})
                page.wait_for_timeout(500)
            out[kind] = vis
            print(f"  {name} {kind}: visible {[round(v['visible_s'], 2) for v in vis]} s, "
                  f"longest task {[round(v['longest_task_ms']) for v in vis]} ms, {vis[0]['nodes']} nodes", flush=True)
        # what the kernel spent building each outline (the first display of each program object)
        out["kernel_build_s"] = _kernel_build_seconds(page)
        print(f"  {name}: outline built in the kernel in {out['kernel_build_s']} s (widget's, cell result's)", flush=True)
        # actions in the widget's view (cell 1): render it again first
        page.evaluate(RUN_CELL_JS, {"cell": 1, "timeoutMs": 170_000})
        page.wait_for_timeout(800)
        cell_el = page.locator(".jp-CodeCell").nth(1).locator(".jp-Kernelcore-ProgramGraph")
        cell_el.screenshot(path=str(SHOTS / f"bench_big_{name}_first_light.png"))
        acts = []
        for what, arg in (("open", "repeat"), ("open", "range"), ("open", "layer"), ("search", "fc_300.w_0"),
                          ("expand", None)):
            r = page.evaluate(ACT_JS, {"cell": 1, "what": what, "arg": arg, "timeoutMs": 60_000})
            if "skipped" in r:
                acts.append({"what": what, "arg": arg, "skipped": r["skipped"]})
                continue
            a = {"what": what, "arg": arg, "label": r["label"], "ok": r["ok"], "nodes": r["nodes"],
                 "painted_ms": r["tPaint"] - r["t0"], "longest_task_ms": _long(page, r["t0"], r["tPaint"]),
                 "note": r["note"][:200], "crumbs": r["crumbs"][:200]}
            acts.append(a)
            print(f"  {name} {what} {arg or ''}: {a['painted_ms']:.0f} ms to painted (ok={a['ok']}), longest task "
                  f"{a['longest_task_ms']:.0f} ms, {a['nodes']} nodes {('| ' + a['note'][:90]) if a['note'] else ''}",
                  flush=True)
            page.wait_for_timeout(400)
            if what == "open" and arg == "layer":
                cell_el.screenshot(path=str(SHOTS / f"bench_big_{name}_opened_light.png"))
        out["actions"] = acts
        cell_el.screenshot(path=str(SHOTS / f"bench_big_{name}_expanded_light.png"))
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Dark' })")
        page.wait_for_timeout(2500)
        cell_el.screenshot(path=str(SHOTS / f"bench_big_{name}_expanded_dark.png"))
        page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', { theme: 'JupyterLab Light' })")
        page.wait_for_timeout(1500)
    finally:
        out["page_errors"] = errors[:5]
        ctx.close()
    return out


def report(res: dict) -> None:
    print(f"\nbig programs (load avg {res['load_start']:.1f} -> {res.get('load_end', 0):.1f}; 2 cores shared)")
    for name, r in res["programs"].items():
        print(f"- {name}: {r['ops']} ops, load_program {r.get('load_s', 0):.2f} s, "
              f"whole ProgramJSON {r['program_json_s']:.2f} s, {r['json_mb']:.1f} MB; "
              f"sent skeleton {r.get('skeleton_s', 0):.2f} s, {r.get('skeleton_kb', 0):.1f} kB; "
              f"worker served {r.get('worker_served')}")
        for kind in ("widget", "mime"):
            for v in r.get(kind, []):
                print(f"    {kind}: visible {v['visible_s']:.2f} s, longest task {v['longest_task_ms']:.0f} ms")
        if "kernel_build_s" in r:
            print(f"    outline built in the kernel (widget's, cell result's): {r['kernel_build_s']} s")
        for a in r.get("actions", []):
            print(f"    {a['what']} {a.get('arg') or ''}: {a.get('painted_ms', 0):.0f} ms, longest task "
                  f"{a.get('longest_task_ms', 0):.0f} ms {a.get('skipped', '')}")
