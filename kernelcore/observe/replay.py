"""A recorded iteration run again in a debug session, from the state it started from, up to the op a recorder hit
names: how the flight recorder's stop becomes a pause with time travel."""
from __future__ import annotations

from ..runtime.scope import Scope
from .session import DebugSession


def replay_to(recorder, iteration, hit) -> DebugSession:
    """A session over a fresh scope holding `iteration`'s starting values, stepped until as many ops have run as
    had when `hit` was recorded (its op's record is then the trace's last op_run)."""
    scope = Scope()
    for name, value in iteration.initial.items():
        scope.var(name).value = value
    sess = DebugSession(recorder.program, feed=fed(recorder.program, iteration.initial), scope=scope,
                        training=recorder.training, executor=recorder.executor)
    ran = read = 0
    while ran <= hit.order and not sess.finished:
        sess.step()
        events = sess.trace.events
        ran += sum(1 for e in events[read:] if e.kind == "op_run")
        read = len(events)
    last = next((e for e in reversed(sess.trace.events) if e.kind == "op_run"), None)
    same = last is not None and (last.block, last.op, last.op_type, last.timestep) == \
        (hit.block, hit.op, hit.op_type, hit.timestep)
    sess.stop_reason = f"recorder: {hit.message}" if same else \
        f"recorder: {hit.message} (the replay ran another op there: the iteration is not deterministic)"
    sess.recorder_hit = hit
    return sess.notify()  # whoever follows the session (the sidebar) saw the replay's steps: now the reason


def fed(program, initial: dict) -> dict | None:
    """The feed dict of a program with feed ops, from the holder list its feed ops read in the iteration (the
    values in the feed ops' outputs then were the previous iteration's); None for a program without."""
    feed = {}
    for op in program.global_block().ops:
        if op.type != "feed":
            continue
        holder = initial.get(op.input("X")[0])
        col = op.attr("col", 0)
        if isinstance(holder, list) and 0 <= col < len(holder):
            feed[op.output("Out")[0]] = holder[col]
    return feed or None
