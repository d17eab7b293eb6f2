"""Optimizer ops: sgd, momentum, adam, adamw, with Paddle's slots, attributes and update rules.

Each op reads a parameter, its gradient, a learning-rate tensor (one element) and its accumulators, and
writes the updated values. Programs name the same variable as input and output (Param and ParamOut are
both `fc_0.w_0`), so the update lands in place as far as the program is concerned. The kernels write into
an input's array only where the executor donated it (`ctx.donated`: the variable is the op's output too
and nothing else holds the array, so no one can see the old value change); otherwise they return new
arrays. Updating in place saves the fresh arrays' page faults, which on a ResNet-18 step cost more than
the arithmetic (docs/benchmarks.md).

float16 parameters are updated in float32 and rounded back (Paddle's MT type); with multi_precision and a
MasterParam, the float32 master copy is what gets updated and ParamOut is its rounding.
"""
from __future__ import annotations

import numpy as np

from ..ir.proto.framework_pb2 import AttrType as A
from ..ir.registry import Attr, Check, In, Out, register_op
from ..ir.shape_inference import dims_match
from ._infer import prod

# -- shared pieces ------------------------------------------------------------------------------------
_LR = In("LearningRate", "(one-element tensor) the learning rate")
_MASTER_IN = In("MasterParam", "float32 master copy of a float16 Param (multi_precision)", dispensable=True)
_MASTER_OUT = Out("MasterParamOut", "the updated master copy (multi_precision)", dispensable=True)
_MULTI = Attr("multi_precision", A.BOOLEAN, "update the float32 MasterParam and round it into ParamOut", False)


def _check_param_grad(ic, moments=()):
    """Grad (and each accumulator in `moments`) must have Param's shape; LearningRate one element."""
    p = ic.shape("Param")
    for slot in ("Grad", *moments):
        s = ic.shape(slot)
        if len(s) != len(p) or not all(dims_match(a, b) for a, b in zip(s, p)):
            ic.fail(f"{slot} has shape {list(s)} but Param has {list(p)}; expected the same shape "
                    f"(kernelcore's optimizers take dense gradients only)")
    if prod(ic.shape("LearningRate")) not in (1, -1):
        ic.fail(f"LearningRate must hold one element, got shape {list(ic.shape('LearningRate'))}")


def _set_master_out(ic):
    if ic.has_input("MasterParam") and ic.output_names("MasterParamOut"):
        ic.set_output("MasterParamOut", ic.shape("MasterParam"), ic.dtype("MasterParam"))


def _compute_dtype(param):
    """Paddle's MT: float16 parameters are updated in float32."""
    return np.dtype(np.float32) if param.dtype == np.float16 else param.dtype


def _start(ctx, ins_param, grad, lr, master, attrs, what: str):
    """(param value to update in MT, grad in MT, lr as a 0-d MT array, MT, use_master)."""
    if grad.shape != ins_param.shape:
        raise ValueError(f"{what}: Grad has shape {list(grad.shape)} but Param has {list(ins_param.shape)}")
    if lr.size != 1:
        raise ValueError(f"{what}: LearningRate must hold one element, got shape {list(lr.shape)}")
    use_master = bool(attrs.get("multi_precision")) and master is not None
    base = master if use_master else ins_param
    mt = base.dtype if use_master else _compute_dtype(ins_param)
    return base.astype(mt, copy=False), grad.astype(mt, copy=False), lr.reshape(()).astype(mt), mt, use_master


def _donated_or_new(ctx, slot: str, value, mt):
    """`value` itself when the executor donated it (`ctx.donated`) and it can take the result as it is (MT
    dtype, C-contiguous, its own memory, writeable); else a fresh array of its shape in MT."""
    flags = value.flags
    # CuPy's flags have no `writeable` (a device array always is); NumPy's read-only views must not be written
    if (slot in ctx.donated and value.dtype == mt and flags.c_contiguous and getattr(flags, "writeable", True)
            and value.base is None):
        return value
    return ctx.xp.empty(value.shape, dtype=mt)


# elements per block of an update done block by block on the CPU: each block's passes stay in cache
# (momentum on a 512x512x3x3 parameter: 2.9 ms in whole-array passes, 1.0 ms in blocks written in place)
UPDATE_BLOCK = 1 << 18


