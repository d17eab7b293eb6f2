"""A live Paddle model as a kernelcore program: `kc.from_paddle(layer, input_spec)`.

A dygraph user debugs their own model in two lines:

    prog, scope, feeds, fetches = kc.from_paddle(model, [paddle.static.InputSpec([None, 3, 224, 224], "float32", "x")])
    sess = kc.debug(prog, feed={"x": x}, fetch_list=fetches, scope=scope)

Paddle captures the program with its own machinery (`paddle.jit.save`, dy2static, Paddle 3's PIR by default) into
a temporary directory; kernelcore reads it back as it reads any saved model, with the layer's current weights.
Paddle is an optional extra: it is imported here, when asked for, and nothing else in kernelcore needs it.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import KernelcoreError


class PaddleCaptureError(KernelcoreError):
    """Paddle could not capture the model as a program (or is not installed here)."""


def from_paddle(model, input_spec, *, place=None):
    """Capture a `paddle.nn.Layer` (or a function on tensors) as a program.

    `input_spec`: a list of `paddle.static.InputSpec` (their names become the feed names) or of example tensors.
    The layer is captured in the mode it is in (call `model.eval()` first for inference: dropout and batch norm
    follow the mode). Returns (program, scope holding the weights, feed names, fetch names), as
    `kc.load_inference_model` does; `place` as there.
    """
    try:
        import paddle
    except ImportError:
        raise PaddleCaptureError("kc.from_paddle needs PaddlePaddle in this Python (pip install paddlepaddle); "
                                 "or save the model with paddle.jit.save and open it with kc.load_inference_model")
    from ..formats.paddle_files import load_inference_model

    if not isinstance(input_spec, (list, tuple)) or not input_spec:
        raise PaddleCaptureError("input_spec must be a non-empty list of paddle.static.InputSpec (or example "
                                 f"tensors), got {type(input_spec).__name__}")
    was_static = not paddle.in_dynamic_mode()
    if was_static:
        paddle.disable_static()  # jit.save captures from dygraph
    try:
        with tempfile.TemporaryDirectory(prefix="kc-from-paddle-") as tmp:
            prefix = str(Path(tmp) / "model")
            try:
                paddle.jit.save(model, prefix, input_spec=list(input_spec))
            except Exception as e:  # dy2static's own errors: say which step failed, keep Paddle's words
                raise PaddleCaptureError(f"paddle.jit.save could not capture {type(model).__name__}: "
                                         f"{type(e).__name__}: {str(e).strip()[:2000]}") from e
            return load_inference_model(prefix, place=place)
    finally:
        if was_static:
            paddle.enable_static()
