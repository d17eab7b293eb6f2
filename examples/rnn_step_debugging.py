"""Step through a recurrent program one timestep at a time.

Run:  python examples/rnn_step_debugging.py

A simple RNN, h_t = tanh(x_t W + h_{t-1} U), is built as one `recurrent` op whose step
block runs once per timestep in its own step scope (a kid of the run's scope). We pause
before the first op, walk into the recurrent op, move timestep by timestep, look at the
step scope at each t, stop on a breakpoint, and go back in time without re-running.
"""
import numpy as np

import kernelcore as kc

T, B, D, H = 5, 2, 3, 4
rng = np.random.default_rng(0)

# -- build the program ----------------------------------------------------------------------
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

print("The program (block 1 is the step block):")
print(prog)

scope = kc.Scope()
scope.set("w", rng.standard_normal((D, H)).astype(np.float32) * 0.5)
scope.set("u", rng.standard_normal((H, H)).astype(np.float32) * 0.5)
feed = {"x": rng.standard_normal((T, B, D)).astype(np.float32), "h0": np.zeros((B, H), np.float32)}

# -- a debug session: paused before the first op ----------------------------------------------
sess = kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)
print("\npaused at:", sess.position)
sess.step()                      # into the recurrent op: the first op of timestep 0
print("stepped into:", sess.position)
for _ in range(2):
    sess.step_timestep()         # to the start of the next timestep
    print("timestep start:", sess.position)

# what the step scope holds right now: x_t, the previous memory, the parameters through the parent
t = sess.position.innermost.timestep
show = lambda a: np.array2string(np.asarray(a), precision=3, suppress_small=True)
print(f"\nat t={t}: x_t =\n{show(sess.value('x'))}")
print(f"h_prev =\n{show(sess.value(h_prev.name))}")

# a breakpoint on the write of the step's new memory, then continue
sess.break_on(write=h_new.name)
sess.cont()
print("\n" + sess.stop_reason)
print(f"h_new =\n{show(sess.value(h_new.name))}")

sess.clear_breakpoints()
result = sess.run_to_end()
print(f"\nfinished; sum over time of h:\n{show(result[0])}")

# the scope forest the run left behind (inference: step scopes are dropped as it goes)
print("\nscope forest now:")
print(sess.forest())

# -- time travel: the state at an earlier event, rebuilt from the trace ----------------------
ops = [i for i, e in enumerate(sess.events) if e.kind == "op_run" and e.op_type == "tanh"]
view = sess.goto(ops[1])
print(f"\nback at event {view.index} ({view.event.op_type} at t={view.event.timestep}):")
print(view.forest())

# -- the same with a NumPy loop, to see the numbers agree -------------------------------------
h = feed["h0"]
hs = []
for t in range(T):
    h = np.tanh(feed["x"][t] @ scope.get("w") + h @ scope.get("u"))
    hs.append(h)
assert np.allclose(np.sum(hs, axis=0), result[0], atol=1e-5)
print("\nmatches a NumPy loop.")
