"""kernelcore's Jupyter widgets (anywidget) and JupyterLab integration.

    from kernelcore_widgets import (ProgramGraph, ScopeForest, RNNStepper, TraceTimeline, Debugger, TensorViewer,
                                    HealthView)

The views are ESM modules built from labextension/src/views/ into static/; the JupyterLab extension
(renderers for kernelcore's MIME types, file viewers, the debugger sidebar) into labextension/; the
server extension (kernelcore_widgets.server) lets the file viewer open .pdmodel files. Importing it in a
kernel registers the `kernelcore.debugger` comm target the debugger sidebar talks to (kernelcore_widgets.comm)
and `kernelcore.program`, which the program renderer fetches big programs' groups through (program_comm), and
`kernelcore.health`, the "Training health" panel's view of the flight recorders (health_comm).
"""
from __future__ import annotations

from . import comm as _comm
from . import health_comm as _health_comm
from . import program_comm as _program_comm
from ._base import FrontEndNotBuilt
from .debugger import Debugger, active_debugger
from .health_view import HealthView
from .program_graph import ProgramGraph
from .rnn_stepper import RNNStepper
from .schema import value_preview
from .scope_forest import ScopeForest
from .tensor_viewer import TensorViewer
from .trace_timeline import TraceTimeline

__all__ = ["Debugger", "FrontEndNotBuilt", "HealthView", "ProgramGraph", "RNNStepper", "ScopeForest", "TensorViewer",
           "TraceTimeline", "active_debugger", "value_preview"]


_comm.register()  # in an IPython kernel: the sidebar can reach the debug session; elsewhere a no-op
_program_comm.register()  # ... and the program renderer can fetch the parts of big programs
_health_comm.register()  # ... and the training-health panel can show the recorders


def load_ipython_extension(_ipython) -> None:
    """`%load_ext kernelcore_widgets`: registers the debugger sidebar's and the program renderer's comm targets."""
    _comm.register()
    _program_comm.register()
    _health_comm.register()


def _jupyter_labextension_paths():
    return [{"src": "labextension", "dest": "@kernelcore/labextension"}]


def _jupyter_server_extension_points():
    return [{"module": "kernelcore_widgets.server"}]