def update_blocks(xp, n: int):
    """The slices of an n-element update, block by block."""
    step = UPDATE_BLOCK if xp is np else max(n, 1)  # device arrays: one launch per pass over the whole array
    return [slice(i, min(i + step, n)) for i in range(0, max(n, 1), step)]


def block_scratch(xp, n: int, mt):
    """The scratch array an update's blocks share (one block's worth)."""
    return xp.empty(min(n, UPDATE_BLOCK) if xp is np else n, dtype=mt)


def update_whole(xp, n: int, mt, update) -> None:
    """`update(blocks, scratch)` over all the blocks of an n-element update in MT, in turn: the reference
    (kernelcore/native/optimizer.py's variants share the blocks among the cores)."""
    update(update_blocks(xp, n), block_scratch(xp, n, mt))


def _finish(param, new_value, use_master):
    """(ParamOut, MasterParamOut) from the updated MT value."""
    return new_value.astype(param.dtype, copy=False), (new_value if use_master else None)


# -- sgd ----------------------------------------------------------------------------------------------
SGD = register_op(
    "sgd", "Stochastic gradient descent: ParamOut = Param - LearningRate * Grad.",
    inputs=[In("Param", "the parameter"), _LR, In("Grad", "the parameter's gradient, Param's shape"),
            _MASTER_IN],
    outputs=[Out("ParamOut", "the updated parameter (programs name Param's variable here)"), _MASTER_OUT],
    attrs=[_MULTI], inplace={"ParamOut": "Param", "MasterParamOut": "MasterParam"})


def _sgd_infer(ic):
    _check_param_grad(ic)
    ic.set_output("ParamOut", ic.shape("Param"), ic.dtype("Param"))
    _set_master_out(ic)


SGD.infer_shape = _sgd_infer


def sgd_kernel(run_blocks):
    """sgd's kernel, its blocks run by `run_blocks(xp, n, mt, update)` (update_whole's signature)."""
    def sgd(ctx, ins, attrs):
        return _sgd(ctx, ins, attrs, run_blocks)
    return sgd


def _sgd(ctx, ins, attrs, run_blocks):
    param, lr, grad, master = ins
    xp = ctx.xp
    p, g, lr, mt, use_master = _start(ctx, param, grad, lr, master, attrs, "sgd")
    out = _donated_or_new(ctx, "MasterParam" if use_master else "Param", master if use_master else param, mt)
    flat_p, flat_g, flat_out = p.reshape(-1), g.reshape(-1), out.reshape(-1)
    n = flat_out.size

    def update(blocks, tmp):
        for b in blocks:
            t = tmp[:b.stop - b.start]
            xp.multiply(lr, flat_g[b], out=t)
            xp.subtract(flat_p[b], t, out=flat_out[b])

    run_blocks(xp, n, mt, update)
    return _finish(param, out, use_master)


SGD.kernel()(sgd_kernel(update_whole))


# -- momentum -----------------------------------------------------------------------------------------
MOMENTUM = register_op(
    "momentum",
    "Momentum SGD. g = Grad * rescale_grad, plus regularization_coeff * Param when regularization_method "
    "is 'l2_decay'; VelocityOut = mu * Velocity + g; ParamOut = Param - LearningRate * VelocityOut, or with "
    "use_nesterov ParamOut = Param - LearningRate * (g + mu * VelocityOut). (Paddle's GPU kernel applies "
    "rescale_grad as written; its CPU kernel ignores the attribute. kernelcore applies it on both places.)",
    inputs=[In("Param", "the parameter"), In("Grad", "the parameter's gradient, Param's shape"),
            In("Velocity", "the velocity accumulator, Param's shape"), _LR, _MASTER_IN],
    outputs=[Out("ParamOut", "the updated parameter"), Out("VelocityOut", "the updated velocity"),
             _MASTER_OUT],
    inplace={"ParamOut": "Param", "VelocityOut": "Velocity", "MasterParamOut": "MasterParam"},
    attrs=[Attr("mu", A.FLOAT, "the momentum factor"),
           Attr("use_nesterov", A.BOOLEAN, "use Nesterov's accelerated update", False),
           Attr("regularization_method", A.STRING, "'' (none) or 'l2_decay'", "",
                checks=(Check("'' or 'l2_decay'", lambda v: v in ("", "l2_decay")),)),
           Attr("regularization_coeff", A.FLOAT, "the L2 decay coefficient (with 'l2_decay')", 0.0),
           _MULTI,
           Attr("rescale_grad", A.FLOAT, "Grad is multiplied by this first", 1.0)])


