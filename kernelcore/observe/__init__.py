"""Watching a program run: the trace and its Perfetto export, the debug session (positions, the recorded run,
moves, provenance), watch conditions and the scope forest. Everything here listens to the executor's events or
reads a finished run; nothing changes how a program runs."""
