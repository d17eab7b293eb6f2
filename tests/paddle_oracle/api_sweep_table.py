"""The API sweep's table of call sites: which Paddle functions and layers it calls, and with what.

Imported by api_sweep_gen.py inside a Paddle venv. Every public function of the swept namespaces gets call sites
without being named here: its signature is filled by `auto_sites` (tensor parameters by name, the others with small
typical values, the main tensor tried in a few shapes until Paddle builds a program). This file names only what
that cannot guess: functions that write no ops, random ones, and explicit calls (`EXPLICIT`) for functions whose
arguments must agree with each other (a loss's label, a convolution's weight).
"""
from __future__ import annotations

import inspect

import paddle
import paddle.nn.functional as F

NAMESPACES = {
    "paddle": paddle,
    "paddle.nn.functional": paddle.nn.functional,
    "paddle.linalg": paddle.linalg,
    "paddle.fft": paddle.fft,
    "paddle.vision.ops": paddle.vision.ops,
    "paddle.static.nn": paddle.static.nn,
}

# Public functions that write no ops of a program: settings, file and device helpers, dygraph-only tools, type
# predicates that answer in Python. They are listed in the report as "not swept".
NOT_OPS = {
    "autocast", "batch", "broadcast_shape", "check_shape", "create_parameter", "disable_compat",
    "disable_signal_handler", "disable_static", "enable_compat", "enable_static", "finfo", "flops", "from_dlpack",
    "from_numpy", "get_autocast_cpu_dtype", "get_autocast_dtype", "get_autocast_gpu_dtype", "get_cuda_rng_state",
    "get_default_dtype", "get_flags", "get_rng_state", "grad", "iinfo", "in_dynamic_mode", "is_autocast_enabled",
    "is_complex", "is_floating_point", "is_grad_enabled", "is_integer", "is_tensor", "load", "manual_seed", "save",
    "seed", "set_cuda_rng_state", "set_default_dtype", "set_flags", "set_printoptions", "set_rng_state",
    "summary", "to_dlpack", "in_pir_mode", "set_grad_enabled", "no_grad", "enable_grad", "is_compiled_with_cuda",
    "is_compiled_with_rocm", "is_compiled_with_xpu", "is_compiled_with_ipu", "is_compiled_with_cinn",
    "is_compiled_with_distribute", "is_compiled_with_custom_device", "set_device", "get_device", "device_guard",
    "broadcast_shapes", "get_cudnn_version", "py_func", "to_tensor", "DataParallel", "check_import_scipy",
    "in_dygraph_mode", "use_deterministic_algorithms", "are_deterministic_algorithms_enabled", "get_printoptions",
    "set_default_device", "get_default_device", "is_inference_mode", "dtype", "pdist",  # pdist: dygraph only
}

# Functions whose outputs are random draws: their parity is the outputs' shapes and dtypes.
RANDOM = {
    "bernoulli", "binomial", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like",
    "randn", "randn_like", "randperm", "standard_gamma", "standard_normal", "uniform", "log_normal", "empty",
    "empty_like", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "gumbel_softmax", "rrelu", "fused_dropout_add", "Dropout", "Dropout1D", "Dropout2D", "Dropout3D",
    "AlphaDropout", "FeatureAlphaDropout", "RReLU", "class_center_sample", "sample_neighbors",
    "weighted_sample_neighbors",
}

# A parameter's name says what it holds. Tensors take the main input's shape unless a profile says more.
FLOAT_TENSORS = {"x", "input", "y", "other", "a", "b", "tensor", "logits", "input1", "input2", "x1", "x2",
                 "end", "weight_tensor", "values", "arr", "lhs", "rhs", "self"}
INT_TENSORS = {"index", "indices", "ids", "idx"}
# in (0, 1): labels and targets of losses, probabilities
UNIT_TENSORS = {"label", "target", "positive", "negative", "anchor", "x2", "input2", "variance", "tau", "real",
                "imag", "abs", "angle", "logit", "query", "key", "updates", "log_probs", "grid", "theta", "prob"}