def _momentum_infer(ic):
    _check_param_grad(ic, ("Velocity",))
    ic.set_output("ParamOut", ic.shape("Param"), ic.dtype("Param"))
    ic.set_output("VelocityOut", ic.shape("Velocity"), ic.dtype("Velocity"))
    _set_master_out(ic)


MOMENTUM.infer_shape = _momentum_infer


def momentum_kernel(run_blocks):
    """momentum's kernel, its blocks run by `run_blocks(xp, n, mt, update)` (update_whole's signature)."""
    def momentum(ctx, ins, attrs):
        return _momentum(ctx, ins, attrs, run_blocks)
    return momentum


def _momentum(ctx, ins, attrs, run_blocks):
    param, grad, velocity, lr, master = ins
    xp = ctx.xp
    p, g, lr, mt, use_master = _start(ctx, param, grad, lr, master, attrs, "momentum")
    if velocity.shape != param.shape:
        raise ValueError(f"momentum: Velocity has shape {list(velocity.shape)} but Param has {list(param.shape)}")
    mu = mt.type(attrs["mu"])
    if attrs["rescale_grad"] != 1.0:
        g = g * mt.type(attrs["rescale_grad"])
    if attrs["regularization_method"] == "l2_decay":
        g = g + mt.type(attrs["regularization_coeff"]) * p
    nesterov = attrs["use_nesterov"]
    v = velocity.astype(mt, copy=False)
    v_out = _donated_or_new(ctx, "Velocity", velocity, mt)
    p_new = _donated_or_new(ctx, "MasterParam" if use_master else "Param", master if use_master else param, mt)
    # block by block: VelocityOut = v * mu + g; ParamOut = p - lr * (VelocityOut, or g + VelocityOut * mu)
    fv, fg, fp, fv_out, fp_new = (a.reshape(-1) for a in (v, g, p, v_out, p_new))
    n = fv_out.size

    def update(blocks, tmp):
        for b in blocks:
            t, vo = tmp[:b.stop - b.start], fv_out[b]
            xp.multiply(fv[b], mu, out=vo)
            vo += fg[b]
            if nesterov:
                xp.multiply(vo, mu, out=t)
                t += fg[b]
                xp.multiply(lr, t, out=t)
            else:
                xp.multiply(lr, vo, out=t)
            xp.subtract(fp[b], t, out=fp_new[b])

    run_blocks(xp, n, mt, update)
    p_out, master_out = _finish(param, p_new, use_master)
    return p_out, v_out.astype(velocity.dtype, copy=False), master_out


MOMENTUM.kernel()(momentum_kernel(update_whole))


