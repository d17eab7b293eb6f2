"""The debugger's public names, from the modules that hold them: `position` (frames, positions, pauses),
`recorded_run` (a run as recorded, `TimeView`), `provenance` (origins), `breakpoints`, `loop_steps` and
`session` (`DebugSession`, `kc.debug`, the session hooks a front end subscribes to). See session.py."""
from __future__ import annotations

from .breakpoints import Breakpoint
from .loop_steps import StepRecord
from .position import END_OF_BLOCK, Frame, Pause, Position, frame_text
from .program_names import check_known, program_names
from .provenance import DEFAULT_PROVENANCE_NODES, Origin
from .recorded_run import RecordedRun, TimeView
from .session import DebugSession, active_session, debug, session_hooks

__all__ = ["Breakpoint", "DEFAULT_PROVENANCE_NODES", "DebugSession", "END_OF_BLOCK", "Frame", "Origin", "Pause",
           "Position", "RecordedRun", "StepRecord", "TimeView", "active_session", "check_known", "debug",
           "frame_text", "program_names", "session_hooks"]
