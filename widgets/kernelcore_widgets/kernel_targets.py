"""Registering a comm target in the running IPython kernel, running a comm's messages on the kernel's main
shell, holding an open comm with its channel and reading a message's data: the one place that knows how (the
debugger's, the training health's and the program parts' targets, and every widget, go through it)."""
from __future__ import annotations

from typing import Callable

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


def pin_to_main_shell(comm, when: Callable[[dict], bool] | None = None) -> None:
    """Have the kernel run `comm`'s messages from the browser (those `when(data)` accepts; all by default) on
    its main shell, in order with the cells.

    JupyterLab 4.6 sends comm messages over kernel subshells (one per comm target), and ipykernel 7 routes a
    comm's messages to the subshell that last sent on that comm (`_reply_subshell_for`): a breakpoint added
    from a ProgramGraph widget's handler, or a subshell JupyterLab deleted when the comm reconnected, left the
    sidebar's next request waiting forever. And a debug session is a generator that cells drive too: one
    thread must drive it. A no-op with kernels that have no such routing."""
    route = getattr(comm, "_reply_subshell_for", None)
    if route is None:
        return

    def main_shell(data, default, route=route):
        if when is None or when(data):
            return None  # the main shell
        return route(data, default)
    comm._reply_subshell_for = main_shell


def message_data(msg):
    """The `data` a comm message from the browser carries; None when the message has not the shape of one
    (the channel then answers that the request is not a JSON object)."""
    content = msg.get("content") if isinstance(msg, dict) else None
    return content.get("data") if isinstance(content, dict) else None


def hold_open(comm, channel, open_comms: list, on_msg: Callable[[dict], None], on_closed: Callable[[], None]) -> None:
    """Keep `(comm, channel)` in `open_comms` while the comm is open (the comm manager alone does not keep a
    target's channel alive), hand each message to `on_msg`, and call `on_closed` once the browser closes it."""
    pair = (comm, channel)
    open_comms.append(pair)
    comm.on_msg(on_msg)

    def _closed(_msg):
        on_closed()
        if pair in open_comms:
            open_comms.remove(pair)
    comm.on_close(_closed)