# -- adam ---------------------------------------------------------------------------------------------
ADAM = register_op(
    "adam",
    "Adam. With b1p, b2p the Beta1Pow/Beta2Pow inputs (beta^t of this step): Moment1Out = beta1 * Moment1 "
    "+ (1 - beta1) * Grad; Moment2Out = beta2 * Moment2 + (1 - beta2) * Grad^2; lr_t = LearningRate * "
    "sqrt(1 - b2p) / (1 - b1p); ParamOut = Param - lr_t * Moment1Out / (sqrt(Moment2Out) + epsilon * "
    "sqrt(1 - b2p)); Beta1PowOut = b1p * beta1, Beta2PowOut = b2p * beta2 (not written with "
    "use_global_beta_pow). amsgrad divides by sqrt(Moment2MaxOut), Moment2MaxOut = max(Moment2Max, "
    "Moment2Out). A true SkipUpdate leaves every value as it was. Beta1Tensor/Beta2Tensor/EpsilonTensor "
    "override the attributes. lazy_mode matters only for sparse gradients, which kernelcore does not take.",
    inputs=[In("Param", "the parameter"), In("Grad", "the parameter's gradient, Param's shape"), _LR,
            In("Moment1", "first-moment accumulator, Param's shape"),
            In("Moment2", "second-moment accumulator, Param's shape"),
            In("Moment2Max", "running max of Moment2 (amsgrad)", dispensable=True),
            In("Beta1Pow", "(one element) beta1^t"), In("Beta2Pow", "(one element) beta2^t"),
            _MASTER_IN,
            In("SkipUpdate", "(one bool) true: skip this update", dispensable=True),
            In("Beta1Tensor", "(one element) overrides beta1", dispensable=True),
            In("Beta2Tensor", "(one element) overrides beta2", dispensable=True),
            In("EpsilonTensor", "(one element) overrides epsilon", dispensable=True)],
    outputs=[Out("ParamOut", "the updated parameter"), Out("Moment1Out", "the updated first moment"),
             Out("Moment2Out", "the updated second moment"),
             Out("Moment2MaxOut", "the updated running max of Moment2 (amsgrad)", dispensable=True),
             Out("Beta1PowOut", "beta1^(t+1)"), Out("Beta2PowOut", "beta2^(t+1)"), _MASTER_OUT],
    attrs=[Attr("beta1", A.FLOAT, "decay rate of the first moment", 0.9),
           Attr("beta2", A.FLOAT, "decay rate of the second moment", 0.999),
           Attr("epsilon", A.FLOAT, "keeps the denominator away from 0", 1e-8),
           Attr("lazy_mode", A.BOOLEAN, "update only the rows a sparse gradient touches (no effect on dense "
                "gradients)", False),
           Attr("min_row_size_to_use_multithread", A.LONG, "Paddle's threading threshold for sparse updates "
                "(ignored)", 1000),
           _MULTI,
           Attr("use_global_beta_pow", A.BOOLEAN, "the beta pows are shared and updated elsewhere: do not "
                "write Beta1PowOut/Beta2PowOut", False),
           Attr("amsgrad", A.BOOLEAN, "use the running max of Moment2 (AMSGrad)", False)])


def _adam_infer(ic):
    _check_param_grad(ic, ("Moment1", "Moment2"))
    for slot in ("Beta1Pow", "Beta2Pow"):
        if prod(ic.shape(slot)) not in (1, -1):
            ic.fail(f"{slot} must hold one element, got shape {list(ic.shape(slot))}")
    if ic.attr("amsgrad") and not ic.has_input("Moment2Max"):
        ic.fail("amsgrad is set but no Moment2Max is given")
    ic.set_output("ParamOut", ic.shape("Param"), ic.dtype("Param"))
    ic.set_output("Moment1Out", ic.shape("Moment1"), ic.dtype("Moment1"))
    ic.set_output("Moment2Out", ic.shape("Moment2"), ic.dtype("Moment2"))
    if ic.has_input("Moment2Max") and ic.output_names("Moment2MaxOut"):
        ic.set_output("Moment2MaxOut", ic.shape("Moment2Max"), ic.dtype("Moment2Max"))
    for slot in ("Beta1Pow", "Beta2Pow"):
        ic.set_output(slot + "Out", ic.shape(slot), ic.dtype(slot))
    _set_master_out(ic)


ADAM.infer_shape = _adam_infer


def _hyper(ctx, t, attr_value, what):
    """A hyper-parameter: the override tensor's value when given, else the attribute."""
    if t is None:
        return float(attr_value)
    if t.size != 1:
        raise ValueError(f"adam: {what} must hold one element, got shape {list(t.shape)}")
    return _value(ctx, t)


def _value(ctx, t):
    """A one-element tensor's value: a Python float on the CPU (cheap, and scalar arithmetic on floats
    costs far less than on 0-d arrays); a 0-d device array on a GPU (no host round trip)."""
    if ctx.place.kind == "cpu":
        return float(t.reshape(-1)[0])
    return t.reshape(())


