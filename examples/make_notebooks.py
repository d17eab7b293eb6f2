"""Write the example notebooks of this folder from the cell sources below (outputs-free).

Run:  python examples/make_notebooks.py      (rewrites examples/*.ipynb; commit the result)

The notebooks are generated so that they stay reviewable as Python, and so that they cannot drift
apart in their setup. Each runs in a few seconds from this folder (JupyterLab opens it there; paths
such as programs/mlp.pdmodel are relative to it). tests/test_examples.py and the browser tests run them.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(text: str):
    return new_code_cell(text.strip("\n"))


MLP = '''
import numpy as np
import kernelcore as kc

rng = np.random.default_rng(0)
prog = kc.Program()
with kc.program_guard(prog):
    g = prog.global_block()
    x = g.create_var("x", shape=[-1, 13])
    w1, b1 = g.create_parameter("fc_0.w_0", [13, 32]), g.create_parameter("fc_0.b_0", [32])
    w2, b2 = g.create_parameter("fc_1.w_0", [32, 10]), g.create_parameter("fc_1.b_0", [10])
    h = kc.op.relu(kc.op.elementwise_add(kc.op.mul(x, w1), b1))
    logits = kc.op.elementwise_add(kc.op.mul(h, w2), b2)
    probs = kc.op.softmax(logits)

scope = kc.Scope()
for p in (w1, b1, w2, b2):
    scope.set(p.name, (rng.standard_normal(p.shape) * 0.3).astype(np.float32))
'''

NOTEBOOKS = {
    "01_program_graph.ipynb": [
        md('''
# 1. A program, and its graph

A kernelcore program is a `ProgramDesc` (Paddle's protobuf): blocks of variables and ops. Build a small MLP
with the op creators, print it, and look at it as a graph: ops are boxes, variables ellipses; click a node
for what it is (an op's comment, attributes and slots; a variable's shape, writers and readers).
'''),
        code(MLP),
        code('''
print(prog)          # the deterministic text form
'''),
        md('''
A program is displayed by JupyterLab's kernelcore renderer (from the `application/vnd.kernelcore.program+json`
output, which needs no live kernel to redraw); other front ends get text and HTML.
'''),
        code('''
prog
'''),
        md('''
`ProgramGraph` is the live widget: with a scope attached, a variable's details carry a preview of its value.
'''),
        code('''
from kernelcore_widgets import ProgramGraph

graph = ProgramGraph(prog, scope=scope)
graph
'''),
        code('''
graph.select("o0:5")          # what a click on the softmax op asks Python
{k: graph.details[k] for k in ("type", "comment", "attrs")}
'''),
    ],
    "02_prune_and_compare.ipynb": [
        md('''
# 2. Prune a program, and compare

`kc.prune(program, targets, feeds)` keeps the fewest ops that compute the targets. Here a program computes
two heads; pruning for `probs` drops the other head. The graph greys what was removed; `side_by_side=True`
draws the pruned program next to the original.
'''),
        code(MLP),
        code('''
with kc.program_guard(prog):
    g = prog.global_block()
    w3 = g.create_parameter("aux.w_0", [32, 1])
    aux = kc.op.tanh(kc.op.mul(h, w3))          # a second head the target does not need
    aux_loss = kc.op.reduce_mean(aux, dim=[0])

pruned = kc.prune(prog, [probs], feeds=["x"])
print(pruned.summary())
print("removed ops:", pruned.removed_ops)
'''),
        code('''
from kernelcore_widgets import ProgramGraph

ProgramGraph(prog, pruned=pruned)
'''),
        code('''
ProgramGraph(prog, pruned=pruned, side_by_side=True)
'''),
        code('''
# the pruned program still computes probs, the same numbers
scope.set("aux.w_0", np.zeros((32, 1), np.float32))
feed = {"x": rng.standard_normal((4, 13)).astype(np.float32)}
exe = kc.Executor(kc.CPUPlace())
full, = exe.run(prog, feed=feed, fetch_list=[probs], scope=scope)
small, = exe.run(pruned.program, feed=feed, fetch_list=[probs.name], scope=scope)
assert np.allclose(full, small)
small.round(3)
'''),
        md('''
`kc.compare_runs(a, b)` measures every output of one run against another's; `cmp.overlay(graph)` colours the
graph by it (the legend is under the graph; a node's tooltip and details give its number). Here the output
layer's weight is nudged by 1%: the ops before it differ by 0 (the bottom of the scale), those after it light up.
'''),
        code('''
with kc.trace(retain="references") as a:
    exe.run(prog, feed=feed, fetch_list=[probs], scope=scope)
scope.set("fc_1.w_0", scope.find_var("fc_1.w_0").value * 1.01)
with kc.trace(retain="references") as b:
    exe.run(prog, feed=feed, fetch_list=[probs], scope=scope)
cmp = kc.compare_runs(a, b)
cmp.overlay(ProgramGraph(prog), "max_abs")
'''),
    ],
    "03_trace_a_run.ipynb": [
        md('''
# 3. Trace a run

`with kc.trace() as tr:` records every scope push and drop, variable creation and op run (with shapes and
times). Displayed, a trace renders as a timeline; `TraceTimeline` is the live, filterable widget and
`ScopeForest` shows the scopes the run left, with previews of their values on demand.
'''),
        code(MLP),
        code('''
exe = kc.Executor(kc.CPUPlace())
feed = {"x": rng.standard_normal((8, 13)).astype(np.float32)}
with kc.trace(retain="references") as tr:
    out, = exe.run(prog, feed=feed, fetch_list=[probs], scope=scope)
print(tr.summary())
'''),
        code('''
tr                   # the kernelcore trace renderer
'''),
        code('''
from kernelcore_widgets import ScopeForest, TraceTimeline

timeline = TraceTimeline(tr)
timeline.filter = {"kind": "op_run"}
timeline
'''),
        code('''
ScopeForest(scope)
'''),
        code('''
chrome = tr.to_chrome()   # tr.save_chrome("trace.json") writes it for https://ui.perfetto.dev
len(chrome["traceEvents"])
'''),
    ],
    "rnn_step_debugging.ipynb": [
        md('''
# 4. Step through an RNN, one timestep at a time

A simple RNN, h_t = tanh(x_t W + h_{t-1} U), built with `kc.layers.StaticRNN`: one `recurrent` op whose
step block runs once per timestep in its own step scope. `kc.debug` starts the run paused before its first
op; `RNNStepper` shows one step scope with the roles of its variables (x_t, h_prev, h_new, output): **next**
runs the session to the next timestep, **prev** goes back in time through the recorded trace (nothing runs
again). The `Debugger` puts the graph, the scopes, the timesteps and the trace together with step controls;
JupyterLab's kernelcore debugger sidebar drives the same session, no widget needed (docs/debugging.md). (The same as a script:
`examples/rnn_step_debugging.py`.)
'''),
        code('''
import numpy as np
import kernelcore as kc

T, B, D, H = 5, 2, 3, 4
rng = np.random.default_rng(0)

prog = kc.Program()
with kc.program_guard(prog):
    g = prog.global_block()
    x = g.create_var("x", [T, B, D])
    h0 = g.create_var("h0", [B, H])
    w = g.create_parameter("w", [D, H])
    u = g.create_parameter("u", [H, H])
    rnn = kc.layers.StaticRNN()
    with rnn.step():
        x_t = rnn.step_input(x)
        h_prev = rnn.memory(init=h0)
        h_new = kc.op.tanh(kc.op.elementwise_add(kc.op.matmul_v2(x_t, w), kc.op.matmul_v2(h_prev, u)))
        rnn.update_memory(h_prev, h_new)
        rnn.step_output(h_new)
    out = rnn()
    last = kc.op.reduce_sum(out, dim=[0])

scope = kc.Scope()
scope.set("w", rng.standard_normal((D, H)).astype(np.float32) * 0.5)
scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.5)
feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32), "h0": np.zeros((B, H), np.float32)}
'''),
        code('''
from kernelcore_widgets import RNNStepper

sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
stepper = RNNStepper(sess)
stepper
'''),
        code('''
stepper.next()       # run to timestep 0 (the buttons above do the same)
stepper.next()       # and to timestep 1
print(stepper.status)
'''),
        md('''
The same session in the full debugger: step, next, finish, step to the next timestep, continue, or go back.
'''),
        code('''
from kernelcore_widgets import Debugger

dbg = Debugger(sess)
dbg
'''),
        code('''
dbg.step_timestep()
print(dbg.position)
'''),
        code('''
# the numbers agree with a NumPy loop
result = sess.run_to_end()
h, hs = feed["h0"], []
for t in range(T):
    h = np.tanh(feed["x"][t] @ scope.get("w") + h @ scope.get("u"))
    hs.append(h)
assert np.allclose(np.sum(hs, axis=0), result[0], atol=1e-5)
dbg.refresh()
print(dbg.position, "|", dbg.stop_reason)
'''),
        md('''
After the run, the stepper replays every timestep from the trace: pick any timestep.
'''),
        code('''
replay = RNNStepper(sess)
replay.goto(3)
replay
'''),
    ],
    "05_open_a_paddle_model.ipynb": [
        md('''
# 5. Open a model written by PaddlePaddle

`programs/mlp.pdmodel` + `programs/mlp.pdiparams` were saved by Paddle 3.3.1 (`save_inference_model`, legacy IR).
kernelcore reads Paddle's wire format directly. You can also open the `.pdmodel` from JupyterLab's file browser:
the kernelcore viewer draws its graph (the server extension reads the file).
'''),
        code('''
import numpy as np
import kernelcore as kc

prog, scope, feed_names, fetch_names = kc.load_inference_model("programs/mlp")
print(feed_names, fetch_names)
prog
'''),
        code('''
from kernelcore_widgets import ProgramGraph, ScopeForest

ProgramGraph(prog, scope=scope)
'''),
        code('''
rng = np.random.default_rng(0)
x = rng.standard_normal((8, 13)).astype(np.float32)
with kc.trace() as tr:
    probs, = kc.Executor(kc.CPUPlace()).run(prog, feed={feed_names[0]: x}, fetch_list=fetch_names, scope=scope)
print(probs.shape, probs.sum(axis=1).round(4))
ScopeForest(scope)
'''),
    ],
}


def build(name: str, cells) -> nbformat.NotebookNode:
    nb = new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC,
                                             "language_info": {"name": "python"}})
    for i, c in enumerate(nb.cells):
        c.id = f"{Path(name).stem.replace('_', '-')}-{i}"  # stable ids: regenerating changes nothing
    nbformat.validate(nb)
    return nb


def main() -> None:
    for name, cells in NOTEBOOKS.items():
        nbformat.write(build(name, cells), HERE / name)
        print("wrote", HERE / name)


if __name__ == "__main__":
    main()
