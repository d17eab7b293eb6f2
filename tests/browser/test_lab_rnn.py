"""JupyterLab in Chromium: the RNN stepper over Paddle's fused `rnn` op (an LSTM) shows what the kernel holds."""
from __future__ import annotations

import re

import numpy as np

from lab_helpers import shot
from test_lab import _assert_shown, code_cell, errors_of, exec_sources, open_notebook, run_all, write_notebook

SETUP = '''import numpy as np
import kernelcore as kc
T, B, I, H = 5, 2, 3, 4
rng = np.random.default_rng(7)
f32 = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
feed = {"x": f32(T, B, I), "h0": f32(1, B, H), "c0": f32(1, B, H),
        "w_ih": f32(4 * H, I), "w_hh": f32(4 * H, H), "b_ih": f32(4 * H), "b_hh": f32(4 * H)}
prog = kc.Program()
blk = prog.global_block()
for name, v in feed.items():
    blk.create_var(name, list(v.shape))
blk.append_op("rnn", {"Input": ["x"], "PreState": ["h0", "c0"], "WeightList": ["w_ih", "w_hh", "b_ih", "b_hh"]},
              {"Out": ["out"], "State": ["h_n", "c_n"], "Reserve": ["reserve"], "DropoutState": ["drop"]},
              {"mode": "LSTM", "num_layers": 1, "hidden_size": H, "input_size": I})
'''


def _lstm(feed, T):
    """x_proj_t and h_t of the one-layer LSTM, in NumPy."""
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h, c = feed["h0"][0], feed["c0"][0]
    projs, hs = [], []
    for t in range(T):
        xp = feed["x"][t] @ feed["w_ih"].T + feed["b_ih"] + feed["b_hh"]
        i, f, g, o = np.split(xp + h @ feed["w_hh"].T, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        projs.append(xp)
        hs.append(h)
    return projs, hs


def test_stepping_a_fused_lstm_shows_the_kernels_values(page, lab):
    name = write_notebook(lab, "fused_rnn_stepper.ipynb", [
        SETUP, "from kernelcore_widgets import RNNStepper\nsess = kc.debug(prog, feed=feed, fetch_list=['out'], "
               "scope=kc.Scope())\nstepper = RNNStepper(sess)\nstepper"])
    ns = exec_sources([SETUP])
    feed, T = ns["feed"], ns["T"]
    projs, hs = _lstm(feed, T)
    open_notebook(page, lab, name)
    assert not errors_of(run_all(page))
    view = code_cell(page, 1).locator(".jp-Kernelcore-RNNStepper").first
    view.scroll_into_view_if_needed()
    nxt, prev = view.locator("button.jp-Kernelcore-next"), view.locator("button.jp-Kernelcore-prev")

    def var(role, name):
        names = page.locator(".jp-Kernelcore-varName", has_text=re.compile(f"^{name}$"))
        return view.locator(f".jp-Kernelcore-col-{role} .jp-Kernelcore-stepVar").filter(has=names).first

    for t in range(3):
        nxt.click()
        view.locator(".jp-Kernelcore-stepBox.jp-Kernelcore-current", has_text=f"t={t}").wait_for()
        var("x_t", "x_proj").locator(".jp-Kernelcore-stats").wait_for()
        _assert_shown(var("x_t", "x_proj"), projs[t], f"x_proj at t={t}")
        _assert_shown(var("h_prev", "h_prev"), feed["h0"][0] if t == 0 else hs[t - 1], f"h_prev at t={t}")
        shot(view, f"fused_rnn_stepper_t{t}")
    prev.click()  # time travel: the dropped step scope of t=1 rebuilt from the trace, with its h
    view.locator(".jp-Kernelcore-stepBox.jp-Kernelcore-current", has_text="t=1").wait_for()
    h_new = var("h_new", "h")
    h_new.locator(".jp-Kernelcore-stats").wait_for()
    _assert_shown(h_new, hs[1], "h at t=1")
    assert "rebuilt" in view.locator(".jp-Kernelcore-status").first.text_content()
    shot(view, "fused_rnn_stepper_back_to_t1")
