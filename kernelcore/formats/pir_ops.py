"""Paddle 3's PIR ops as kernelcore ops: one table, one row per `pd_op.*` op kernelcore runs.

A PIR op passes its operands by position and keeps some of what a legacy op held as attributes in operands
(a pool's `kernel_size`, a reshape's `shape`, a reduction's `axis`, a scale's `scale`, made by `pd_op.full` or
`pd_op.full_int_array`). A row names, in Paddle's operand order, where each operand goes:

    "X"           the legacy input slot it feeds
    "@ksize"      the legacy attribute its value becomes; the operand must be a constant
    "@shape|Shape|ShapeTensor"
                  that attribute when the operand is a constant; otherwise the legacy slot for a tensor (Shape)
                  or, when the operand is a list of values (`builtin.combine`), the slot for a list (ShapeTensor)
    None          dropped (an optional operand kernelcore's op does not take; it must be absent)
    "~"           ignored whether present or not (state Paddle threads through that the op does not read)

Results are named the same way, with `=mean` for an in-place result that aliases operand `mean` (a batch
norm's running mean, as Paddle's legacy programs write it). Each row also keeps Paddle's own operand and
attribute names: tests/test_pir_reader.py checks them against what Paddle's runtime reports for each op
(tests/paddle_oracle/make_pir_models.py writes them), so a renamed or reordered operand in a later Paddle
release is caught rather than run wrongly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class PirOp:
    legacy: str                                  # kernelcore's op type
    inputs: tuple[tuple[str, str | None], ...]   # (Paddle's operand name, where it goes)
    outputs: tuple[tuple[str, str | None], ...]  # (Paddle's result name, legacy output slot[=aliased operand])
    attrs: dict[str, str] = field(default_factory=dict)  # Paddle's attribute -> legacy attribute ("" drops)
    fixed: dict = field(default_factory=dict)    # legacy attributes with one value for every such op
    adjust: Callable[[dict], None] | None = None  # last touches on the legacy attributes
    input_dtype_attr: str = ""                   # a legacy attribute that states the first operand's dtype
    operands_take_dtype: bool = False            # Paddle's `dtype` attribute is the constant operands' dtype
    cast_result: tuple[str, str] | None = None   # (the legacy op's result dtype, Paddle's): a cast follows it
    # legacy output slots PIR gives no result for, named by the reader as Paddle's legacy programs name them:
    # reshape2's XShape (X's shape, which the gradient reads), so a PIR program differentiates as a legacy one
    extra_outputs: tuple[str, ...] = ()

    @property
    def pir_inputs(self) -> list[str]:
        return [n for n, _ in self.inputs]


X, OUT = (("x", "X"),), (("out", "Out"),)
DROP = ""  # an attribute with no legacy counterpart that changes nothing here (struct_name, place)


def _unary(legacy: str, **attrs) -> PirOp:
    return PirOp(legacy, X, OUT, dict(attrs))


def _binary(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("y", "Y")), OUT, fixed={"axis": -1})


def _logical(legacy: str) -> PirOp:
    """A binary op whose legacy form has no broadcast `axis` (the bitwise and logical ops)."""
    return PirOp(legacy, (("x", "X"), ("y", "Y")), OUT)


def _reduce_all_when_no_axis(attrs: dict) -> None:
    # an empty axis list reduces every axis (Paddle's reduce ops say so with reduce_all)
    dims = attrs.get("dim")
    if dims is None or list(dims) == []:
        attrs["dim"] = []
        attrs["reduce_all"] = True


def _reduce(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("axis", "@dim")), OUT, {"keepdim": "keep_dim", "dtype": DROP},
                 adjust=_reduce_all_when_no_axis)


def _conv(legacy: str) -> PirOp:
    return PirOp(legacy, (("input", "Input"), ("filter", "Filter")), (("out", "Output"),),
                 {"strides": "strides", "paddings": "paddings", "padding_algorithm": "padding_algorithm",
                  "dilations": "dilations", "groups": "groups", "data_format": "data_format"})


def _interp(legacy: str) -> PirOp:
    return PirOp(legacy, (("x", "X"), ("out_size", "OutSize"), ("size_tensor", "SizeTensor"),
                          ("scale_tensor", "Scale")), (("output", "Out"),),
                 {"data_format": "data_layout", "out_d": "out_d", "out_h": "out_h", "out_w": "out_w",
                  "scale": "scale", "interp_method": "interp_method", "align_corners": "align_corners",
                  "align_mode": "align_mode"})


def _dropout_mode(attrs: dict) -> None:
    attrs["dropout_implementation"] = attrs.pop("mode", "downgrade_in_infer")


def _same(*names: str) -> dict[str, str]:
    """Attributes PIR names as the legacy op does."""
    return {n: n for n in names}


def _pool_ksize_as_ints(attrs: dict) -> None:
    attrs["ksize"] = [int(k) for k in attrs.get("ksize", [])]


def _reduce_attr_axis(legacy: str) -> PirOp:
    """A reduction whose axes PIR keeps as an attribute (all, any), not as an operand."""
    return PirOp(legacy, X, OUT, {"axis": "dim", "keepdim": "keep_dim"}, adjust=_reduce_all_when_no_axis)


# assign_value's legacy attribute for its values, by the VarType number of its dtype (BOOL 0, INT32 2, INT64 3,
# FP32 5, FP64 6)
_VALUES_ATTR = {0: "bool_values", 2: "int32_values", 3: "int64_values", 5: "fp32_values", 6: "fp64_values"}


def _values_by_dtype(attrs: dict) -> None:
    values = attrs.pop("values", [])
    slot = _VALUES_ATTR.get(attrs.get("dtype"))
    if slot is None:
        raise ValueError(f"assign_value_ of dtype {attrs.get('dtype')} (kernelcore's takes bool, int32, int64, "
                         "float32 and float64)")
    attrs[slot] = values


def _pool_with_index(legacy: str) -> PirOp:
    return PirOp(legacy, X, (("out", "Out"), ("mask", "Mask")),
                 {"kernel_size": "ksize", "strides": "strides", "paddings": "paddings",
                  "global_pooling": "global_pooling", "adaptive": "adaptive", "ceil_mode": "ceil_mode"})


def _tril(lower: bool) -> PirOp:
    return PirOp("tril_triu", X, OUT, {"diagonal": "diagonal"}, fixed={"lower": lower})


def _xshape(spec: PirOp) -> PirOp:
    return PirOp(spec.legacy, spec.inputs, spec.outputs, spec.attrs, spec.fixed, spec.adjust,
                 extra_outputs=("XShape",))


PIR_OPS: dict[str, PirOp] = {
    "pd_op.matmul": PirOp("matmul_v2", (("x", "X"), ("y", "Y")), OUT,
                          {"transpose_x": "trans_x", "transpose_y": "trans_y"}),
    "pd_op.add": _binary("elementwise_add"),
    "pd_op.subtract": _binary("elementwise_sub"),
    "pd_op.multiply": _binary("elementwise_mul"),
    "pd_op.divide": _binary("elementwise_div"),
    "pd_op.maximum": _binary("elementwise_max"),
    "pd_op.elementwise_pow": _binary("elementwise_pow"),
    "pd_op.greater_than": _binary("greater_than"),
    "pd_op.less_than": _binary("less_than"),
    "pd_op.equal": _binary("equal"),
    "pd_op.relu": _unary("relu"),
    "pd_op.relu6": _unary("relu6"),
    "pd_op.tanh": _unary("tanh"),
    "pd_op.sigmoid": _unary("sigmoid"),
    "pd_op.exp": _unary("exp"),
    "pd_op.log": _unary("log"),
    "pd_op.sqrt": _unary("sqrt"),
    "pd_op.rsqrt": _unary("rsqrt"),
    "pd_op.abs": _unary("abs"),
    "pd_op.silu": _unary("silu"),
    "pd_op.gelu": _unary("gelu", approximate="approximate"),
    "pd_op.leaky_relu": _unary("leaky_relu", negative_slope="alpha"),
    "pd_op.elu": _unary("elu", alpha="alpha"),
    "pd_op.hardswish": PirOp("hard_swish", X, OUT, fixed={"threshold": 6.0, "scale": 6.0, "offset": 3.0}),
    "pd_op.hardsigmoid": _unary("hard_sigmoid", slope="slope", offset="offset"),
    "pd_op.swish": PirOp("swish", X, OUT, fixed={"beta": 1.0}),
    "pd_op.softmax": _unary("softmax", axis="axis"),
    "pd_op.assign": _unary("assign"),
    "pd_op.cast": PirOp("cast", X, OUT, {"dtype": "out_dtype"}, input_dtype_attr="in_dtype"),
    "pd_op.scale": PirOp("scale", (("x", "X"), ("scale", "@scale|ScaleTensor")), OUT,
                         {"bias": "bias", "bias_after_scale": "bias_after_scale"}),
    "pd_op.conv2d": _conv("conv2d"),
    "pd_op.depthwise_conv2d": _conv("depthwise_conv2d"),
    "pd_op.conv2d_transpose": PirOp(
        "conv2d_transpose", (("x", "Input"), ("filter", "Filter"), ("output_size", "@output_size")),
        (("out", "Output"),),
        {"strides": "strides", "paddings": "paddings", "output_padding": "output_padding",
         "padding_algorithm": "padding_algorithm", "groups": "groups", "dilations": "dilations",
         "data_format": "data_format"}),
    "pd_op.nearest_interp": _interp("nearest_interp_v2"),
    "pd_op.bilinear_interp": _interp("bilinear_interp_v2"),
    "pd_op.batch_norm_": PirOp(
        "batch_norm",
        (("x", "X"), ("mean", "Mean"), ("variance", "Variance"), ("scale", "Scale"), ("bias", "Bias")),
        (("out", "Y"), ("mean_out", "MeanOut=mean"), ("variance_out", "VarianceOut=variance"),
         ("saved_mean", "SavedMean"), ("saved_variance", "SavedVariance"), ("reserve_space", None)),
        {"is_test": "is_test", "momentum": "momentum", "epsilon": "epsilon", "data_format": "data_layout",
         "use_global_stats": "use_global_stats", "trainable_statistics": "trainable_statistics"}),
    "pd_op.pool2d": PirOp("pool2d", (("x", "X"), ("kernel_size", "@ksize")), OUT,
                          {"strides": "strides", "paddings": "paddings", "ceil_mode": "ceil_mode",
                           "exclusive": "exclusive", "data_format": "data_format", "pooling_type": "pooling_type",
                           "global_pooling": "global_pooling", "adaptive": "adaptive",
                           "padding_algorithm": "padding_algorithm"}, adjust=_pool_ksize_as_ints),
    "pd_op.flatten": _xshape(PirOp("flatten_contiguous_range", X, OUT,
                                   {"start_axis": "start_axis", "stop_axis": "stop_axis"})),
    "pd_op.reshape": _xshape(PirOp("reshape2", (("x", "X"), ("shape", "@shape|Shape|ShapeTensor")), OUT)),
    "pd_op.transpose": _xshape(PirOp("transpose2", X, OUT, {"perm": "axis"})),
    "pd_op.concat": PirOp("concat", (("x", "X"), ("axis", "@axis|AxisTensor")), OUT),
    "pd_op.split_with_num": PirOp("split", (("x", "X"), ("axis", "@axis|AxisTensor")), OUT, {"num": "num"}),
    "pd_op.split": PirOp("split", (("x", "X"), ("sections", "@sections|SectionsTensorList"),
                                   ("axis", "@axis|AxisTensor")), OUT),
    "pd_op.squeeze": _xshape(PirOp("squeeze2", (("x", "X"), ("axis", "@axes")), OUT)),
    "pd_op.unsqueeze": _xshape(PirOp("unsqueeze2", (("x", "X"), ("axis", "@axes|AxesTensor|AxesTensorList")),
                                     OUT)),
    "pd_op.slice": PirOp("slice", (("input", "Input"), ("starts", "@starts|StartsTensor|StartsTensorList"),
                                   ("ends", "@ends|EndsTensor|EndsTensorList")), OUT,
                         {"axes": "axes", "infer_flags": "infer_flags", "decrease_axis": "decrease_axis"}),
    "pd_op.embedding": PirOp("lookup_table_v2", (("x", "Ids"), ("weight", "W")), OUT,
                             {"padding_idx": "padding_idx", "sparse": "is_sparse"}),
    # legacy range takes its dtype from its operands; PIR's arange says it in an attribute
    "pd_op.arange": PirOp("range", (("start", "Start"), ("end", "End"), ("step", "Step")), OUT, {"dtype": DROP},
                          operands_take_dtype=True),
    "pd_op.shape64": PirOp("shape", (("input", "Input"),), OUT, cast_result=("int32", "int64")),
    "pd_op.stack": PirOp("stack", X, (("out", "Y"),), {"axis": "axis"}),
    "pd_op.full_with_tensor": PirOp("fill_constant", (("value", "ValueTensor"), ("shape", "ShapeTensor")), OUT,
                                    {"dtype": "dtype"}),
    "pd_op.rnn": PirOp("rnn", (("x", "Input"), ("pre_state", "PreState"), ("weight_list", "WeightList"),
                               ("sequence_length", "SequenceLength"), ("dropout_state_in", "~")),
                       (("out", "Out"), ("dropout_state_out", "DropoutState"), ("state", "State"),
                        ("reserve", "Reserve")),
                       {"dropout_prob": "dropout_prob", "is_bidirec": "is_bidirec", "input_size": "input_size",
                        "hidden_size": "hidden_size", "num_layers": "num_layers", "mode": "mode", "seed": "seed",
                        "is_test": "is_test"}),
    "pd_op.dropout": PirOp("dropout", (("x", "X"), ("seed_tensor", None), ("p", "@dropout_prob")),
                           (("out", "Out"), ("mask", "Mask")),
                           {"is_test": "is_test", "mode": "mode", "seed": "seed", "fix_seed": "fix_seed"},
                           adjust=_dropout_mode),
    "pd_op.sum": _reduce("reduce_sum"),
    "pd_op.mean": _reduce("reduce_mean"),
    "pd_op.max": _reduce("reduce_max"),
    "pd_op.layer_norm": PirOp("layer_norm", (("x", "X"), ("scale", "Scale"), ("bias", "Bias")),
                              (("out", "Y"), ("mean", "Mean"), ("variance", "Variance")),
                              {"epsilon": "epsilon", "begin_norm_axis": "begin_norm_axis"}),
    # detection heads (YOLO, SSD anchors, RoIAlign) and Swin's shifted windows
    "pd_op.yolo_box": PirOp("yolo_box", (("x", "X"), ("img_size", "ImgSize")),
                            (("boxes", "Boxes"), ("scores", "Scores")), _same(
                                "anchors", "class_num", "conf_thresh", "downsample_ratio", "clip_bbox", "scale_x_y",
                                "iou_aware", "iou_aware_factor")),
    "pd_op.matrix_nms": PirOp("matrix_nms", (("bboxes", "BBoxes"), ("scores", "Scores")),
                              (("out", "Out"), ("index", "Index"), ("roisnum", "RoisNum")), _same(
                                  "score_threshold", "nms_top_k", "keep_top_k", "post_threshold", "use_gaussian",
                                  "gaussian_sigma", "background_label", "normalized")),
    "pd_op.nms": PirOp("nms", (("x", "Boxes"),), (("out", "KeepBoxesIdxs"),), {"threshold": "iou_threshold"}),
    "pd_op.argsort": PirOp("argsort", X, (("out", "Out"), ("indices", "Indices")),
                           _same("axis", "descending", "stable")),
    "pd_op.gather_nd": PirOp("gather_nd", (("x", "X"), ("index", "Index")), OUT),
    "pd_op.prior_box": PirOp("prior_box", (("input", "Input"), ("image", "Image")),
                             (("out", "Boxes"), ("var", "Variances")), _same(
                                 "min_sizes", "max_sizes", "aspect_ratios", "variances", "flip", "clip", "step_w",
                                 "step_h", "offset", "min_max_aspect_ratios_order")),
    "pd_op.box_coder": PirOp("box_coder", (("prior_box", "PriorBox"), ("prior_box_var", "PriorBoxVar"),
                                           ("target_box", "TargetBox")), (("output_box", "OutputBox"),),
                             _same("code_type", "box_normalized", "axis", "variance")),
    "pd_op.roi_align": PirOp("roi_align", (("x", "X"), ("boxes", "ROIs"), ("boxes_num", "RoisNum")), OUT,
                             _same("pooled_height", "pooled_width", "spatial_scale", "sampling_ratio", "aligned")),
    "pd_op.tile": PirOp("tile", (("x", "X"), ("repeat_times", "@repeat_times|RepeatTimes|repeat_times_tensor")), OUT),
    "pd_op.roll": PirOp("roll", (("x", "X"), ("shifts", "@shifts|ShiftsTensor")), OUT, {"axis": "axis"}),
    "pd_op.index_select": PirOp("index_select", (("x", "X"), ("index", "Index")), OUT, {"axis": "dim"}),
    # the rest of the legacy ops kernelcore has, as the API sweep's PIR programs write them
    "pd_op.minimum": _binary("elementwise_min"),
    "pd_op.floor_divide": _binary("elementwise_floordiv"),
    "pd_op.remainder": _binary("elementwise_mod"),
    "pd_op.greater_equal": _binary("greater_equal"),
    "pd_op.less_equal": _binary("less_equal"),
    "pd_op.not_equal": _binary("not_equal"),
    "pd_op.bitwise_and": _logical("bitwise_and"),
    "pd_op.bitwise_or": _logical("bitwise_or"),
    "pd_op.bitwise_xor": _logical("bitwise_xor"),
    "pd_op.logical_and": _logical("logical_and"),
    "pd_op.logical_or": _logical("logical_or"),
    "pd_op.logical_xor": _logical("logical_xor"),
    **{f"pd_op.{t}": _unary(t) for t in (
        "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "expm1", "floor", "log10",
        "log1p", "log2", "logical_not", "bitwise_not", "reciprocal", "sign", "sin", "sinh", "square", "tan",
        "logsigmoid", "softsign", "tanh_shrink")},
    "pd_op.isnan": _unary("isnan_v2"),
    "pd_op.isinf": _unary("isinf_v2"),
    "pd_op.isfinite": _unary("isfinite_v2"),
    "pd_op.trunc": PirOp("trunc", (("input", "X"),), OUT),
    "pd_op.round": _unary("round", decimals="decimals"),
    "pd_op.pow": _unary("pow", y="factor"),
    "pd_op.celu": _unary("celu", alpha="alpha"),
    "pd_op.selu": _unary("selu", scale="scale", alpha="alpha"),
    "pd_op.mish": _unary("mish", **{"lambda": "threshold"}),
    "pd_op.softplus": _unary("softplus", beta="beta", threshold="threshold"),
    "pd_op.softshrink": _unary("softshrink", threshold="lambda"),
    "pd_op.hardshrink": _unary("hard_shrink", threshold="threshold"),
    "pd_op.hardtanh": _unary("brelu", t_min="t_min", t_max="t_max"),
    "pd_op.thresholded_relu": _unary("thresholded_relu", threshold="threshold", value="value"),
    "pd_op.log_softmax": _unary("log_softmax", axis="axis"),
    "pd_op.maxout": _unary("maxout", groups="groups", axis="axis"),
    "pd_op.flip": _unary("flip", axis="axis"),
    "pd_op.pixel_shuffle": _unary("pixel_shuffle", upscale_factor="upscale_factor", data_format="data_format"),
    "pd_op.pixel_unshuffle": _unary("pixel_unshuffle", downscale_factor="downscale_factor",
                                    data_format="data_format"),
    "pd_op.channel_shuffle": _unary("channel_shuffle", groups="groups", data_format="data_format"),
    "pd_op.p_norm": PirOp("p_norm", X, OUT, _same("porder", "axis", "epsilon", "keepdim", "asvector")),
    "pd_op.tril": _tril(True),
    "pd_op.triu": _tril(False),
    "pd_op.prelu": PirOp("prelu", (("x", "X"), ("alpha", "Alpha")), OUT, _same("data_format", "mode")),
    "pd_op.lerp": PirOp("lerp", (("x", "X"), ("y", "Y"), ("weight", "Weight")), OUT),
    "pd_op.where": PirOp("where", (("condition", "Condition"), ("x", "X"), ("y", "Y")), OUT),
    "pd_op.clip": PirOp("clip", (("x", "X"), ("min", "@min|Min"), ("max", "@max|Max")), OUT),
    "pd_op.add_n": PirOp("sum", (("inputs", "X"),), OUT),
    "pd_op.mean_all": PirOp("mean", X, OUT),
    "pd_op.min": _reduce("reduce_min"),
    "pd_op.prod": PirOp("reduce_prod", (("x", "X"), ("axis", "@dim")), OUT,
                        {"keepdim": "keep_dim", "reduce_all": "reduce_all"}, adjust=_reduce_all_when_no_axis),
    "pd_op.all": _reduce_attr_axis("reduce_all"),
    "pd_op.any": _reduce_attr_axis("reduce_any"),
    "pd_op.frobenius_norm": PirOp("frobenius_norm", (("x", "X"), ("axis", "@dim")), OUT,
                                  {"keep_dim": "keep_dim", "reduce_all": "reduce_all"},
                                  adjust=_reduce_all_when_no_axis),
    "pd_op.argmax": PirOp("arg_max", (("x", "X"), ("axis", "@axis")), OUT, _same("keepdims", "flatten", "dtype")),
    "pd_op.argmin": PirOp("arg_min", (("x", "X"), ("axis", "@axis")), OUT, _same("keepdims", "flatten", "dtype")),
    "pd_op.cumsum": PirOp("cumsum", (("x", "X"), ("axis", "@axis")), OUT, _same("flatten", "exclusive", "reverse")),
    "pd_op.topk": PirOp("top_k_v2", (("x", "X"), ("k", "@k|K")), (("out", "Out"), ("indices", "Indices")),
                        _same("axis", "largest", "sorted")),
    "pd_op.gather": PirOp("gather", (("x", "X"), ("index", "Index"), ("axis", "@axis|Axis")), OUT),
    "pd_op.scatter": PirOp("scatter", (("x", "X"), ("index", "Ids"), ("updates", "Updates")), OUT,
                           _same("overwrite")),
    "pd_op.gather_tree": PirOp("gather_tree", (("ids", "Ids"), ("parents", "Parents")), OUT),
    "pd_op.unstack": PirOp("unstack", X, (("out", "Y"),), _same("axis", "num")),
    "pd_op.expand": PirOp("expand_v2", (("x", "X"), ("shape", "@shape|Shape|expand_shapes_tensor")), OUT),
    "pd_op.expand_as": PirOp("expand_as_v2", (("x", "X"), ("y", "Y")), OUT, _same("target_shape")),
    "pd_op.one_hot": PirOp("one_hot_v2", (("x", "X"), ("num_classes", "@depth|depth_tensor")), OUT),
    "pd_op.numel": PirOp("size", (("x", "Input"),), (("size", "Out"),)),
    "pd_op.full_like": PirOp("fill_any_like", (("x", "X"), ("value", "@value")), OUT, {"dtype": "dtype"}),
    "pd_op.assign_value_": PirOp("assign_value", (("output", "~"),), OUT, _same("shape", "dtype", "values"),
                                 adjust=_values_by_dtype),
    "pd_op.uniform": PirOp("uniform_random", (("shape", "@shape|ShapeTensor|ShapeTensorList"), ("min", "@min"),
                                              ("max", "@max")), OUT, _same("dtype", "seed")),
    "pd_op.gaussian": PirOp("gaussian_random", (("shape", "@shape|ShapeTensor|ShapeTensorList"),), OUT,
                            _same("mean", "std", "seed", "dtype")),
    "pd_op.pad": PirOp("pad", (("x", "X"), ("pad_value", "@pad_value")), OUT, _same("paddings")),
    "pd_op.pad3d": PirOp("pad3d", (("x", "X"), ("paddings", "@paddings|Paddings")), OUT,
                         {"mode": "mode", "pad_value": "value", "data_format": "data_format"}),
    "pd_op.pool3d": PirOp("pool3d", X, OUT, {
        "kernel_size": "ksize", **_same("strides", "paddings", "ceil_mode", "exclusive", "data_format",
                                        "pooling_type", "global_pooling", "adaptive", "padding_algorithm")}),
    "pd_op.max_pool2d_with_index": _pool_with_index("max_pool2d_with_index"),
    "pd_op.max_pool3d_with_index": _pool_with_index("max_pool3d_with_index"),
    "pd_op.conv3d": _conv("conv3d"),
    "pd_op.conv3d_transpose": PirOp("conv3d_transpose", (("x", "Input"), ("filter", "Filter")), (("out", "Output"),),
                                    _same("strides", "paddings", "output_padding", "output_size",
                                          "padding_algorithm", "groups", "dilations", "data_format")),
    "pd_op.group_norm": PirOp("group_norm", (("x", "X"), ("scale", "Scale"), ("bias", "Bias")),
                              (("y", "Y"), ("mean", "Mean"), ("variance", "Variance")),
                              {"epsilon": "epsilon", "groups": "groups", "data_format": "data_layout"}),
    "pd_op.instance_norm": PirOp("instance_norm", (("x", "X"), ("scale", "Scale"), ("bias", "Bias")),
                                 (("y", "Y"), ("saved_mean", "SavedMean"), ("saved_variance", "SavedVariance")),
                                 _same("epsilon")),
    "pd_op.meshgrid": PirOp("meshgrid", (("inputs", "X"),), OUT),
    "pd_op.diag": PirOp("diag_v2", X, OUT, _same("offset", "padding_value")),
    "pd_op.index_sample": PirOp("index_sample", (("x", "X"), ("index", "Index")), OUT),
    "pd_op.take_along_axis": PirOp("take_along_axis", (("arr", "Input"), ("indices", "Index")),
                                   (("out", "Result"),), {"axis": "Axis"}),
    "pd_op.empty": PirOp("empty", (("shape", "@shape|ShapeTensor|ShapeTensorList"),), OUT, _same("dtype")),
    "pd_op.eye": PirOp("eye", (("num_rows", "@num_rows"), ("num_columns", "@num_columns")), OUT, _same("dtype")),
    "pd_op.linspace": PirOp("linspace", (("start", "Start"), ("stop", "Stop"), ("number", "Num")), OUT,
                            _same("dtype")),
    "pd_op.lp_pool2d": PirOp("lp_pool2d", (("x", "x"),), (("out", "out"),), _same(
        "kernel_size", "strides", "paddings", "ceil_mode", "exclusive", "data_format", "pooling_type",
        "global_pooling", "adaptive", "padding_algorithm", "norm_type")),
    "pd_op.bce_loss": PirOp("bce_loss", (("input", "X"), ("label", "Label")), OUT),
    "pd_op.sigmoid_cross_entropy_with_logits": PirOp(
        "sigmoid_cross_entropy_with_logits", (("x", "X"), ("label", "Label"), ("pos_weight", "pos_weight")), OUT,
        _same("normalize", "ignore_index")),
    "pd_op.kldiv_loss": PirOp("kldiv_loss", (("x", "X"), ("label", "Target")), (("out", "Loss"),),
                              _same("reduction", "log_target")),
    "pd_op.log_loss": PirOp("log_loss", (("input", "Predicted"), ("label", "Labels")), (("out", "Loss"),),
                            _same("epsilon")),
    "pd_op.huber_loss": PirOp("huber_loss", (("input", "X"), ("label", "Y")),
                              (("out", "Out"), ("residual", "Residual")), _same("delta")),
    "pd_op.fmax": _logical("elementwise_fmax"),
    "pd_op.fmin": _logical("elementwise_fmin"),
    "pd_op.heaviside": _logical("elementwise_heaviside"),
    "pd_op.equal_all": _logical("equal_all"),
    "pd_op.atan2": PirOp("atan2", (("x", "X1"), ("y", "X2")), OUT),
    "pd_op.copysign": PirOp("copysign", (("x", "x"), ("y", "y")), (("out", "out"),)),
    "pd_op.cross": PirOp("cross", (("x", "X"), ("y", "Y")), OUT, {"axis": "dim"}),
    "pd_op.mv": PirOp("mv", (("x", "X"), ("vec", "Vec")), OUT),
    "pd_op.addmm": PirOp("addmm", (("input", "Input"), ("x", "X"), ("y", "Y")), OUT,
                         {"beta": "Beta", "alpha": "Alpha"}),
    # legacy allclose's rtol and atol attributes are strings: the constants go in as its Rtol and Atol tensors
    "pd_op.allclose": PirOp("allclose", (("x", "Input"), ("y", "Other"), ("rtol", "Rtol"), ("atol", "Atol")),
                            OUT, _same("equal_nan")),
    "pd_op.inverse": PirOp("inverse", (("x", "Input"),), (("out", "Output"),)),
    "pd_op.trace": PirOp("trace", (("x", "Input"),), OUT, _same("offset", "axis1", "axis2")),
    "pd_op.stanh": _unary("stanh", scale_a="scale_a", scale_b="scale_b"),
    "pd_op.logit": _unary("logit", eps="eps"),
    "pd_op.cumprod": _unary("cumprod", dim="dim", exclusive="exclusive", reverse="reverse"),
    "pd_op.logcumsumexp": _unary("logcumsumexp", axis="axis", flatten="flatten", exclusive="exclusive",
                                 reverse="reverse"),
    "pd_op.cummax": PirOp("cummax", (("x", "x"),), (("out", "out"), ("indices", "indices")), _same("axis", "dtype")),
    "pd_op.cummin": PirOp("cummin", (("x", "x"),), (("out", "out"), ("indices", "indices")), _same("axis", "dtype")),
    "pd_op.masked_select": PirOp("masked_select", (("x", "X"), ("mask", "Mask")), (("out", "Y"),)),
    "pd_op.nonzero": PirOp("where_index", (("condition", "Condition"),), OUT),
    "pd_op.searchsorted": PirOp("searchsorted", (("sorted_sequence", "SortedSequence"), ("values", "Values")), OUT,
                                _same("out_int32", "right")),
    "pd_op.nll_loss": PirOp("nll_loss", (("input", "X"), ("label", "Label"), ("weight", "Weight")),
                            (("out", "Out"), ("total_weight", "Total_weight")), _same("ignore_index", "reduction")),
    "pd_op.bilinear": PirOp("bilinear_tensor_product", (("x", "X"), ("y", "Y"), ("weight", "Weight"),
                                                        ("bias", "Bias")), OUT),
    "pd_op.fold": PirOp("fold", X, (("out", "Y"),),
                        _same("output_sizes", "kernel_sizes", "strides", "paddings", "dilations")),
    "pd_op.unfold": PirOp("unfold", X, (("out", "Y"),), _same("kernel_sizes", "strides", "paddings", "dilations")),
    "pd_op.unpool": PirOp("unpool", (("x", "X"), ("indices", "Indices"), ("output_size", "@output_size")), OUT,
                          {"ksize": "ksize", "strides": "strides", "padding": "paddings",
                           "data_format": "data_format"}, fixed={"unpooling_type": "max"}),
    "pd_op.unpool3d": PirOp("unpool3d", (("x", "X"), ("indices", "Indices")), OUT,
                            _same("ksize", "strides", "paddings", "output_size", "data_format"),
                            fixed={"unpooling_type": "max"}),
    "pd_op.cross_entropy_with_softmax": PirOp(
        "softmax_with_cross_entropy", (("input", "Logits"), ("label", "Label")),
        (("softmax", "Softmax"), ("loss", "Loss")),
        _same("soft_label", "use_softmax", "numeric_stable_mode", "ignore_index", "axis")),
}

# Ops that make the constants other ops fold into attributes; run as kernelcore ops where a value is used as a
# tensor (an operand of `add`, say).
CONSTANT_MAKERS = frozenset({"pd_op.full", "pd_op.full_int_array"})