BOOL_TENSORS = {"mask", "condition", "cond"}
# Required non-tensor parameters: small typical values.
VALUES = {
    "axis": 1, "dim": 1, "axes": [1], "dims": [1], "shape": [4, 6], "perm": [1, 0, 2], "num_or_sections": 2,
    "repeats": 2, "repeat_times": [1, 2, 1], "k": 2, "p": 2.0, "n": 2, "start": 0, "stop": 4, "num": 4,
    "step": 1, "min": -0.5, "max": 0.5, "fill_value": 1.5, "value": 1.5, "scale": 2.0, "exponent": 2.0, "q": 0.5,
    "offset": 0, "diagonal": 0, "dtype": "float32", "kernel_size": 2, "stride": 1, "padding": 0,
    "output_size": 2, "size": [4, 4], "scale_factor": 2, "normalized_shape": [4], "num_groups": 1,
    "num_features": 3, "num_channels": 3, "in_features": 4, "out_features": 5, "in_channels": 3,
    "out_channels": 4, "embed_dim": 4, "num_heads": 2, "hidden_size": 4, "input_size": 4, "d_model": 4,
    "nhead": 2, "dim_feedforward": 8, "num_embeddings": 10, "embedding_dim": 4, "upscale_factor": 2,
    "downscale_factor": 2, "groups": 1, "num_classes": 3, "pad": [1, 1], "shifts": 1, "chunks": 2, "sections": 2,
    "num_rows": 3, "num_columns": 3, "rows": 3, "cols": 3, "decimals": 1, "norm": "backward", "ord": 2,
    "threshold": 0.5, "alpha": 1.0, "beta": 1.0, "eps": 1e-5, "epsilon": 1e-5, "r": 2, "order": 1,
    "index_num": 4, "nshards": 2, "shard_id": 0, "start_index": 0, "length": 2, "bins": 4, "weight": 0.5,
    "source": 0, "destination": 1, "dim1": 0, "dim2": 1, "x_num_col_dims": 1, "size_": 4, "row": 3,
    "max_norm": 1.0, "shape_or_dtype": [4, 6], "num_or_indices": 2, "norm_type": 2.0, "seg_num": 2,
    "kernel_sizes": 2, "output_sizes": [4, 4], "win_size": 2, "new_dim": 2, "pool_type": "max",
    "future_context_size": 1, "num_filters": 4, "filter_size": 3, "low": 0, "high": 4, "min_val": -0.5,
    "max_val": 0.5, "negative_slope": 0.1, "lambd": 0.5, "beta_": 1.0, "temperature": 1.0, "margin": 0.5,
}

# The main input's shapes, tried in order until Paddle builds the call: elementwise, square matrices (linalg),
# images (NCHW), sequences (NCL), volumes (NCDHW), vectors, then integer and boolean inputs.
PROFILES = [
    ("float32", [2, 3, 4]), ("float32", [3, 3]), ("float32", [2, 3, 8, 8]), ("float32", [2, 3, 8]),
    ("float32", [2, 3, 4, 4, 4]), ("float32", [6]), ("float32", [2, 4]), ("int64", [2, 3, 4]), ("bool", [2, 3, 4]),
]

# Attributes that change the op a call writes (or its attributes): each gets a variant of a site that builds.
VARIANTS = {
    "axis": [0, -1], "dim": [0, -1], "keepdim": [True], "reduction": ["sum", "none"], "data_format": ["NHWC"],
    "mode": [], "descending": [True], "transpose_y": [True], "transpose_x": [True], "approximate": [True],
}


class Site:
    """One call: `call(T)` makes its inputs with T (the generator's feed maker) and returns Paddle's output."""

    def __init__(self, function: str, variant: str, call, profile=None):
        self.function, self.variant, self.call, self.profile = function, variant, call, profile

    @property
    def id(self) -> str:
        return f"{self.function}{'[' + self.variant + ']' if self.variant else ''}"


def public_functions():
    """(qualified name, function) for every public function of the swept namespaces, in-place twins (`abs_`)
    left out: in a static program they write the same op as the function they mirror."""
    seen = set()
    for ns, mod in NAMESPACES.items():
        names = getattr(mod, "__all__", None) or dir(mod)
        for name in sorted(set(names)):
            obj = getattr(mod, name, None)
            if name.startswith("_") or not inspect.isfunction(obj):
                continue
            if name.endswith("_") and not name.endswith("__"):
                continue
            key = (ns, name)
            if key not in seen:
                seen.add(key)
                yield f"{ns}.{name}", name, obj


def public_layers():
    for name in sorted(paddle.nn.__all__):
        obj = getattr(paddle.nn, name, None)
        if inspect.isclass(obj) and issubclass(obj, paddle.nn.Layer) and obj is not paddle.nn.Layer:
            yield f"paddle.nn.{name}", name, obj


def _params(fn):
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None


def _required(params):
    return [p for p in params if p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "name"]


def _argument(T, pname, dtype, shape, listify):
    if pname in FLOAT_TENSORS or (pname in ("x", "input") and dtype != "float32"):
        if listify:
            return [T.tensor(dtype, shape), T.tensor(dtype, shape)]
        return T.tensor(dtype, shape)
    if pname in ("inputs", "xs", "tensors", "input_list", "arrays", "x_list"):
        return [T.tensor(dtype, shape), T.tensor(dtype, shape)]
    if pname in UNIT_TENSORS:
        return T.unit(shape)
    if pname == "sorted_sequence":
        return T.sorted_values(shape[-1:])
    if pname in INT_TENSORS:
        return T.ints([2], high=min(shape) if shape else 2)
    if pname in BOOL_TENSORS:
        return T.tensor("bool", shape)
    if pname in VALUES:
        return VALUES[pname]
    raise LookupError(f"no value for parameter {pname!r}")


def auto_call(fn, dtype, shape, listify=False, extra=None):
    """A call of `fn` whose required parameters are filled by name, its main tensor of `shape`."""
    params = _params(fn)
    if params is None:
        raise LookupError("no signature")
    required = _required(params)

    def call(T):
        kwargs = {p.name: _argument(T, p.name, dtype, shape, listify) for p in required}
        kwargs.update(extra or {})
        return fn(**kwargs)
    return call


