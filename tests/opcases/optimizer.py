"""Cases for kernelcore/ops/optimizer.py (sgd, momentum, adam) and ops/dropout.py (inference mode).

References are the update rules as Paddle documents and implements them, written elementwise in float64
NumPy from the inputs, then cast to the parameter's dtype. (Parity with Paddle's own kernels on the
same inputs: tests/test_optimizer_parity.py.)
"""
import numpy as np

from . import Case

rng = np.random.default_rng(7)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def pos(*shape):
    return (rng.random(shape) + 0.1).astype(np.float32)


LR = np.array([0.05], np.float32)
P, G, V = f32(3, 4), f32(3, 4), f32(3, 4)


def sgd_ref(Param, LearningRate, Grad, MasterParam=None, multi_precision=False):
    if multi_precision and MasterParam is not None:
        new = MasterParam.astype(np.float64) - float(LearningRate.ravel()[0]) * Grad.astype(np.float64)
        return {"ParamOut": new.astype(Param.dtype), "MasterParamOut": new.astype(np.float32)}
    new = Param.astype(np.float64) - float(LearningRate.ravel()[0]) * Grad.astype(np.float64)
    return {"ParamOut": new.astype(Param.dtype)}


def momentum_ref(Param, Grad, Velocity, LearningRate, mu, use_nesterov=False, regularization_method="",
                 regularization_coeff=0.0, rescale_grad=1.0, **_):
    p, g, v = (a.astype(np.float64) for a in (Param, Grad, Velocity))
    lr = float(LearningRate.ravel()[0])
    g = g * rescale_grad
    if regularization_method == "l2_decay":
        g = g + regularization_coeff * p
    v_out = mu * v + g
    p_out = p - lr * (g + mu * v_out) if use_nesterov else p - lr * v_out
    return {"ParamOut": p_out.astype(Param.dtype), "VelocityOut": v_out.astype(Velocity.dtype)}


def adam_ref(Param, Grad, LearningRate, Moment1, Moment2, Beta1Pow, Beta2Pow, Moment2Max=None,
             SkipUpdate=None, Beta1Tensor=None, Beta2Tensor=None, EpsilonTensor=None, beta1=0.9, beta2=0.999,
             epsilon=1e-8, amsgrad=False, use_global_beta_pow=False, **_):
    if SkipUpdate is not None and bool(SkipUpdate.ravel()[0]):
        out = {"ParamOut": Param, "Moment1Out": Moment1, "Moment2Out": Moment2,
               "Beta1PowOut": Beta1Pow, "Beta2PowOut": Beta2Pow}
        return out
    b1 = float(Beta1Tensor.ravel()[0]) if Beta1Tensor is not None else beta1
    b2 = float(Beta2Tensor.ravel()[0]) if Beta2Tensor is not None else beta2
    eps = float(EpsilonTensor.ravel()[0]) if EpsilonTensor is not None else epsilon
    p, g, m1, m2 = (a.astype(np.float64) for a in (Param, Grad, Moment1, Moment2))
    lr = float(LearningRate.ravel()[0])
    b1p, b2p = float(Beta1Pow.ravel()[0]), float(Beta2Pow.ravel()[0])
    m1o = b1 * m1 + (1 - b1) * g
    m2o = b2 * m2 + (1 - b2) * g * g
    # bias correction folded into the step size and epsilon, as Paddle writes it
    lr_t = lr * np.sqrt(1 - b2p) / (1 - b1p)
    denom_src = m2o
    out = {}
    if amsgrad:
        m2max = np.maximum(m2o, Moment2Max.astype(np.float64))
        out["Moment2MaxOut"] = m2max.astype(Moment2Max.dtype)
        denom_src = m2max
    po = p - lr_t * m1o / (np.sqrt(denom_src) + eps * np.sqrt(1 - b2p))
    out.update({"ParamOut": po.astype(Param.dtype), "Moment1Out": m1o.astype(Moment1.dtype),
                "Moment2Out": m2o.astype(Moment2.dtype)})
    if not use_global_beta_pow:
        out["Beta1PowOut"] = (Beta1Pow.astype(np.float64) * b1).astype(Beta1Pow.dtype)
        out["Beta2PowOut"] = (Beta2Pow.astype(np.float64) * b2).astype(Beta2Pow.dtype)
    return out


def dropout_infer_ref(X, dropout_prob=0.5, dropout_implementation="downgrade_in_infer", **_):
    if dropout_implementation == "upscale_in_train":
        return {"Out": X}
    return {"Out": (X.astype(np.float64) * (1 - dropout_prob)).astype(X.dtype)}


