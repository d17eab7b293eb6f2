"""Registering a comm target in the running IPython kernel: the one place that knows how (the debugger's and the
program parts' targets both go through it)."""
from __future__ import annotations

_registered: set[str] = set()


def register_target(target: str, opener) -> bool:
    """Register `opener(comm, open_msg)` for comm target `target` in the running IPython kernel, once. False when
    there is no kernel with comms here (plain Python, a test, a console without a kernel); nothing happens then."""
    if target in _registered:
        return True
    try:
        from IPython import get_ipython
        ip = get_ipython()
        if ip is None or not hasattr(ip, "kernel"):
            return False
        from comm import get_comm_manager
        get_comm_manager().register_target(target, opener)
    except Exception:  # not in a kernel, or a kernel without comms: nothing to register
        return False
    _registered.add(target)
    return True
