"""How a notebook shows a Program and a Trace: their MIME bundles, registered with the running IPython shell.

A Program or a Trace offers only what it owns (its text, its JSON); the notebook form is built here, above them,
and handed to IPython's display formatter by `show_in_notebooks`, which the kernelcore package calls once when it
is imported. So the program and the trace import nothing of the view, and the view is the one part of the
engine that knows a notebook exists. It imports nothing of IPython: it speaks to a shell that is already running,
through the IPython module that shell has loaded.
"""
from __future__ import annotations

import sys

from ..ir.program import Program
from ..observe.trace import Trace
from .display import TRACE_EVENT_LIMIT, trace_mimebundle
from .program_parts import program_mimebundle


def program_bundle(program: Program) -> dict:
    """A program as a cell shows it: the ProgramJSON (its skeleton when big), its text and an HTML fallback."""
    return program_mimebundle(program)


def trace_bundle(trace: Trace) -> dict:
    """A trace as a cell shows it: its JSON (the first TRACE_EVENT_LIMIT events), summary, op table and text."""
    return trace_mimebundle(trace.to_json(limit=TRACE_EVENT_LIMIT), trace.summary(), trace.op_times(), repr(trace))


def show_in_notebooks(shell=None) -> bool:
    """Register the bundles of Program and Trace with `shell`'s display formatter (the running IPython shell
    when not given). False, registering nothing, where no shell runs: a script, a server process, a test."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        if ipython is None:  # nothing has loaded IPython, so no shell can be running
            return False
        shell = ipython.get_ipython()
        if shell is None:
            return False
    formatter = shell.display_formatter.mimebundle_formatter
    formatter.for_type(Program, program_bundle)
    formatter.for_type(Trace, trace_bundle)
    return True
