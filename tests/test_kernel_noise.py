"""What a notebook shows in a real IPython kernel (jupyter_client, loopback only): no warning the user did not
cause under widget cells, and a kernelcore error as the user's frames and its one clear line, without
kernelcore's own frames."""
from __future__ import annotations

import queue
import time

import pytest

pytest.importorskip("ipykernel")
jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("anywidget")

from test_kernel_comm import kernel  # noqa: E402,F401  (the loopback kernel fixture)

SETUP = """
import numpy as np
import kernelcore as kc
from kernelcore_widgets import ProgramGraph, ScopeForest, TraceTimeline
prog = kc.Program()
with kc.program_guard(prog):
    x = prog.global_block().create_var("x", [2, 3])
    y = kc.op.tanh(x)
scope = kc.Scope()
with kc.trace(retain="references") as tr:
    kc.Executor().run(prog, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y], scope=scope)
"""

# a message each widget's view sends, as the browser would
MESSAGES = {"ProgramGraph(prog)": {"type": "select", "id": "o0:0"},
            "ScopeForest(scope)": {"type": "open", "scope": 0, "name": "x"},
            "TraceTimeline(tr)": {"type": "select", "seq": 0}}


def control(client, kind: str, content: dict) -> dict:
    client.control_channel.send(client.session.msg(kind, content))
    return client.control_channel.get_msg(timeout=30)["content"]


def outputs(client, seconds: float) -> tuple[list[str], list[str]]:
    """(the stream texts, the comm ids opened) on iopub for `seconds`."""
    texts, comms = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            msg = client.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            continue
        if msg["msg_type"] == "stream":
            texts.append(msg["content"]["text"])
        elif msg["msg_type"] == "comm_open":
            comms.append(msg["content"]["comm_id"])
    return texts, comms


def execute(client, code: str, subshell: str | None = None) -> str:
    """Send `code` to run (on `subshell`, else the main shell); its message id."""
    msg = client.session.msg("execute_request", {"code": code, "silent": False, "store_history": False,
                                                 "user_expressions": {}, "allow_stdin": False,
                                                 "stop_on_error": True})
    if subshell is not None:
        msg["header"]["subshell_id"] = subshell
    client.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def wait_for_reply(client, msg_id: str, seconds: float = 30) -> None:
    """Wait for the shell's reply to `msg_id`, setting aside the replies to others."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if client.get_shell_msg(timeout=0.1)["parent_header"].get("msg_id") == msg_id:
                return
        except queue.Empty:
            continue
    raise TimeoutError(f"no reply to {msg_id} in {seconds} s")


def test_widget_messages_on_a_subshell_jupyterlab_deletes_leave_no_asyncio_warning(kernel):  # noqa: F811
    reply = kernel.execute_interactive(SETUP, timeout=60)
    assert reply["content"]["status"] == "ok"
    if "subshell_id" not in control(kernel, "create_subshell_request", {}):
        pytest.skip("this kernel has no subshells")
    texts = []
    for cell, data in MESSAGES.items():
        sub = control(kernel, "create_subshell_request", {})["subshell_id"]
        execute(kernel, cell)
        got, comms = outputs(kernel, 1.0)
        texts += got
        widget = comms[-1]  # the last comm opened: the widget (anywidget opens its layout's first)
        busy = execute(kernel, "import time; time.sleep(1)", sub)  # the subshell is busy: the view's messages
        for _ in range(20):                                          # would queue behind it there
            msg = kernel.session.msg("comm_msg", {"comm_id": widget, "data": {"method": "custom", "content": data}})
            msg["header"]["subshell_id"] = sub
            kernel.shell_channel.send(msg)
        # JupyterLab deletes an idle subshell: deleting one still running a cell drops that cell's own task
        wait_for_reply(kernel, busy)
        assert control(kernel, "delete_subshell_request", {"subshell_id": sub})["status"] == "ok"
        texts += outputs(kernel, 0.5)[0]
    execute(kernel, "import gc; gc.collect()")  # a pending task left behind is reported when collected
    texts += outputs(kernel, 1.0)[0]
    assert not [t for t in texts if "Task was destroyed" in t], texts


def test_a_kernelcore_error_shows_the_users_frames_and_its_message_only(kernel):  # noqa: F811
    reply = kernel.execute_interactive(SETUP, timeout=60)
    assert reply["content"]["status"] == "ok"
    errors = []
    kernel.execute_interactive("sess = kc.debug(prog, feed={'x': 1})", timeout=60,
                               output_hook=lambda m: errors.append(m["content"]) if m["msg_type"] == "error"
                               else None)
    assert len(errors) == 1 and errors[0]["ename"] == "ShapeError"
    text = "\n".join(errors[0]["traceback"])
    assert "kernelcore/" not in text.replace("kernelcore's", "")  # none of kernelcore's own frames
    assert "sess = kc.debug(prog, feed={'x': 1})" in text  # the user's line
    assert text.splitlines()[-1] == "ShapeError: feed 'x': expected shape [2, 3] (-1 = any), got []"