def layer_call(cls, dtype, shape, extra=None):
    params = _params(cls.__init__)
    forward = _params(cls.forward)
    if params is None or forward is None:
        raise LookupError("no signature")
    kwargs = {}
    for p in _required(params):
        if p.name != "self" and p.name not in (extra or {}):
            if p.name not in VALUES:
                raise LookupError(f"no value for parameter {p.name!r}")
            kwargs[p.name] = VALUES[p.name]
    kwargs.update(extra or {})
    more = [p.name for p in _required(forward)[2:]]  # after self and the main input

    def call(T):
        layer = cls(**kwargs)
        layer.eval()  # running statistics, no dropout: a program with a deterministic output
        x = T.tensor(dtype, shape)
        return layer(x, **{n: _argument(T, n, dtype, shape, False) for n in more})
    return call


def variant_values(fn):
    """(attribute, value) pairs a variant site sets, for the attributes in VARIANTS the function takes."""
    params = _params(fn) or []
    out = []
    for p in params:
        for v in VARIANTS.get(p.name, []):
            if p.default is not inspect.Parameter.empty and p.default != v:
                out.append((p.name, v))
    return out


def f(T, *shape):
    return T.tensor("float32", list(shape))


# Calls whose arguments must agree with each other. Each returns the call's output(s).
EXPLICIT = {
    "paddle.nn.functional.linear": lambda T: F.linear(f(T, 2, 4), f(T, 4, 5), f(T, 5)),
    "paddle.nn.functional.bilinear": lambda T: F.bilinear(f(T, 2, 4), f(T, 2, 3), f(T, 5, 4, 3), f(T, 1, 5)),
    "paddle.nn.functional.conv1d": lambda T: F.conv1d(f(T, 2, 3, 8), f(T, 4, 3, 3)),
    "paddle.nn.functional.conv2d": lambda T: F.conv2d(f(T, 2, 3, 8, 8), f(T, 4, 3, 3, 3), padding=1),
    "paddle.nn.functional.conv3d": lambda T: F.conv3d(f(T, 2, 3, 4, 4, 4), f(T, 4, 3, 3, 3, 3)),
    "paddle.nn.functional.conv1d_transpose": lambda T: F.conv1d_transpose(f(T, 2, 3, 8), f(T, 3, 4, 3)),
    "paddle.nn.functional.conv2d_transpose": lambda T: F.conv2d_transpose(f(T, 2, 3, 8, 8), f(T, 3, 4, 3, 3)),
    "paddle.nn.functional.conv3d_transpose": lambda T: F.conv3d_transpose(f(T, 2, 3, 4, 4, 4),
                                                                          f(T, 3, 4, 3, 3, 3)),
    "paddle.nn.functional.embedding": lambda T: F.embedding(T.ints([2, 3], high=10), f(T, 10, 4)),
    "paddle.nn.functional.one_hot": lambda T: F.one_hot(T.ints([2, 3], high=5), 5),
    "paddle.nn.functional.batch_norm": lambda T: F.batch_norm(f(T, 2, 3, 4, 4), T.positive([3]), T.positive([3]),
                                                              f(T, 3), f(T, 3), training=False),
    "paddle.nn.functional.layer_norm": lambda T: F.layer_norm(f(T, 2, 3, 4), [4], f(T, 4), f(T, 4)),
    "paddle.nn.functional.instance_norm": lambda T: F.instance_norm(f(T, 2, 3, 4, 4)),
    "paddle.nn.functional.group_norm": lambda T: F.group_norm(f(T, 2, 4, 4, 4), 2),
    "paddle.nn.functional.cross_entropy": lambda T: F.cross_entropy(f(T, 4, 5), T.ints([4], high=5)),
    "paddle.nn.functional.softmax_with_cross_entropy": lambda T: F.softmax_with_cross_entropy(
        f(T, 4, 5), T.ints([4, 1], high=5)),
    "paddle.nn.functional.nll_loss": lambda T: F.nll_loss(F.log_softmax(f(T, 4, 5)), T.ints([4], high=5)),
    "paddle.nn.functional.binary_cross_entropy": lambda T: F.binary_cross_entropy(T.unit([4, 3]), T.unit([4, 3])),
    "paddle.nn.functional.binary_cross_entropy_with_logits": lambda T: F.binary_cross_entropy_with_logits(
        f(T, 4, 3), T.unit([4, 3])),
    "paddle.nn.functional.mse_loss": lambda T: F.mse_loss(f(T, 4, 3), f(T, 4, 3)),
    "paddle.nn.functional.l1_loss": lambda T: F.l1_loss(f(T, 4, 3), f(T, 4, 3)),
    "paddle.nn.functional.smooth_l1_loss": lambda T: F.smooth_l1_loss(f(T, 4, 3), f(T, 4, 3)),
    "paddle.nn.functional.kl_div": lambda T: F.kl_div(f(T, 4, 3), T.unit([4, 3])),
    "paddle.nn.functional.margin_ranking_loss": lambda T: F.margin_ranking_loss(f(T, 4), f(T, 4), f(T, 4)),
    "paddle.nn.functional.interpolate": lambda T: F.interpolate(f(T, 2, 3, 4, 4), scale_factor=2),
    "paddle.nn.functional.upsample": lambda T: F.upsample(f(T, 2, 3, 4, 4), scale_factor=2),
    "paddle.nn.functional.pad": lambda T: F.pad(f(T, 2, 3, 4, 4), [1, 1, 1, 1]),
    "paddle.nn.functional.max_pool2d": lambda T: F.max_pool2d(f(T, 2, 3, 8, 8), 2),
    "paddle.nn.functional.avg_pool2d": lambda T: F.avg_pool2d(f(T, 2, 3, 8, 8), 2),
    "paddle.nn.functional.max_pool1d": lambda T: F.max_pool1d(f(T, 2, 3, 8), 2),
    "paddle.nn.functional.avg_pool1d": lambda T: F.avg_pool1d(f(T, 2, 3, 8), 2),
    "paddle.nn.functional.max_pool3d": lambda T: F.max_pool3d(f(T, 2, 3, 4, 4, 4), 2),
    "paddle.nn.functional.avg_pool3d": lambda T: F.avg_pool3d(f(T, 2, 3, 4, 4, 4), 2),
    "paddle.nn.functional.prelu": lambda T: F.prelu(f(T, 2, 3, 4, 4), T.positive([3])),
    "paddle.nn.functional.scaled_dot_product_attention": lambda T: F.scaled_dot_product_attention(
        f(T, 2, 4, 2, 8), f(T, 2, 4, 2, 8), f(T, 2, 4, 2, 8)),
    "paddle.matmul": lambda T: paddle.matmul(f(T, 2, 3, 4), f(T, 2, 4, 5)),
    "paddle.bmm": lambda T: paddle.bmm(f(T, 2, 3, 4), f(T, 2, 4, 5)),
    "paddle.mm": lambda T: paddle.mm(f(T, 3, 4), f(T, 4, 5)),
    "paddle.mv": lambda T: paddle.mv(f(T, 3, 4), f(T, 4)),
    "paddle.dot": lambda T: paddle.dot(f(T, 4), f(T, 4)),
    "paddle.reshape": lambda T: paddle.reshape(f(T, 2, 3, 4), [4, 6]),
    "paddle.expand": lambda T: paddle.expand(f(T, 1, 3, 4), [2, 3, 4]),
    "paddle.broadcast_to": lambda T: paddle.broadcast_to(f(T, 1, 3, 4), [2, 3, 4]),
    "paddle.tile": lambda T: paddle.tile(f(T, 2, 3), [2, 1]),
    "paddle.gather": lambda T: paddle.gather(f(T, 4, 3), T.ints([2], high=4)),
    "paddle.gather_nd": lambda T: paddle.gather_nd(f(T, 4, 3), T.ints([2, 1], high=4)),
    "paddle.take_along_axis": lambda T: paddle.take_along_axis(f(T, 4, 3), T.ints([2, 3], high=4), axis=0),
    "paddle.put_along_axis": lambda T: paddle.put_along_axis(f(T, 4, 3), T.ints([1, 3], high=4), 1.5, axis=0),
    "paddle.index_select": lambda T: paddle.index_select(f(T, 4, 3), T.ints([2], high=4)),
    "paddle.scatter": lambda T: paddle.scatter(f(T, 4, 3), T.distinct([2], high=4), f(T, 2, 3)),
    "paddle.slice": lambda T: paddle.slice(f(T, 4, 3), axes=[0], starts=[1], ends=[3]),
    "paddle.strided_slice": lambda T: paddle.strided_slice(f(T, 4, 3), axes=[0], starts=[0], ends=[4], strides=[2]),
    "paddle.where": lambda T: paddle.where(T.tensor("bool", [2, 3]), f(T, 2, 3), f(T, 2, 3)),
    "paddle.masked_fill": lambda T: paddle.masked_fill(f(T, 2, 3), T.tensor("bool", [2, 3]), 1.5),
    "paddle.masked_select": lambda T: paddle.masked_select(f(T, 2, 3), T.tensor("bool", [2, 3])),
    "paddle.einsum": lambda T: paddle.einsum("ij,jk->ik", f(T, 3, 4), f(T, 4, 5)),
    "paddle.cast": lambda T: paddle.cast(f(T, 2, 3), "float64"),
    "paddle.full": lambda T: paddle.full([2, 3], 1.5) + f(T, 2, 3),
    "paddle.zeros": lambda T: paddle.zeros([2, 3]) + f(T, 2, 3),
    "paddle.ones": lambda T: paddle.ones([2, 3]) + f(T, 2, 3),
    "paddle.arange": lambda T: paddle.arange(0, 6, 1, dtype="float32") + f(T, 6),
    "paddle.linspace": lambda T: paddle.linspace(0, 1, 6) + f(T, 6),
    "paddle.eye": lambda T: paddle.eye(3) + f(T, 3, 3),
    "paddle.concat": lambda T: paddle.concat([f(T, 2, 3), f(T, 2, 3)], axis=1),
    "paddle.stack": lambda T: paddle.stack([f(T, 2, 3), f(T, 2, 3)], axis=1),
    "paddle.add_n": lambda T: paddle.add_n([f(T, 2, 3), f(T, 2, 3)]),
    "paddle.split": lambda T: paddle.split(f(T, 2, 6), 3, axis=1),
    "paddle.transpose": lambda T: paddle.transpose(f(T, 2, 3, 4), [0, 2, 1]),
    "paddle.squeeze": lambda T: paddle.squeeze(f(T, 2, 1, 3), axis=1),
    "paddle.unsqueeze": lambda T: paddle.unsqueeze(f(T, 2, 3), axis=1),
    "paddle.flatten": lambda T: paddle.flatten(f(T, 2, 3, 4), 1),
    "paddle.cumsum": lambda T: paddle.cumsum(f(T, 2, 3), axis=1),
    "paddle.topk": lambda T: paddle.topk(f(T, 2, 5), 2),
    "paddle.sort": lambda T: paddle.sort(f(T, 2, 5)),
    "paddle.argsort": lambda T: paddle.argsort(f(T, 2, 5)),
    "paddle.linalg.inv": lambda T: paddle.linalg.inv(T.well_conditioned(3)),
    "paddle.inverse": lambda T: paddle.inverse(T.well_conditioned(3)),
    "paddle.linalg.solve": lambda T: paddle.linalg.solve(T.well_conditioned(3), f(T, 3, 2)),
    "paddle.linalg.cholesky": lambda T: paddle.linalg.cholesky(T.spd(3)),
    "paddle.linalg.det": lambda T: paddle.linalg.det(T.well_conditioned(3)),
    "paddle.static.nn.fc": lambda T: paddle.static.nn.fc(f(T, 2, 4), 5),
    "paddle.static.nn.batch_norm": lambda T: paddle.static.nn.batch_norm(f(T, 2, 3, 4, 4), is_test=True),
    "paddle.static.nn.conv2d": lambda T: paddle.static.nn.conv2d(f(T, 2, 3, 8, 8), 4, 3),
    "paddle.static.nn.embedding": lambda T: paddle.static.nn.embedding(T.ints([2, 1], high=10), (10, 4)),
    "paddle.static.nn.cond": lambda T: _cond(T),
    "paddle.static.nn.while_loop": lambda T: _while(T),
    "paddle.static.nn.case": lambda T: _case(T),
    "paddle.static.nn.switch_case": lambda T: _switch_case(T),
    "paddle.vision.ops.roi_align": lambda T: paddle.vision.ops.roi_align(
        f(T, 1, 3, 8, 8), T.boxes(2, 8), T.const_ints([2]), 2),
    "paddle.vision.ops.roi_pool": lambda T: paddle.vision.ops.roi_pool(
        f(T, 1, 3, 8, 8), T.boxes(2, 8), T.const_ints([2]), 2),
    "paddle.vision.ops.nms": lambda T: paddle.vision.ops.nms(T.boxes(4, 8), 0.5),
    "paddle.vision.ops.box_coder": lambda T: paddle.vision.ops.box_coder(
        T.boxes(3, 8), [0.1, 0.1, 0.2, 0.2], T.boxes(3, 8)),
    "paddle.nn.functional.maxout": lambda T: F.maxout(f(T, 2, 6, 4, 4), 2),
    "paddle.nn.functional.pixel_shuffle": lambda T: F.pixel_shuffle(f(T, 2, 8, 4, 4), 2),
    "paddle.nn.functional.pixel_unshuffle": lambda T: F.pixel_unshuffle(f(T, 2, 2, 4, 4), 2),
    "paddle.nn.functional.channel_shuffle": lambda T: F.channel_shuffle(f(T, 2, 4, 4, 4), 2),
    "paddle.nn.functional.local_response_norm": lambda T: F.local_response_norm(f(T, 2, 4, 4, 4), 3),
    "paddle.nn.functional.zeropad2d": lambda T: F.zeropad2d(f(T, 2, 3, 4, 4), [1, 1, 1, 1]),
    "paddle.nn.functional.max_unpool2d": lambda T: _max_unpool2d(T),
    "paddle.nn.functional.label_smooth": lambda T: F.label_smooth(T.unit([2, 3, 4])),
    "paddle.nn.functional.square_error_cost": lambda T: F.square_error_cost(f(T, 4, 3), f(T, 4, 3)),
    "paddle.nn.functional.log_loss": lambda T: F.log_loss(T.unit([4, 1]), T.unit([4, 1])),
    "paddle.nn.functional.dice_loss": lambda T: F.dice_loss(F.softmax(f(T, 4, 3)), T.ints([4, 1], high=3)),
    "paddle.nn.functional.sigmoid_focal_loss": lambda T: F.sigmoid_focal_loss(f(T, 4, 3), T.unit([4, 3])),
    "paddle.nn.functional.cosine_embedding_loss": lambda T: F.cosine_embedding_loss(
        f(T, 4, 3), f(T, 4, 3), T.ints([4], high=2) * 2 - 1),
    "paddle.nn.functional.multi_margin_loss": lambda T: F.multi_margin_loss(f(T, 4, 3), T.ints([4], high=3)),
    "paddle.nn.functional.hinge_embedding_loss": lambda T: F.hinge_embedding_loss(f(T, 4, 3), f(T, 4, 3).sign()),
    "paddle.nn.functional.soft_margin_loss": lambda T: F.soft_margin_loss(f(T, 4, 3), f(T, 4, 3).sign()),
    "paddle.nn.functional.affine_grid": lambda T: F.affine_grid(f(T, 2, 2, 3), [2, 3, 4, 4]),
    "paddle.nn.functional.grid_sample": lambda T: F.grid_sample(f(T, 2, 3, 4, 4), f(T, 2, 4, 4, 2)),
    "paddle.nn.functional.unfold": lambda T: F.unfold(f(T, 2, 3, 4, 4), 2),
    "paddle.nn.functional.fold": lambda T: F.fold(f(T, 2, 12, 9), [4, 4], 2),
    "paddle.nn.functional.temporal_shift": lambda T: F.temporal_shift(f(T, 4, 4, 3, 3), 2),
    "paddle.index_sample": lambda T: paddle.index_sample(f(T, 3, 4), T.ints([3, 2], high=4)),
    "paddle.multiplex": lambda T: paddle.multiplex([f(T, 3, 4), f(T, 3, 4)], T.ints([3, 1], high=2).astype("int32")),
    "paddle.bincount": lambda T: paddle.bincount(T.ints([6], high=4)),
    "paddle.increment": lambda T: paddle.increment(f(T, 1)),
    "paddle.cumprod": lambda T: paddle.cumprod(f(T, 2, 3), dim=1),
    "paddle.shard_index": lambda T: paddle.shard_index(T.ints([4, 1], high=10), 10, 2, 0),
    "paddle.scatter_nd": lambda T: paddle.scatter_nd(T.ints([2, 1], high=3), f(T, 2, 4), [3, 4]),
    "paddle.scatter_nd_add": lambda T: paddle.scatter_nd_add(f(T, 3, 4), T.ints([2, 1], high=3), f(T, 2, 4)),
    "paddle.index_add": lambda T: paddle.index_add(f(T, 4, 3), T.distinct([2], high=4), 0, f(T, 2, 3)),
    "paddle.index_put": lambda T: paddle.index_put(f(T, 4, 3), (T.distinct([2], high=4),), f(T, 3)),
    "paddle.unflatten": lambda T: paddle.unflatten(f(T, 2, 6), 1, [2, 3]),
    "paddle.complex": lambda T: paddle.abs(paddle.complex(f(T, 2, 3), f(T, 2, 3))),
    "paddle.real": lambda T: paddle.real(paddle.complex(f(T, 2, 3), f(T, 2, 3))),
    "paddle.imag": lambda T: paddle.imag(paddle.complex(f(T, 2, 3), f(T, 2, 3))),
    "paddle.as_complex": lambda T: paddle.abs(paddle.as_complex(f(T, 2, 3, 2))),
    "paddle.as_real": lambda T: paddle.as_real(paddle.complex(f(T, 2, 3), f(T, 2, 3))),
    "paddle.repeat_interleave": lambda T: paddle.repeat_interleave(f(T, 2, 3), 2, axis=1),
    "paddle.meshgrid": lambda T: paddle.meshgrid(f(T, 3), f(T, 4)),
    "paddle.nn.CrossEntropyLoss": lambda T: paddle.nn.CrossEntropyLoss()(f(T, 4, 5), T.ints([4], high=5)),
    "paddle.nn.NLLLoss": lambda T: paddle.nn.NLLLoss()(F.log_softmax(f(T, 4, 5)), T.ints([4], high=5)),
    "paddle.nn.Embedding": lambda T: paddle.nn.Embedding(10, 4)(T.ints([2, 3], high=10)),
    "paddle.nn.BCELoss": lambda T: paddle.nn.BCELoss()(T.unit([4, 3]), T.unit([4, 3])),
    "paddle.nn.RNN": lambda T: paddle.nn.RNN(paddle.nn.SimpleRNNCell(4, 5))(f(T, 2, 3, 4)),
    "paddle.nn.BiRNN": lambda T: paddle.nn.BiRNN(paddle.nn.GRUCell(4, 5), paddle.nn.GRUCell(4, 5))(f(T, 2, 3, 4)),
    "paddle.nn.TransformerEncoder": lambda T: _eval(paddle.nn.TransformerEncoder(
        paddle.nn.TransformerEncoderLayer(4, 2, 8), 2))(f(T, 2, 3, 4)),
    "paddle.nn.TransformerDecoderLayer": lambda T: _eval(paddle.nn.TransformerDecoderLayer(4, 2, 8))(
        f(T, 2, 3, 4), f(T, 2, 3, 4)),
    "paddle.nn.TransformerDecoder": lambda T: _eval(paddle.nn.TransformerDecoder(
        paddle.nn.TransformerDecoderLayer(4, 2, 8), 2))(f(T, 2, 3, 4), f(T, 2, 3, 4)),
    "paddle.nn.Transformer": lambda T: _eval(paddle.nn.Transformer(4, 2, 1, 1, 8))(f(T, 2, 3, 4), f(T, 2, 3, 4)),
    "paddle.nn.MaxUnPool2D": lambda T: _max_unpool2d(T, layer=True),
    "paddle.nn.MultiMarginLoss": lambda T: paddle.nn.MultiMarginLoss()(f(T, 4, 3), T.ints([4], high=3)),
    "paddle.randint": lambda T: paddle.randint(0, 4, [2, 3]) + T.ints([2, 3], high=4),
    "paddle.randint_like": lambda T: paddle.randint_like(f(T, 2, 3), 0, 4),
    "paddle.bernoulli": lambda T: paddle.bernoulli(T.unit([2, 3])),
    "paddle.static.nn.prelu": lambda T: paddle.static.nn.prelu(f(T, 2, 3, 4, 4), "all"),
    "paddle.static.nn.conv2d_transpose": lambda T: paddle.static.nn.conv2d_transpose(f(T, 2, 3, 4, 4), 4,
                                                                                      filter_size=3),
    "paddle.static.nn.conv3d_transpose": lambda T: paddle.static.nn.conv3d_transpose(f(T, 2, 3, 4, 4, 4), 4,
                                                                                      filter_size=3),
    "paddle.static.nn.bilinear_tensor_product": lambda T: paddle.static.nn.bilinear_tensor_product(
        f(T, 2, 4), f(T, 2, 3), 5),
    "paddle.fft.irfft": lambda T: paddle.fft.irfft(paddle.fft.rfft(f(T, 2, 8))),
    "paddle.fft.irfft2": lambda T: paddle.fft.irfft2(paddle.fft.rfft2(f(T, 2, 4, 8))),
    "paddle.fft.irfftn": lambda T: paddle.fft.irfftn(paddle.fft.rfftn(f(T, 2, 4, 8))),
    "paddle.fft.hfft": lambda T: paddle.fft.hfft(paddle.fft.ihfft(f(T, 2, 8))),
    "paddle.fft.hfft2": lambda T: paddle.fft.hfft2(paddle.fft.ihfft2(f(T, 2, 4, 8))),
    "paddle.fft.hfftn": lambda T: paddle.fft.hfftn(paddle.fft.ihfftn(f(T, 2, 4, 8))),
    "paddle.put_along_axis": lambda T: paddle.put_along_axis(f(T, 4, 3), T.ints([1, 3], high=4), f(T, 1, 3), 0),
    "paddle.select_scatter": lambda T: paddle.select_scatter(f(T, 2, 3, 4), f(T, 2, 4), 1, 0),
    "paddle.tril_indices": lambda T: paddle.tril_indices(3, 3) + T.ints([2, 6], high=2),
    "paddle.normal": lambda T: paddle.normal(shape=[2, 3]) + f(T, 2, 3),
    "paddle.multinomial": lambda T: paddle.multinomial(T.unit([2, 4]), 2),
    "paddle.nn.functional.max_unpool1d": lambda T: F.max_unpool1d(*F.max_pool1d(f(T, 2, 3, 8), 2, return_mask=True),
                                                                  2),
    "paddle.nn.functional.max_unpool3d": lambda T: F.max_unpool3d(
        *F.max_pool3d(f(T, 2, 3, 4, 4, 4), 2, return_mask=True), 2),
    "paddle.nn.MaxUnPool1D": lambda T: paddle.nn.MaxUnPool1D(2)(*F.max_pool1d(f(T, 2, 3, 8), 2, return_mask=True)),
    "paddle.nn.MaxUnPool3D": lambda T: paddle.nn.MaxUnPool3D(2)(
        *F.max_pool3d(f(T, 2, 3, 4, 4, 4), 2, return_mask=True)),
    "paddle.nn.functional.hsigmoid_loss": lambda T: F.hsigmoid_loss(f(T, 4, 3), T.ints([4, 1], high=5), 5,
                                                                    f(T, 4, 3)),
    "paddle.nn.functional.npair_loss": lambda T: F.npair_loss(f(T, 4, 3), f(T, 4, 3),
                                                              T.ints([4], high=2).astype("float32")),
    "paddle.nn.functional.gather_tree": lambda T: F.gather_tree(T.ints([3, 2, 2], high=2), T.ints([3, 2, 2], high=2)),
    "paddle.nn.CosineEmbeddingLoss": lambda T: paddle.nn.CosineEmbeddingLoss()(f(T, 4, 3), f(T, 4, 3),
                                                                               T.ints([4], high=2) * 2 - 1),
    "paddle.nn.Fold": lambda T: paddle.nn.Fold([4, 4], 2)(f(T, 2, 12, 9)),
    "paddle.nn.SpectralNorm": lambda T: paddle.nn.SpectralNorm([4, 5])(f(T, 4, 5)),
    "paddle.vision.ops.prior_box": lambda T: paddle.vision.ops.prior_box(f(T, 1, 3, 4, 4), f(T, 1, 3, 16, 16),
                                                                         min_sizes=[4.0]),
    "paddle.vision.ops.yolo_box": lambda T: paddle.vision.ops.yolo_box(
        f(T, 1, 14, 4, 4), T.const_ints([[16, 16]]), [2, 3, 4, 5], 2, 0.01, 4),
    "paddle.vision.ops.psroi_pool": lambda T: paddle.vision.ops.psroi_pool(
        f(T, 1, 8, 8, 8), T.boxes(2, 8), T.const_ints([2]), 2),
    "paddle.linalg.householder_product": lambda T: paddle.linalg.householder_product(f(T, 2, 4, 3), f(T, 2, 3)),
    "paddle.linalg.lu_unpack": lambda T: paddle.linalg.lu_unpack(*paddle.linalg.lu(T.well_conditioned(3))),
    "paddle.static.nn.conv3d": lambda T: paddle.static.nn.conv3d(f(T, 2, 3, 4, 4, 4), 4, 3),
    "paddle.diagonal_scatter": lambda T: paddle.diagonal_scatter(f(T, 3, 3), f(T, 3)),
}


