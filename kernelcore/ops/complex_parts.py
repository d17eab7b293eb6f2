"""Complex numbers from and into real parts: complex, real, imag, conj, angle, as_complex and as_real. Gradients
follow Paddle's convention for a complex value: dL/d(real part) + i dL/d(imaginary part)."""
from __future__ import annotations

from ..ir.proto.framework_pb2 import VarType as VT
from ..ir.registry import In, Out, get_op_def, register_op
from ..ir.shape_inference import broadcast_shapes

COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def complex_dtype(xp, real_dtype):
    return xp.dtype(COMPLEX_OF.get(str(real_dtype), "complex128"))


def _unary(op_type, formula, body):
    d = register_op(op_type, f"Out = {formula}, elementwise.", inputs=[In("X", "the input tensor")],
                    outputs=[Out("Out", "the result")])

    def kernel(ctx, ins, attrs):
        return (body(ctx.xp, ins[0]),)
    kernel.__name__ = op_type
    d.kernel()(kernel)


def _as_complex(xp, x):
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"as_complex takes [..., 2] (real, imaginary), got {list(x.shape)}")
    return (x[..., 0] + 1j * x[..., 1]).astype(complex_dtype(xp, x.dtype))


_unary("real", "the real part of X", lambda xp, x: xp.real(x).copy())
_unary("imag", "the imaginary part of X", lambda xp, x: xp.imag(x).copy())
_unary("conj", "the complex conjugate of X", lambda xp, x: xp.conj(x))
_unary("angle", "the argument of X (0 or pi for a real X)", lambda xp, x: xp.angle(x).astype(xp.real(x).dtype))
_unary("as_complex", "X[..., 0] + i X[..., 1]", _as_complex)
_unary("as_real", "[real(X), imag(X)] stacked last", lambda xp, x: xp.stack([xp.real(x), xp.imag(x)], axis=-1))

COMPLEX = register_op("complex", "Out = X + i Y (broadcast together).",
                      inputs=[In("X", "the real part"), In("Y", "the imaginary part")],
                      outputs=[Out("Out", "complex64 (float32 parts) or complex128")])


@COMPLEX.kernel()
def complex_(ctx, ins, attrs):
    xp = ctx.xp
    x, y = ins
    return ((x + 1j * y).astype(complex_dtype(xp, x.dtype)),)


# -- shape inference: dtypes between the parts and the complex value ----------------------------------------------
_VT_COMPLEX = {VT.FP32: VT.COMPLEX64, VT.FP64: VT.COMPLEX128, VT.COMPLEX64: VT.COMPLEX64, VT.COMPLEX128: VT.COMPLEX128}
_VT_REAL = {VT.COMPLEX64: VT.FP32, VT.COMPLEX128: VT.FP64, VT.FP32: VT.FP32, VT.FP64: VT.FP64}


def complex_vt(dt):
    return _VT_COMPLEX.get(dt, dt)


def real_vt(dt):
    return _VT_REAL.get(dt, dt)


def _infer(shape_of, dtype_of):
    def infer(ic):
        ic.set_output("Out", shape_of(list(ic.shape("X"))), dtype_of(ic.dtype("X")))
    return infer


for _type, _shape, _dtype in (("real", None, real_vt), ("imag", None, real_vt), ("angle", None, real_vt),
                              ("conj", None, None), ("as_complex", lambda s: s[:-1], complex_vt),
                              ("as_real", lambda s: s + [2], real_vt)):
    get_op_def(_type).infer_shape = _infer(_shape or (lambda s: s), _dtype or (lambda d: d))


def _infer_complex(ic):
    ic.set_output("Out", broadcast_shapes(ic.shape("X"), ic.shape("Y"), -1, ic), complex_vt(ic.dtype("X")))


COMPLEX.infer_shape = _infer_complex
