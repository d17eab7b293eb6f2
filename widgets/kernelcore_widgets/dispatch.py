"""The one dispatcher of the debug commands. The sidebar's comm (comm.py), a program graph's debug actions
(graph_debug.py) and the Debugger widget's step controls (debugger.py) all run a command here: its arguments
are checked once, against the command table (contract/commands.py), before anything acts on them.

`run_command` returns what the command's reply carries: None, or an engine object (a Breakpoint, a Watch, an
Origin) or a dict; `to_wire` turns it into JSON.
"""
from __future__ import annotations

import kernelcore as kc

from .contract.commands import BY_NAME, GRAPH_ACTION_BY_NAME, GRAPH_ACTIONS, REQUIRED, Arg, Command
from .requests import (MAX_STR, RequestError, bool_arg, brief, choice_arg, int_arg, int_list_arg, num_arg,
                       opt_int_arg, opt_str_arg, str_arg)
from .tensor_edit import tensor_set
from .tensor_panel import tensor_json, tensor_send


class UnknownCommand(RequestError):
    """A request naming a command (or a graph action) the table does not have."""


def check_arg(arg: Arg, args: dict):
    """`args[arg.name]` checked as the table says (requests.py's checks: bounded, typed, named in errors)."""
    k, default, max_len = arg.kind, arg.default, arg.max_len or MAX_STR
    given = {} if default is REQUIRED else {"default": default}
    if k == "int":
        return int_arg(args, arg.name, arg.lo, arg.hi, **given)
    if k == "opt_int":
        return opt_int_arg(args, arg.name, arg.lo, arg.hi)
    if k == "num":
        return num_arg(args, arg.name)
    if k == "str":
        return str_arg(args, arg.name, max_len=max_len, **given)
    if k == "opt_str":
        return opt_str_arg(args, arg.name, max_len=max_len)
    if k == "bool":
        return bool_arg(args, arg.name, default=False if default is REQUIRED else default)
    if k == "int_list":
        return int_list_arg(args, arg.name)
    if k == "choice":
        return choice_arg(args, arg.name, arg.choices, **given)
    raise AssertionError(f"argument kind {k!r} has no check")


def check_args(command: Command, args: dict) -> dict:
    """Every argument of `command`, checked; arguments the command does not take are left out."""
    return {a.name: check_arg(a, args) for a in command.args}


def _need(value, key: str, what: str, kind: str):
    if value is None:
        raise RequestError(f"{key!r} must be {what} for a breakpoint of kind {kind!r}")
    return value


def _break_add(sess, kind, op_type, block, op, var, **_):
    if kind == "op_type":
        return sess.break_on(_need(op_type, "op_type", "a string", kind))
    if kind == "op":
        return sess.break_on(block=_need(block, "block", "an integer", kind), op=_need(op, "op", "an integer", kind))
    if kind == "write":
        return sess.break_on(write=_need(var, "var", "a string", kind))
    return sess.break_on(nan=True)


def _break_enable(sess, id, enabled, **_):
    for b in [*sess.breakpoints, *sess.watches]:
        if b.id == id:
            b.enabled = enabled
            return None
    raise RequestError(f"no breakpoint or watch #{id}")


def _nothing(_value) -> None:
    return None


def _paused(sess) -> None:
    if not sess.request_pause():
        raise RequestError("no move is running: nothing to pause")


# command -> handler(session, namespace=..., **checked arguments); the argument-less moves call the session's
# method of the same name
HANDLERS = {
    "run_to": lambda s, block, op, timestep, **_: _nothing(s.run_to(block, op, timestep)),
    "run_n": lambda s, n, **_: _nothing(s.run_n(n)),
    "goto_pause": lambda s, pause, **_: _nothing(s.goto_pause(pause)),
    "goto_event": lambda s, event, **_: _nothing(s.goto_event(event)),
    "pause": lambda s, **_: _paused(s),
    "break_add": _break_add,
    "break_enable": _break_enable,
    "break_remove": lambda s, id, **_: _nothing(s.remove_breakpoint(id)),
    "watch_add": lambda s, var, cond, op_type, lo, hi, **_: s.watch(var, cond, op_type=op_type, lo=lo, hi=hi),
    "provenance": lambda s, name, depth, **_: s.provenance(name, depth),
    "tensor": lambda s, name, scope, axes, index, diff, **_: tensor_json(s, name, scope, axes, index, diff),
    "tensor_send": lambda s, namespace, **a: tensor_send(s, namespace, **a),
    "tensor_set": lambda s, namespace, **a: tensor_set(s, namespace, **a),
}


def command_of(name) -> Command:
    command = BY_NAME.get(name) if isinstance(name, str) else None
    if command is None:
        raise UnknownCommand(f"unknown command {brief(name)}")
    return command


def run_command(sess, name, args: dict | None = None, *, namespace: dict | None = None,
                run_errors_in_state: bool = True):
    """Run command `name` with `args` on `sess`. A failed run during an argument-less move (step, cont, ...)
    ends the session, whose stop_reason says why: raised only when `run_errors_in_state` is false."""
    command = command_of(name)
    checked = check_args(command, args or {})
    if name == "state":
        return None
    if name not in HANDLERS:  # the argument-less moves
        try:
            getattr(sess, name)()
        except kc.OpRunError:
            if not run_errors_in_state:
                raise
        return None
    return HANDLERS[name](sess, namespace=namespace, **checked)


def to_wire(result):
    """What a reply's `result` holds of a command's result."""
    return result.to_json() if hasattr(result, "to_json") else result


def run_graph_action(sess, action, args: dict):
    """A program graph's debug action (break_op, run_to, break_write, watch): its command with the arguments
    the graph sent and those the action fixes. Returns (command name, result)."""
    spec = GRAPH_ACTION_BY_NAME.get(action) if isinstance(action, str) else None
    if spec is None:
        raise UnknownCommand(f"unknown debug action {brief(action)}: expected "
                             f"{', '.join(a.name for a in GRAPH_ACTIONS)}")
    sent = {k: args.get(k) for k in spec.sends}
    return spec.command, run_command(sess, spec.command, {**sent, **spec.fixed})