def _adam_inputs(shape=(3, 4), b1p=0.9, b2p=0.999, **extra):
    d = {"Param": f32(*shape), "Grad": f32(*shape), "LearningRate": LR, "Moment1": f32(*shape) * 0.1,
         "Moment2": pos(*shape) * 0.01, "Beta1Pow": np.array([b1p], np.float32),
         "Beta2Pow": np.array([b2p], np.float32)}
    d.update(extra)
    return d


CASES = [
    Case("sgd", {"Param": P, "LearningRate": LR, "Grad": G}, sgd_ref, id="sgd"),
    Case("sgd", {"Param": f32(5), "LearningRate": np.array(0.3, np.float32), "Grad": f32(5)}, sgd_ref,
         id="sgd_0d_lr"),
    Case("sgd", {"Param": f32(2, 3).astype(np.float64), "LearningRate": np.array([0.1], np.float64),
                 "Grad": f32(2, 3).astype(np.float64)}, sgd_ref, id="sgd_float64", rtol=1e-12, atol=1e-12),
    Case("sgd", {"Param": f32(4).astype(np.float16), "LearningRate": LR, "Grad": f32(4).astype(np.float16),
                 "MasterParam": f32(4)}, sgd_ref, attrs={"multi_precision": True}, id="sgd_master_param",
         rtol=1e-3, atol=1e-3),
    Case("momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR}, momentum_ref,
         attrs={"mu": 0.9}, id="momentum"),
    Case("momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR}, momentum_ref,
         attrs={"mu": 0.8, "use_nesterov": True}, id="momentum_nesterov"),
    Case("momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR}, momentum_ref,
         attrs={"mu": 0.9, "regularization_method": "l2_decay", "regularization_coeff": 0.01,
                "use_nesterov": True}, id="momentum_l2_nesterov"),
    Case("momentum", {"Param": P, "Grad": G, "Velocity": V, "LearningRate": LR}, momentum_ref,
         attrs={"mu": 0.9, "rescale_grad": 0.5}, id="momentum_rescale"),
    Case("adam", _adam_inputs(), adam_ref, id="adam_first_step"),
    Case("adam", _adam_inputs(b1p=0.9 ** 7, b2p=0.999 ** 7), adam_ref,
         attrs={"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6}, id="adam_step7", rtol=1e-5),
    Case("adam", _adam_inputs(b1p=0.5, b2p=0.8), adam_ref, attrs={"beta1": 0.5, "beta2": 0.8},
         id="adam_custom_betas", rtol=1e-5),
    Case("adam", _adam_inputs(Beta1Tensor=np.array([0.7], np.float32), Beta2Tensor=np.array([0.99], np.float32),
                              EpsilonTensor=np.array([1e-4], np.float32)), adam_ref,
         id="adam_hyper_tensors", rtol=1e-5),
    Case("adam", _adam_inputs(Moment2Max=pos(3, 4) * 0.02), adam_ref, attrs={"amsgrad": True},
         id="adam_amsgrad", rtol=1e-5),
    Case("adam", _adam_inputs(SkipUpdate=np.array([True])), adam_ref, id="adam_skip_update"),
    Case("adam", _adam_inputs(), adam_ref, attrs={"use_global_beta_pow": True}, id="adam_global_beta_pow",
         check=("ParamOut", "Moment1Out", "Moment2Out")),
    # a 0-d parameter (a learnt scalar: a temperature, a PReLU slope of shape []): outputs stay 0-d arrays
    Case("adam", {k: (v.reshape(()) if k in ("Param", "Grad", "Moment1", "Moment2", "Moment2Max") else v)
                  for k, v in _adam_inputs(shape=(1,), Moment2Max=pos(1) * 0.02).items()}, adam_ref,
         attrs={"amsgrad": True}, id="adam_0d_param", rtol=1e-5),
    Case("momentum", {"Param": f32(), "Grad": f32(), "Velocity": f32(), "LearningRate": LR}, momentum_ref,
         attrs={"mu": 0.9, "use_nesterov": True}, id="momentum_0d_param"),
    Case("dropout", {"X": f32(4, 5)}, dropout_infer_ref, attrs={"dropout_prob": 0.3}, id="dropout_infer_downgrade"),
    Case("dropout", {"X": f32(4, 5)}, dropout_infer_ref,
         attrs={"dropout_prob": 0.3, "dropout_implementation": "upscale_in_train"}, id="dropout_infer_upscale"),
    Case("dropout", {"X": f32(6)}, dropout_infer_ref, attrs={"dropout_prob": 0.5, "is_test": True},
         id="dropout_is_test"),
]
