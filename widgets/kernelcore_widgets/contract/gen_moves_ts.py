"""The TypeScript of the command table (commands.py): the command list, each command's argument types, the
moves (buttons, palette entries, shortcuts) and a program graph's debug actions."""
from __future__ import annotations

import json

from .commands import CHOICES, COMMANDS, CONTROLS, GRAPH_ACTIONS, MOVES, Arg
from .gen_ts import ts_type


def _arg_type(a: Arg) -> str:
    return a.ref if a.ref is not None else ts_type(a.schema())


def _args_body(args, all_required: bool = False) -> str:
    fields = [f"{a.name}{'' if all_required or a.required else '?'}: {_arg_type(a)}" for a in args]
    return "{ " + "; ".join(fields) + " }" if fields else "Record<string, never>"


def _js(v) -> str:
    return json.dumps(v, ensure_ascii=False)


def _controls() -> list[str]:
    out = [f"export type Control = {' | '.join(_js(c.name) for c in CONTROLS)};", "",
           "/** A command offered beside the moves (a button, a palette entry and a shortcut); whileBusy: enabled only",
           " * while a move runs. */",
           "export interface ControlSpec {", "  name: Control;", "  label: string;", "  palette: string;",
           "  help: string;", "  commandId: string;", "  keys: string;", "  whileBusy: boolean;", "}", "",
           "export const CONTROLS: readonly ControlSpec[] = ["]
    for c in CONTROLS:
        k = c.control
        out.append(f"  {{ name: {_js(c.name)}, label: {_js(k.label)}, palette: {_js(k.palette)}, help: {_js(k.help)}, "
                   f"commandId: {_js(k.command_id)}, keys: {_js(k.keys)}, whileBusy: {str(k.while_busy).lower()} }},")
    return out + ["];"]


def lines() -> list[str]:
    out = [f"export const COMMANDS = [{', '.join(_js(c.name) for c in COMMANDS)}] as const;", ""]
    for name, choices in CHOICES.items():
        const = "".join("_" + ch if ch.isupper() and i else ch.upper() for i, ch in enumerate(name)) + "S"
        out.append(f"export const {const}: readonly {name}[] = [{', '.join(_js(c) for c in choices)}];")
    out += ["", "/** Each command's arguments (the kernel checks them against the same table). */",
            "export interface CommandArgs {"]
    out += [f"  {c.name}: {_args_body(c.args)};" for c in COMMANDS]
    out += ["}", "", f"export type Move = {' | '.join(_js(c.name) for c in MOVES)};", "",
            "/** A move as the front end offers it: a button, a palette entry and a shortcut (Lumino keystrokes). */",
            "export interface MoveSpec {", "  name: Move;", "  label: string;", "  palette: string;",
            "  help: string;", "  commandId: string;", "  keys: string;", "  backwards: boolean;", "}", "",
            "export const MOVES: readonly MoveSpec[] = ["]
    for c in MOVES:
        m = c.move
        out.append(f"  {{ name: {_js(c.name)}, label: {_js(m.label)}, palette: {_js(m.palette)}, help: {_js(m.help)}, "
                   f"commandId: {_js(m.command_id)}, keys: {_js(m.keys)}, backwards: {str(m.backwards).lower()} }},")
    out += ["];", ""] + _controls()
    out += ["", "/** A program graph's debug actions: `{type: \"debug\", ...}` messages the kernel runs as commands. */",
            "export type DebugAction ="]
    out += [f"  | {{ action: {_js(a.name)}; {_args_body(a.args(), all_required=True)[2:]}" for a in GRAPH_ACTIONS]
    out[-1] += ";"
    out += ["", "/** The command each graph action runs, with the arguments the action fixes. */",
            "export const GRAPH_ACTIONS: { readonly [A in DebugAction['action']]: { command: Command; "
            "fixed: Record<string, unknown> } } = {"]
    out += [f"  {a.name}: {{ command: {_js(a.command)}, fixed: {_js(a.fixed)} }}," for a in GRAPH_ACTIONS]
    return out + ["};"]
