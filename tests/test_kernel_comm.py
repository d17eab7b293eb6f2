"""The debug comm in a real IPython kernel (jupyter_client, loopback only): a barrage of "send to notebook"
requests over the `kernelcore.debugger` comm, opened from the client side as JupyterLab opens it, must
leave every user variable, `kc` and `__builtins__` intact, bind only the fresh names, answer each request
once, and leave the kernel running later cells."""
from __future__ import annotations

import json
import queue
import time
import uuid

import pytest

pytest.importorskip("ipykernel")
jupyter_client = pytest.importorskip("jupyter_client")
pytest.importorskip("anywidget")

SETUP = """
import numpy as np
import kernelcore as kc
import kernelcore_widgets
value = "mine"
model = [1, 2, 3]
h_t3 = 3
prog = kc.Program()
with kc.program_guard(prog):
    x = prog.global_block().create_var("x", [2, 3])
    y = kc.op.tanh(x)
sess = kc.debug(prog, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[y])
"""

TAKEN = ["value", "model", "h_t3", "kc", "np", "print"]
UNUSABLE = ["__builtins__", "None", "class", "match", "\uff4b\uff43", "__name__", "not a name"]
FRESH = ["fresh_a", "fresh_b"]

CHECK = """
import builtins as _b
_ns = get_ipython().user_ns
assert value == "mine" and model == [1, 2, 3] and h_t3 == 3, (value, model, h_t3)
assert kc.__name__ == "kernelcore" and np.__name__ == "numpy" and print is _b.print
assert _ns["__builtins__"] in (_b, _b.__dict__)
assert not [k for k in ("None", "class", "match", "\\uff4b\\uff43", "not a name") if k in _ns]
print(json.dumps(sorted(k for k in _ns if k.startswith("fresh_"))))
"""


@pytest.fixture(scope="module")
def kernel():
    km = jupyter_client.KernelManager(kernel_name="python3")
    km.ip = "127.0.0.1"
    try:
        km.start_kernel(extra_arguments=["--HistoryManager.enabled=False"])
    except Exception as e:  # no python3 kernel spec here
        pytest.skip(f"cannot start an IPython kernel: {e}")
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


def run(client, code: str) -> str:
    """Run a cell; its stdout (an error in the cell fails the test)."""
    out: list[str] = []

    def on_output(msg):
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(msg["content"]["traceback"]))
    reply = client.execute_interactive(code, timeout=60, output_hook=on_output)
    assert reply["content"]["status"] == "ok", "".join(out)
    return "".join(out)


def comm_messages(client, comm_id: str, until, timeout: float = 30.0) -> list[dict]:
    """The data of the kernel's comm messages on `comm_id` until `until(got)` holds."""
    got: list[dict] = []
    end = time.monotonic() + timeout
    while not until(got):
        left = end - time.monotonic()
        if left <= 0:
            raise AssertionError(f"the kernel answered {len(got)} comm messages: {got[-3:]}")
        try:
            msg = client.get_iopub_msg(timeout=left)
        except queue.Empty:
            continue
        if msg["msg_type"] == "comm_msg" and msg["content"]["comm_id"] == comm_id:
            got.append(msg["content"]["data"])
    return got


def test_a_barrage_of_sends_over_the_real_comm_keeps_the_users_names(kernel):
    run(kernel, SETUP + "import json\n")
    comm_id = uuid.uuid4().hex
    kernel.shell_channel.send(kernel.session.msg("comm_open", {"comm_id": comm_id, "target_name":
                                                               "kernelcore.debugger", "data": {}}))
    first = comm_messages(kernel, comm_id, lambda got: any(m.get("type") == "state" for m in got))
    assert first[-1]["state"]["session"] is not None  # the comm is open and follows the session
    targets = TAKEN + UNUSABLE + FRESH + ["fresh_a"]  # the second fresh_a is taken by the first
    for n, target in enumerate(targets, 1):
        kernel.shell_channel.send(kernel.session.msg("comm_msg", {"comm_id": comm_id, "data": {
            "type": "request", "id": n, "command": "tensor_send", "args": {"name": "x", "target": target}}}))
    got = comm_messages(kernel, comm_id, lambda got: len([m for m in got if m.get("type") == "reply"])
                        >= len(targets))
    replies = {m["id"]: m for m in got if m.get("type") == "reply"}
    assert sorted(replies) == list(range(1, len(targets) + 1))  # each answered once
    ok = [targets[i - 1] for i, r in replies.items() if r["ok"]]
    assert ok == FRESH
    for name in TAKEN:
        r = replies[targets.index(name) + 1]
        assert r["result"]["taken"] == name and r["result"]["proposed"] == f"{name}_2"
    assert json.loads(run(kernel, CHECK).strip().splitlines()[-1]) == FRESH
    assert run(kernel, "print(fresh_a.shape, 6 * 7)").split() == ["(2,", "3)", "42"]  # later cells run