def _eval(layer):
    layer.eval()
    return layer


def _max_unpool2d(T, layer=False):
    out, idx = F.max_pool2d(f(T, 2, 3, 4, 4), 2, return_mask=True)
    return paddle.nn.MaxUnPool2D(2)(out, idx) if layer else F.max_unpool2d(out, idx, 2)


def _cond(T):
    x = f(T, 2, 3)
    return paddle.static.nn.cond(paddle.mean(x) > 0, lambda: x * 2.0, lambda: x - 1.0)


def _while(T):
    x = f(T, 2, 3) * 1.0  # a legacy while loop writes its result into the loop variable: not into the feed
    i = paddle.full([1], 0, "int64")
    _, y = paddle.static.nn.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * 0.5 + 1.0), [i, x])
    return y


def _case(T):
    x = f(T, 2, 3)
    m = paddle.mean(x)
    return paddle.static.nn.case([(m > 0.5, lambda: x * 2.0), (m > 0, lambda: x + 1.0)], default=lambda: x)


def _switch_case(T):
    x = f(T, 2, 3)
    idx = paddle.full([1], 1, "int64")
    return paddle.static.nn.switch_case(idx, {0: lambda: x * 2.0, 1: lambda: x - 1.0})


def function_sites(qualname, name, fn):
    """Candidate sites of one function: (variant, [calls tried in order]); the first that builds is kept."""
    if qualname in EXPLICIT:
        yield "", [EXPLICIT[qualname]]
        return
    bases = []
    for dtype, shape in PROFILES:
        for listify in (False, True):
            try:
                bases.append(auto_call(fn, dtype, shape, listify))
            except LookupError:
                pass
    yield "", bases
    for attr, value in variant_values(fn):
        calls = []
        for dtype, shape in PROFILES:
            try:
                calls.append(auto_call(fn, dtype, shape, extra={attr: value}))
            except LookupError:
                pass
        yield f"{attr}={value}", calls


