"""The debug commands as one table: their names, arguments, and, for the moves, the buttons, palette entries
and keyboard shortcuts of the front end.

Everything else is made from this table: the kernel's dispatcher (dispatch.py) checks each request's
arguments against `Arg`s, the debug protocol's JSON schema gets its `Command` enum and request arguments
from it, and the TypeScript front end its command list, argument types and move table
(labextension/scripts/gen_contract.py writes both; tests/test_contract.py fails when either is stale).
A command or a shortcut is added here and nowhere else.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kernelcore.observe.watch import CONDITIONS as WATCH_CONDS

from ..requests import MAX_INT, MAX_NAME

REQUIRED = object()  # an argument with no default: a request must give it

# an argument kind -> its JSON schema (the TypeScript type is derived from that)
ARG_SCHEMAS = {
    "int": {"type": "integer"},
    "opt_int": {"type": ["integer", "null"]},
    "num": {"type": ["number", "null"]},
    "str": {"type": "string"},
    "opt_str": {"type": ["string", "null"]},
    "bool": {"type": "boolean"},
    "int_list": {"type": ["array", "null"], "items": {"type": "integer"}},
}


@dataclass(frozen=True)
class Arg:
    """One argument of a request: `kind` is a key of ARG_SCHEMAS or "choice" (one of `choices`)."""

    name: str
    kind: str
    default: object = REQUIRED
    choices: tuple = ()
    lo: int = -MAX_INT
    hi: int = MAX_INT
    max_len: int | None = None
    ref: str | None = None  # a choice's name in the schema's $defs (its enum written there once)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED and not self.kind.startswith("opt_") and self.kind not in ("num", "int_list")

    def schema(self) -> dict:
        if self.ref is not None:
            return {"$ref": f"#/$defs/{self.ref}"}
        return {"enum": list(self.choices)} if self.kind == "choice" else dict(ARG_SCHEMAS[self.kind])


@dataclass(frozen=True)
class Move:
    """How the front end offers a move: a button `label`, a palette entry `palette`, what it does (`help`),
    its JupyterLab command id and shortcut (Lumino keystrokes), and whether it goes back in the record."""

    label: str
    palette: str
    help: str
    command_id: str
    keys: str
    backwards: bool = False


@dataclass(frozen=True)
class Control:
    """A command the front end offers beside the moves, with a button `label`, a palette entry `palette`, what
    it does (`help`), its JupyterLab command id and shortcut (Lumino keystrokes); `while_busy`: it is enabled
    only while a move runs (Pause), and disabled otherwise."""

    label: str
    palette: str
    help: str
    command_id: str
    keys: str
    while_busy: bool = False


@dataclass(frozen=True)
class Command:
    name: str
    doc: str
    args: tuple = ()
    move: Move | None = None  # a move of the cursor the front end offers as a button and a shortcut
    moves_cursor: bool = False
    control: Control | None = None  # not a move, but offered as a button, a palette entry and a shortcut


BREAK_KINDS = ("op_type", "op", "write", "nan")
SEND_WHAT = ("value", "slice")
EDIT_KINDS = ("zero", "cell", "replace")
CHOICES = {"BreakKind": BREAK_KINDS, "WatchCond": WATCH_CONDS, "SendWhat": SEND_WHAT,
           "EditKind": EDIT_KINDS}  # written into the schema
MAX_PROVENANCE_DEPTH = 64  # levels of a provenance tree one request may ask for


def _move(name, label, palette, help, keys, backwards=False) -> Command:
    command_id = "kernelcore:" + {"cont": "continue", "reverse_cont": "reverse-continue"}.get(
        name, name.replace("_", "-"))
    return Command(name, help, move=Move(label, palette, help, command_id, keys, backwards), moves_cursor=True)


_TENSOR_ARGS = (Arg("name", "str"), Arg("scope", "opt_int"), Arg("axes", "int_list"), Arg("index", "int_list"),
                Arg("diff", "bool", default=False))

COMMANDS: tuple[Command, ...] = (
    Command("state", "the state only: nothing moves"),
    _move("step", "Step", "Kernelcore: Step (into sub-blocks)", "one op, into sub-blocks", "Accel Shift F11"),
    _move("next", "Next", "Kernelcore: Next (over sub-blocks)", "one op of this block, over sub-blocks",
          "Accel Shift F10"),
    _move("finish", "Finish", "Kernelcore: Finish (to the end of this block)", "to the end of this block",
          "Accel Shift F12"),
    _move("step_timestep", "Step timestep", "Kernelcore: Step to the next timestep", "to the next timestep of the loop",
          "Accel Shift F8"),
    _move("cont", "Continue", "Kernelcore: Continue", "to the next breakpoint or watch hit, or the end",
          "Accel Shift F9"),
    _move("back", "Back", "Kernelcore: Back one op", "one op back (time travel: nothing runs)", "Alt Shift F10",
          backwards=True),
    _move("back_timestep", "Back timestep", "Kernelcore: Back to the previous timestep",
          "to the start of the previous timestep", "Alt Shift F8", backwards=True),
    _move("reverse_cont", "Reverse", "Kernelcore: Reverse continue", "back to the previous breakpoint or watch hit",
          "Alt Shift F9", backwards=True),
    Command("present", "back to the live end of the run", moves_cursor=True),
    Command("pause", "ask the move that is running to stop before its next op (served beside the move, on the "
            "comm's own subshell; the move's reply and state follow); an error reply when no move is running",
            # F6 as in VS Code: no JupyterLab shortcut and none of the moves' (those hold Shift)
            control=Control("Pause", "Kernelcore: Pause the running move", "stop the running move before its next op",
                            "kernelcore:pause", "F6", while_busy=True)),
    Command("run_to", "run to the op `op` of block `block` (at `timestep`, if given)",
            (Arg("block", "int"), Arg("op", "int"), Arg("timestep", "opt_int")), moves_cursor=True),
    Command("run_n", "run `n` steps", (Arg("n", "int"),), moves_cursor=True),
    Command("goto_pause", "move the cursor to pause `pause` of the record", (Arg("pause", "int"),), moves_cursor=True),
    Command("goto_event", "move the cursor to trace event `event`", (Arg("event", "int"),), moves_cursor=True),
    Command("break_add", "add a breakpoint: on an op type (op_type), an op (block, op), a write of a variable (var) "
            "or any NaN", (Arg("kind", "choice", choices=BREAK_KINDS, ref="BreakKind"), Arg("op_type", "opt_str"),
                           Arg("block", "opt_int"), Arg("op", "opt_int"), Arg("var", "opt_str"))),
    Command("break_enable", "turn breakpoint or watch `id` on or off", (Arg("id", "int"), Arg("enabled", "bool"))),
    Command("break_remove", "remove breakpoint or watch `id`", (Arg("id", "int"),)),
    Command("watch_add", "watch a variable (var) or every output of an op type (op_type) for a condition",
            (Arg("var", "opt_str"), Arg("cond", "choice", choices=WATCH_CONDS, ref="WatchCond"), Arg("op_type", "opt_str"),
             Arg("lo", "num"), Arg("hi", "num"))),
    Command("provenance", "the writes the value of `name` came from, `depth` levels deep",
            (Arg("name", "str"), Arg("depth", "int", default=4, lo=0, hi=MAX_PROVENANCE_DEPTH))),
    Command("tensor", "the value of `name` at the cursor: seen from the cursor's op, else in `scope`, else anywhere "
            "in the forest", _TENSOR_ARGS),
    Command("tensor_send", "bind a host copy of `name`'s value (what: value) or of the shown slice (what: slice) "
            "in the notebook under `target` (an identifier, no keyword, NFKC-normal, not dunder); a defined "
            "target is replaced only with overwrite true, which the front end sends after the person confirmed; "
            "else the reply is an error whose result is a NameTaken proposing a free name",
            _TENSOR_ARGS + (Arg("target", "str", max_len=MAX_NAME), Arg("what", "choice", default="value", choices=SEND_WHAT, ref="SendWhat"),
                            Arg("overwrite", "bool", default=False))),
    Command("tensor_set", "edit `name` where the session waits (the present of a running session): zero it, set "
            "the cell at `index` to `value` (a number, or nan / inf / -inf), or replace it with the notebook "
            "variable `source` (same shape, a dtype of the same kind); the run forks and the trace records the "
            "edit", (Arg("name", "str"), Arg("edit", "choice", choices=EDIT_KINDS, ref="EditKind"),
                      Arg("index", "int_list"), Arg("value", "opt_str", max_len=64),
                      Arg("source", "opt_str", max_len=MAX_NAME))),
)

BY_NAME = {c.name: c for c in COMMANDS}
MOVES = tuple(c for c in COMMANDS if c.move is not None)  # the moves the front end offers, in button order
MOVE_NAMES = tuple(c.name for c in MOVES)
CONTROLS = tuple(c for c in COMMANDS if c.control is not None)  # offered beside the moves, in button order


@dataclass(frozen=True)
class GraphAction:
    """A program graph's debug action (Break here, Run to here, Break on write, Watch): a command whose
    arguments `sends` come from the graph and `fixed` ones from the action itself."""

    name: str
    command: str
    sends: tuple
    fixed: dict = field(default_factory=dict)

    def args(self) -> tuple:
        """The command's Args the graph sends, in `sends` order."""
        by_name = {a.name: a for a in BY_NAME[self.command].args}
        return tuple(by_name[n] for n in self.sends)


GRAPH_ACTIONS: tuple[GraphAction, ...] = (
    GraphAction("break_op", "break_add", ("block", "op"), fixed={"kind": "op"}),
    GraphAction("run_to", "run_to", ("block", "op")),
    GraphAction("break_write", "break_add", ("var",), fixed={"kind": "write"}),
    GraphAction("watch", "watch_add", ("var", "cond", "lo", "hi")),
)
GRAPH_ACTION_BY_NAME = {a.name: a for a in GRAPH_ACTIONS}