@ADAM.kernel()
def adam(ctx, ins, attrs):
    (param, grad, lr, m1, m2, m2max, b1p, b2p, master, skip, b1t, b2t, epst) = ins
    xp = ctx.xp
    for name, v in (("Moment1", m1), ("Moment2", m2)):
        if v.shape != param.shape:
            raise ValueError(f"adam: {name} has shape {list(v.shape)} but Param has {list(param.shape)}")
    for name, v in (("Beta1Pow", b1p), ("Beta2Pow", b2p)):
        if v.size != 1:
            raise ValueError(f"adam: {name} must hold one element, got shape {list(v.shape)}")
    amsgrad = attrs["amsgrad"]
    if amsgrad and m2max is None:
        raise ValueError("adam: amsgrad is set but no Moment2Max is given")
    use_global = attrs["use_global_beta_pow"]
    if skip is not None and bool(skip.reshape(-1)[0]):  # one host read, as Paddle's kernel does
        use_master = bool(attrs["multi_precision"]) and master is not None
        return (param.copy(), m1.copy(), m2.copy(), m2max.copy() if m2max is not None else None,
                None if use_global else b1p.copy(), None if use_global else b2p.copy(),
                master.copy() if use_master else None)
    p, g, _, mt, use_master = _start(ctx, param, grad, lr, master, attrs, "adam")
    lr = _value(ctx, lr)
    beta1 = _hyper(ctx, b1t, attrs["beta1"], "Beta1Tensor")
    beta2 = _hyper(ctx, b2t, attrs["beta2"], "Beta2Tensor")
    eps = _hyper(ctx, epst, attrs["epsilon"], "EpsilonTensor")
    b1, b2 = _value(ctx, b1p), _value(ctx, b2p)
    # The update in a few passes over fresh arrays of our own (in-place on those only: inputs untouched).
    m1_out = m1.astype(mt, copy=True)
    m1_out *= beta1
    tmp = xp.empty_like(m1_out)  # out= keeps a 0-d parameter's results arrays (g * x would be a scalar)
    xp.multiply(g, 1 - beta1, out=tmp)
    m1_out += tmp
    m2_out = m2.astype(mt, copy=True)
    m2_out *= beta2
    xp.multiply(g, g, out=tmp)
    tmp *= (1 - beta2)
    m2_out += tmp
    m2max_out = None
    if amsgrad:
        m2max_out = xp.maximum(m2_out, m2max.astype(mt, copy=False), out=xp.empty_like(m2_out))
    xp.sqrt(m2max_out if amsgrad else m2_out, out=tmp)
    sqrt_1mb2 = (1 - b2) ** 0.5
    tmp += eps * sqrt_1mb2                      # Paddle's epsilon * sqrt(1 - beta2^t)
    xp.divide(m1_out, tmp, out=tmp)
    tmp *= lr * sqrt_1mb2 / (1 - b1)            # lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    p_new = xp.subtract(p, tmp, out=tmp)
    p_out, master_out = _finish(param, p_new, use_master)
    b1_out = None if use_global else b1p * b1p.dtype.type(beta1) if isinstance(beta1, float) \
        else b1p * beta1.astype(b1p.dtype)
    b2_out = None if use_global else b2p * b2p.dtype.type(beta2) if isinstance(beta2, float) \
        else b2p * beta2.astype(b2p.dtype)
    return (p_out, m1_out.astype(m1.dtype, copy=False), m2_out.astype(m2.dtype, copy=False),
            m2max_out.astype(m2max.dtype, copy=False) if m2max_out is not None else None,
            b1_out, b2_out, master_out)


# -- adamw ---------------------------------------------------------------------------------------------
ADAMW = register_op(
    "adamw",
    "Adam with decoupled weight decay (AdamW): with lr = LearningRate * lr_ratio, when with_decay first "
    "Param = Param * (1 - lr * coeff); then adam's update with learning rate lr (see adam).",
    inputs=list(ADAM.inputs), outputs=list(ADAM.outputs),
    attrs=[*ADAM.attrs.values(),
           Attr("lr_ratio", A.FLOAT, "a per-parameter factor on the learning rate", 1.0),
           Attr("coeff", A.FLOAT, "the decay coefficient", 0.01),
           Attr("with_decay", A.BOOLEAN, "apply the decay (false: plain adam)", False)],
    infer_shape=ADAM.infer_shape)


@ADAMW.kernel()
def adamw(ctx, ins, attrs):
    ins = list(ins)
    param, lr = ins[0], ins[2]
    skip = ins[9]
    lr = lr * lr.dtype.type(attrs["lr_ratio"])
    if attrs["with_decay"] and not (skip is not None and bool(skip.reshape(-1)[0])):
        mt = _compute_dtype(param)
        decay = 1 - lr.reshape(()).astype(mt) * mt.type(attrs["coeff"])  # 0-d, on the param's device
        p = param.astype(mt, copy=False) * decay
        ins[0] = p.astype(param.dtype, copy=False)
        master = ins[8]
        if attrs["multi_precision"] and master is not None:
            ins[8] = master * decay.astype(master.dtype)
    ins[2] = lr
    return adam(ctx, tuple(ins), attrs)