LAYER_SHAPES = [("float32", [2, 3, 8, 8]), ("float32", [2, 3, 8]), ("float32", [2, 4]), ("float32", [2, 3, 4]),
                ("float32", [2, 3, 4, 4, 4]), ("float32", [2, 4, 4])]


# Layers whose constructor needs what VALUES cannot guess.
LAYER_ARGS = {
    "Upsample": {"scale_factor": 2}, "UpsamplingNearest2D": {"scale_factor": 2},
    "UpsamplingBilinear2D": {"scale_factor": 2}, "Maxout": {"groups": 3}, "PixelShuffle": {"upscale_factor": 1},
    "LocalResponseNorm": {"size": 3}, "Unflatten": {"axis": 1, "shape": [3, 1]}, "Fold": {"output_sizes": [4, 4],
    "kernel_sizes": 2}, "Unfold": {"kernel_sizes": 2}, "LPPool1D": {"norm_type": 2.0, "kernel_size": 2},
    "LPPool2D": {"norm_type": 2.0, "kernel_size": 2}, "LPPool1d": {"norm_type": 2.0, "kernel_size": 2},
    "LPPool2d": {"norm_type": 2.0, "kernel_size": 2}, "Bilinear": {"in1_features": 4, "in2_features": 4,
                                                                    "out_features": 5},
}
# Layers that hold other layers or parameters and compute nothing of their own.
CONTAINERS = {"LayerDict", "LayerList", "ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential",
              "RNNCellBase", "Layer", "Module"}


def layer_sites(qualname, name, cls):
    calls = []
    for dtype, shape in LAYER_SHAPES:
        try:
            calls.append(layer_call(cls, dtype, shape, LAYER_ARGS.get(name)))
        except LookupError:
            pass
    yield "", calls


def all_entries():
    """(qualified name, short name, kind, candidate sites) for everything the sweep covers, or is told to skip."""
    for qualname, name, fn in public_functions():
        if name in NOT_OPS:
            yield qualname, name, "not-ops", []
        else:
            yield qualname, name, "function", list(function_sites(qualname, name, fn))
    for qualname, name, cls in public_layers():
        if name in CONTAINERS:
            yield qualname, name, "not-ops", []
        elif qualname in EXPLICIT:
            yield qualname, name, "layer", [("", [EXPLICIT[qualname]])]
        else:
            yield qualname, name, "layer", list(layer_sites(qualname, name, cls))
