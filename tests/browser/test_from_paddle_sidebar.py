"""A dygraph Paddle model, captured with `kc.from_paddle` in a notebook whose kernel has Paddle 3, debugged
with the sidebar: step onto its conv2d, see the conv's output under its readable PIR name, continue into the
branch dy2static made of the model's Python `if`. Screenshots in out/screenshots/."""
from __future__ import annotations

import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from lab_helpers import debugger_sidebar, in_theme, shot, wait_at
from test_lab import errors_of, open_notebook, run_all

pytestmark = pytest.mark.browser

# The class is defined in the cell: dy2static reads forward's source, which IPython keeps for its cells.
MODEL = """import numpy as np
import paddle
from paddle.static import InputSpec
import kernelcore as kc

class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv2D(1, 4, 3, padding=1)
        self.fc = paddle.nn.Linear(4 * 8 * 8, 10)

    def forward(self, x):
        h = paddle.nn.functional.relu(self.conv(x))
        if paddle.mean(h) > 0.5:  # on a tensor: dy2static writes a conditional block for each branch
            h = h * 2.0
        else:
            h = h - 1.0
        return self.fc(paddle.flatten(h, 1))

paddle.seed(0)
net = Net()
net.eval()
prog, scope, feeds, fetches = kc.from_paddle(net, [InputSpec([None, 1, 8, 8], "float32", "x")])
x = np.random.default_rng(0).standard_normal((2, 1, 8, 8)).astype("float32")
feeds, fetches"""

SESSION = """import kernelcore_widgets  # registers the kernelcore.debugger comm target
sess = kc.debug(prog, feed={feeds[0]: x}, fetch_list=fetches, scope=scope)
bp = sess.break_on("scale")  # the only scale ops are the two branches' h * 2.0 and h - 1.0"""


def _notebook(lab, name: str, kernel: str, sources: list[str]) -> str:
    nb = new_notebook(cells=[new_code_cell(s) for s in sources],
                      metadata={"kernelspec": {"name": kernel, "display_name": kernel, "language": "python"},
                                "language_info": {"name": "python"}})
    nbformat.write(nb, lab.root / name)
    return name


def _var_value(sb, name: str) -> str:
    row = sb.locator(f".jp-Kernelcore-scopeVars[open] .jp-Kernelcore-var[data-name='{name}']").first
    row.wait_for()
    return row.locator(".jp-Kernelcore-varValue").text_content()


def test_a_from_paddle_model_is_debugged_with_the_sidebar(page, lab, paddle_kernel):
    name = _notebook(lab, "from_paddle_sidebar.ipynb", paddle_kernel, [MODEL, SESSION])
    open_notebook(page, lab, name)
    kernel = page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.name")
    assert kernel == paddle_kernel
    cells = run_all(page)
    assert not errors_of(cells), errors_of(cells)
    assert "['x']" in str(cells[0]["outputs"]), cells[0]["outputs"]  # the InputSpec's name is the feed

    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 feed")
    sb.locator("button.jp-Kernelcore-cmd-step").click()
    wait_at(sb, "op #1 conv2d")
    shot(sb, "from_paddle_sidebar_conv2d")

    # one op on: the conv has run, and its output carries the name kernelcore gave the PIR value
    sb.locator("button.jp-Kernelcore-cmd-next").click()
    wait_at(sb, "op #2 reshape2")
    value = _var_value(sb, "conv2d_0.out")
    assert value.startswith("float32[2, 4, 8, 8]"), value
    assert _var_value(sb, "conv2d_0.w_0").startswith("float32[4, 1, 3, 3]")  # Paddle's parameter name kept
    shot(sb, "from_paddle_sidebar_conv2d_out")

    # continue into whichever branch of the model's `if` the data takes
    sb.locator("button.jp-Kernelcore-cmd-cont").click()
    wait_at(sb, "scale")
    position = sb.locator(".jp-Kernelcore-dbgPosition").text_content()
    assert re.search(r"conditional_block > block [12] op #0 scale", position), position
    assert "breakpoint" in sb.locator(".jp-Kernelcore-dbgReason").text_content()
    frames = sb.locator(".jp-Kernelcore-frame").all_text_contents()
    assert len(frames) >= 2 and any("conditional_block" in f for f in frames), frames
    shot(sb, "from_paddle_sidebar_branch")
    try:
        with in_theme(page, "dark"):
            shot(sb, "from_paddle_sidebar_branch_dark")
    finally:
        # the Paddle kernel holds Paddle's runtime: end it rather than leave it to the server's exit
        page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
