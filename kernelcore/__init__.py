"""kernelcore: an executor and visual debugger for programs written as nested blocks."""
from __future__ import annotations

__version__ = "0.1.0"

from .errors import (AttrError, KernelcoreError, LoadError, NonFiniteError, OpRunError, OpValidationError, PlaceError,
                     ProgramError, ScopeError, ShapeError, UnknownNameError, UnknownOpError)
from .errors import DtypeError, FeedError, TraceError
from .runtime.executor import Executor
from .runtime.place import CPUPlace, GPUPlace, gpu_available
from .transforms.prune import PruneResult, prune
from .ir.program import Block, Operator, Program, Variable, default_main_program, default_startup_program, program_guard
from .ir.registry import all_op_defs, get_op_def
from .runtime.scope import Scope, global_scope
from . import ops as _ops  # noqa: F401  - registers every op
from .api import opcreators as op
from .observe.trace import Trace, trace
from .observe.debug import DebugSession, Frame, Origin, Position, RecordedRun, TimeView, active_session, debug
from .observe.compare import compare_runs
from .observe.recorder import record

__all__ = [
    "AttrError", "DtypeError", "FeedError", "TraceError", "Block", "DebugSession", "Frame", "Origin", "Position",
    "PruneResult", "RecordedRun", "TimeView", "active_session", "debug", "prune", "CPUPlace", "Executor", "GPUPlace",
    "KernelcoreError", "LoadError", "OpRunError",
    "OpValidationError", "Operator", "PlaceError", "Program", "ProgramError", "Scope", "ScopeError",
    "ShapeError", "Trace", "UnknownNameError", "UnknownOpError", "Variable", "all_op_defs", "default_main_program",
    "default_startup_program", "get_op_def", "global_scope", "gpu_available", "op", "program_guard", "trace",
    "compare_runs", "record",
]

# Files: programs, parameter streams and inference models in Paddle's formats.
from .formats.paddle_files import (load_inference_model, load_params, load_program, save_inference_model, save_params,
                                   save_program)
__all__ += ["load_inference_model", "load_params", "load_program", "save_inference_model", "save_params",
            "save_program"]
# A live Paddle model (a Layer or a function) captured with Paddle's own jit machinery; Paddle stays optional.
from .api.from_paddle import PaddleCaptureError, from_paddle  # noqa: E402
__all__ += ["from_paddle", "PaddleCaptureError"]

# Control-flow layers (StaticRNN, IfElse) and the scope forest of a run.
from .api import layers  # noqa: E402
from .observe.scope_forest import ScopeForest  # noqa: E402
__all__ += ["layers", "ScopeForest"]

# Training: optimizers (kc.optimizer.SGD/Momentum/Adam) and Model.
from .transforms import optimizer  # noqa: E402
from .api.model import Model  # noqa: E402
__all__ += ["optimizer", "Model"]
from .transforms.backward import append_backward, gradients  # noqa: E402,F401  - training programs: gradient ops
from . import grad as _grad_rules  # noqa: E402,F401  - registers every gradient rule (after the ops they differentiate)
from .native import kernels as _fast_kernels  # noqa: E402,F401  - the C variants the executor may choose (runtime/fast_paths.py)
from .device import kernels as _device_kernels  # noqa: E402,F401  - the fused GPU variants (runtime/fast_paths.py)

# Notebooks: a Program or a Trace as a cell's result shows through the view's MIME bundles (a no-op without IPython).
from .view import notebook as _notebook  # noqa: E402
_notebook.show_in_notebooks()
