"""kc.from_paddle: a live Paddle layer (or function) captured with Paddle's own jit machinery and run by kernelcore
with the layer's outputs. Paddle lives in its own venv, so the capture runs there, with this checkout of kernelcore
on its path; without Paddle in the running Python, from_paddle says how to get it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernelcore as kc
from kernelcore.api.from_paddle import PaddleCaptureError, from_paddle

ROOT = Path(__file__).resolve().parent.parent
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"

SCRIPT = r'''
import numpy as np, paddle
from kernelcore.api.from_paddle import from_paddle, PaddleCaptureError
import kernelcore as kc

class Net(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = paddle.nn.Conv2D(3, 4, 3, padding=1), paddle.nn.BatchNorm2D(4)
        self.fc = paddle.nn.Linear(4 * 8 * 8, 5)
    def forward(self, x):
        h = paddle.nn.functional.relu(self.bn(self.conv(x)))
        if paddle.mean(h) > 0.1:          # dy2static: a Python if on a tensor
            h = h * 2.0
        return self.fc(paddle.flatten(h, 1))

paddle.seed(0)
net = Net()
net.eval()
x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype("float32")
want = net(paddle.to_tensor(x)).numpy()
prog, scope, feeds, fetches = from_paddle(net, [paddle.static.InputSpec([None, 3, 8, 8], "float32", "x")])
assert feeds == ["x"], feeds
got, = kc.Executor().run(prog, feed={"x": x}, fetch_list=fetches, scope=scope)
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
assert "conv2d_0.w_0" in {v.name for v in prog.global_block().vars}

def gelu_sum(a, b):
    return paddle.nn.functional.gelu(a) + b * 3.0
spec = [paddle.static.InputSpec([4], "float32", "a"), paddle.static.InputSpec([4], "float32", "b")]
prog, scope, feeds, fetches = from_paddle(gelu_sum, spec)
a, b = np.linspace(-2, 2, 4).astype("float32"), np.ones(4, "float32")
got, = kc.Executor().run(prog, feed={"a": a, "b": b}, fetch_list=fetches, scope=scope)
np.testing.assert_allclose(got, gelu_sum(paddle.to_tensor(a), paddle.to_tensor(b)).numpy(), rtol=1e-6)

try:
    from_paddle(net, [paddle.static.InputSpec([None, 7], "float32", "x")])   # the wrong input shape
except PaddleCaptureError as e:
    assert "paddle.jit.save could not capture Net" in str(e), e
else:
    raise AssertionError("a capture that cannot work must say so")
print("ok")
'''


@pytest.mark.paddle
def test_from_paddle_captures_a_layer_and_a_function_with_their_outputs(tmp_path):
    if not PADDLE3.exists():
        pytest.skip(f"no Paddle 3.3.1 venv at {PADDLE3.parent.parent}: run ./dev test")
    env = dict(os.environ, PYTHONPATH=str(ROOT), GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    env.pop("FLAGS_enable_pir_api", None)
    script = tmp_path / "capture.py"  # dy2static reads the model's source: a file, not `python -c`
    script.write_text(SCRIPT)
    r = subprocess.run([str(PADDLE3), str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-2000:] + r.stderr[-4000:]


def test_from_paddle_without_paddle_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "paddle", None)  # `import paddle` raises ImportError
    with pytest.raises(PaddleCaptureError, match="pip install paddlepaddle"):
        from_paddle(object(), [1])
    assert issubclass(PaddleCaptureError, kc.KernelcoreError)
    assert kc.from_paddle is from_paddle and kc.PaddleCaptureError is PaddleCaptureError
