"""Make PaddlePaddle write paddle.vision models and single-layer paddle.nn programs, with reference outputs.

    .venv-paddle/bin/python  tests/paddle_oracle/make_vision_models.py OUTDIR            # Paddle 3.3.1 legacy IR
    .venv-paddle2/bin/python tests/paddle_oracle/make_vision_models.py OUTDIR --failed   # 2.6.2: what 3.3.1 could not

Every case is built in static mode with fixed seeds (program random_seed, numpy feeds). For case <c> it writes:
    <c>.pdmodel / <c>.pdiparams   paddle.static.save_inference_model (inference cases)
    <c>.main.pb                   the unpruned main program (training-mode cases: save_inference_model would set
                                  is_test=true), with <c>.npz holding init/<var> and after/<var> for persistables
    <c>.npz                       feed arrays by name and Paddle's executor outputs as fetch_0, fetch_1, ... (for
                                  inference cases: the saved model's outputs, computed in a fresh process, and
                                  the main program's as main_fetch_0, ...)
    <c>.json                      feed/fetch names, op types, the attrs of every non-feed/fetch op, Paddle version
and OUTDIR/manifest-<paddle version>.json: {"ok": [cases], "failed": {case: error}}. With --failed, only the cases
some manifest in OUTDIR lists as failed (and no manifest lists as ok) are built. Case names after OUTDIR pick
cases; --all adds the bigger EXTRA_MODELS (EXTRA_TRAIN_STEPS, the training benchmark's programs, only when named).

    .venv-paddle/bin/python tests/paddle_oracle/make_vision_models.py OUTDIR --constructors [names]

builds (does not run) every public model constructor of paddle.vision.models at its design input size and
writes each inference program alone, <name>.pdmodel (no parameters), plus OUTDIR/constructors.json (op-type
summary); see make_constructor_programs.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import paddle  # noqa: E402
import paddle.nn as nn  # noqa: E402
import paddle.nn.functional as F  # noqa: E402

paddle.enable_static()
SEED = 20261123


def randn(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------------------------------------------------------
# cases: name -> (make the layer (called inside program_guard), input shape, mode)
#   mode "eval": layer.eval(), saved with save_inference_model; "train": layer.train(), main program saved whole
# ---------------------------------------------------------------------------------------------------------------
def _vision(fn, **kw):
    def make():
        from paddle.vision import models as M
        return getattr(M, fn)(**kw)
    return make


MODELS = {
    "lenet": (_vision("LeNet"), [1, 1, 28, 28]),
    "resnet18": (_vision("resnet18"), [2, 3, 64, 64]),
    "mobilenet_v1": (_vision("mobilenet_v1"), [2, 3, 64, 64]),
    "mobilenet_v2": (_vision("mobilenet_v2"), [2, 3, 96, 96]),
    "mobilenet_v3_small": (_vision("mobilenet_v3_small"), [2, 3, 64, 64]),
    "mobilenet_v3_large": (_vision("mobilenet_v3_large"), [2, 3, 64, 64]),
    "squeezenet1_0": (_vision("squeezenet1_0"), [2, 3, 64, 64]),
    "shufflenet_v2_x0_25": (_vision("shufflenet_v2_x0_25"), [2, 3, 64, 64]),
    "shufflenet_v2_swish": (_vision("shufflenet_v2_swish"), [2, 3, 96, 96]),
    "densenet121": (_vision("densenet121"), [2, 3, 64, 64]),
    # num_classes=0 leaves out the classifiers that hold most of the weights (AlexNet: 58.6M of 61.1M parameters,
    # VGG: 123.6M), so the files stay small (AlexNet 10 MB, VGG-11 37 MB, VGG-16 59 MB); what is left is every
    # convolution, pool and batch norm. AlexNet then takes any input size; at 224x224 it still costs only
    # ~0.7 GFLOP. VGG's AdaptiveAvgPool2D((7, 7)) takes its 2x2 map at 64x64 up to 7x7 (overlapping windows).
    "alexnet": (_vision("alexnet", num_classes=0), [1, 3, 224, 224]),
    "vgg11": (_vision("vgg11", num_classes=0), [1, 3, 64, 64]),
    "vgg11_bn": (_vision("vgg11", batch_norm=True, num_classes=0), [1, 3, 64, 64]),
    "vgg16": (_vision("vgg16", num_classes=0), [1, 3, 64, 64]),
    "vgg16_bn": (_vision("vgg16", batch_norm=True, num_classes=0), [1, 3, 64, 64]),
    # GoogLeNet's auxiliary heads need 224x224 (a 13x13 map for their 1152-wide Linear); num_classes=10 keeps
    # all three heads (out, out1, out2: three fetches) at 8.5M parameters, 34 MB
    "googlenet": (_vision("googlenet", num_classes=10), [1, 3, 224, 224]),
}
# Bigger models, built only when named on the command line (or with --all). InceptionV3 (87 MB of parameters at
# num_classes=10) and ResNeXt-50 32x4d (92 MB) keep nearly all their weights in convolutions, which no argument of
# their constructors shrinks (inception_v3 takes num_classes/with_pool; resnext50_32x4d fixes groups and width);
# a smaller input makes them cheaper to run, not smaller. Both match Paddle when built (see NOTES.md).
EXTRA_MODELS = {
    "inception_v3": (_vision("inception_v3", num_classes=10), [1, 3, 96, 96]),
    "resnext50_32x4d": (_vision("resnext50_32x4d", num_classes=10), [2, 3, 96, 96]),
    # bench/models.py: the benchmark's shapes
    "resnet18_b8": (_vision("resnet18"), [8, 3, 64, 64]),
    "mobilenet_v2_b8": (_vision("mobilenet_v2"), [8, 3, 64, 64]),
}


def _fn(f, **kw):
    """A functional call as a layer."""
    class L(nn.Layer):
        def forward(self, x):
            return f(x, **kw)
    return L


LAYERS = {
    # convolutions
    "conv1d": (lambda: nn.Conv1D(4, 6, 3, stride=2, padding=1), [2, 4, 16]),
    "conv2d": (lambda: nn.Conv2D(4, 6, 3, stride=2, padding=1), [2, 4, 11, 12]),
    "conv2d_groups_dilation": (lambda: nn.Conv2D(4, 6, 3, padding=2, dilation=2, groups=2), [2, 4, 10, 9]),
    "conv2d_same": (lambda: nn.Conv2D(3, 5, 4, stride=2, padding="SAME"), [2, 3, 11, 10]),
    "conv2d_valid": (lambda: nn.Conv2D(3, 5, (3, 2), stride=(2, 1), padding="VALID"), [2, 3, 11, 10]),
    "conv2d_asym_pad": (lambda: nn.Conv2D(3, 4, 3, padding=[1, 2, 0, 1], bias_attr=False), [1, 3, 8, 9]),
    "conv2d_nhwc": (lambda: nn.Conv2D(3, 4, 3, padding=1, data_format="NHWC"), [2, 7, 6, 3]),
    "conv2d_1x1": (lambda: nn.Conv2D(8, 16, 1), [2, 8, 5, 5]),
    # what the EXTRA_MODELS write that no default model does: ResNeXt's 32-group 3x3 convolution (4 channels a
    # group), InceptionV3's 1x7 / 7x1 convolutions with paddings [0, 3] / [3, 0]
    "conv2d_groups32": (lambda: nn.Conv2D(128, 128, 3, stride=2, padding=1, groups=32, bias_attr=False),
                        [1, 128, 7, 8]),
    "conv2d_1x7": (lambda: nn.Conv2D(8, 6, (1, 7), padding=(0, 3)), [1, 8, 9, 10]),
    "conv2d_7x1": (lambda: nn.Conv2D(8, 6, (7, 1), padding=(3, 0)), [1, 8, 9, 10]),
    "depthwise_conv2d": (lambda: nn.Conv2D(4, 8, 3, stride=2, padding=1, groups=4), [2, 4, 9, 9]),
    "depthwise_conv2d_k5": (lambda: nn.Conv2D(6, 6, 5, padding=2, groups=6, dilation=1), [1, 6, 7, 8]),
    "conv3d": (lambda: nn.Conv3D(3, 4, 3, stride=(1, 2, 2), padding=1), [2, 3, 5, 8, 8]),
    "conv2d_transpose": (lambda: nn.Conv2DTranspose(4, 6, 3, stride=2, padding=1, output_padding=1), [2, 4, 5, 6]),
    "conv2d_transpose_groups": (lambda: nn.Conv2DTranspose(4, 6, 3, stride=2, groups=2, dilation=2),
                                [1, 4, 4, 5]),
    "conv1d_transpose": (lambda: nn.Conv1DTranspose(4, 3, 4, stride=2, padding=1), [2, 4, 7]),
    "conv3d_transpose": (lambda: nn.Conv3DTranspose(3, 2, 3, stride=2, padding=1), [1, 3, 3, 4, 4]),
    # pools
    "maxpool2d": (lambda: nn.MaxPool2D(3, 2, 1), [2, 3, 9, 10]),
    "maxpool2d_ceil": (lambda: nn.MaxPool2D(3, 2, 0, ceil_mode=True), [2, 3, 10, 10]),
    "avgpool2d_exclusive": (lambda: nn.AvgPool2D(3, 2, 1), [2, 3, 9, 10]),
    "avgpool2d_inclusive": (lambda: nn.AvgPool2D(3, 2, 1, exclusive=False), [2, 3, 9, 10]),
    "avgpool2d_ceil": (lambda: nn.AvgPool2D(3, 2, 0, ceil_mode=True), [2, 3, 10, 10]),
    "avgpool2d_same": (_fn(F.avg_pool2d, kernel_size=3, stride=2, padding="SAME"), [1, 2, 9, 8]),
    "maxpool2d_valid": (_fn(F.max_pool2d, kernel_size=2, stride=2, padding="VALID"), [1, 2, 9, 8]),
    "maxpool2d_asym": (_fn(F.max_pool2d, kernel_size=3, stride=1, padding=[0, 1, 1, 2]), [1, 2, 6, 7]),
    "adaptive_avgpool2d": (lambda: nn.AdaptiveAvgPool2D((3, 4)), [2, 3, 10, 9]),
    "adaptive_maxpool2d": (lambda: nn.AdaptiveMaxPool2D(3), [2, 3, 10, 9]),
    "global_avgpool2d": (lambda: nn.AdaptiveAvgPool2D(1), [2, 3, 7, 7]),
    "maxpool1d": (lambda: nn.MaxPool1D(3, 2, 1), [2, 3, 12]),
    "avgpool1d": (lambda: nn.AvgPool1D(2, 2), [2, 3, 12]),
    "maxpool3d": (lambda: nn.MaxPool3D(2, 2), [1, 2, 4, 6, 6]),
    "avgpool3d": (lambda: nn.AvgPool3D(3, 2, 1), [1, 2, 5, 6, 6]),
    "adaptive_avgpool3d": (lambda: nn.AdaptiveAvgPool3D(2), [1, 2, 5, 6, 7]),
    # normalisation
    "batchnorm2d": (lambda: nn.BatchNorm2D(4), [2, 4, 5, 6]),
    "batchnorm1d": (lambda: nn.BatchNorm1D(5), [6, 5]),
    "batchnorm2d_train": (lambda: nn.BatchNorm2D(4, momentum=0.8), [3, 4, 5, 6], "train"),
    "batchnorm1d_train": (lambda: nn.BatchNorm1D(5), [6, 5, 7], "train"),
    "groupnorm": (lambda: nn.GroupNorm(2, 6), [2, 6, 4, 5]),
    "instancenorm2d": (lambda: nn.InstanceNorm2D(3), [2, 3, 5, 6]),
    "layernorm": (lambda: nn.LayerNorm([5, 6]), [2, 3, 5, 6]),
    # activations
    "relu6": (lambda: nn.ReLU6(), [2, 3, 4, 5]),
    "elu": (lambda: nn.ELU(0.7), [2, 3, 4, 5]),
    "leaky_relu": (lambda: nn.LeakyReLU(0.1), [2, 3, 4, 5]),
    "hardswish": (lambda: nn.Hardswish(), [2, 3, 4, 5]),
    "hardsigmoid": (lambda: nn.Hardsigmoid(), [2, 3, 4, 5]),
    "swish": (lambda: nn.Swish(), [2, 3, 4, 5]),
    "silu": (lambda: nn.Silu(), [2, 3, 4, 5]),
    "softplus": (lambda: nn.Softplus(beta=2.0, threshold=3.0), [2, 3, 4, 5]),
    "mish": (lambda: nn.Mish(), [2, 3, 4, 5]),
    "prelu": (lambda: nn.PReLU(), [2, 3, 4, 5]),
    "prelu_channel": (lambda: nn.PReLU(num_parameters=3, init=0.1), [2, 3, 4, 5]),
    "dropout_upscale": (lambda: nn.Dropout(0.3), [2, 3, 4, 5]),
    "dropout_downscale": (lambda: nn.Dropout(0.3, mode="downscale_in_infer"), [2, 3, 4, 5]),
    # resizing and padding
    "nearest": (_fn(F.interpolate, scale_factor=2, mode="nearest"), [1, 2, 3, 4]),
    "nearest_size": (_fn(F.interpolate, size=[5, 7], mode="nearest"), [1, 2, 3, 4]),
    "bilinear": (_fn(F.interpolate, size=[5, 7], mode="bilinear"), [1, 2, 3, 4]),
    "bilinear_align_corners": (_fn(F.interpolate, size=[5, 7], mode="bilinear", align_corners=True),
                               [1, 2, 3, 4]),
    "bilinear_align_mode1": (_fn(F.interpolate, scale_factor=1.5, mode="bilinear", align_mode=1), [1, 2, 4, 4]),
    "bilinear_down": (_fn(F.interpolate, size=[3, 2], mode="bilinear"), [1, 2, 7, 5]),
    "bicubic": (_fn(F.interpolate, size=[6, 9], mode="bicubic"), [1, 2, 4, 5]),
    "bicubic_align_corners": (_fn(F.interpolate, size=[6, 9], mode="bicubic", align_corners=True), [1, 2, 4, 5]),
    "pad2d_constant": (lambda: nn.Pad2D([1, 2, 0, 3], value=0.5), [1, 2, 3, 4]),
    "pad2d_reflect": (lambda: nn.Pad2D([1, 2, 2, 1], mode="reflect"), [1, 2, 4, 5]),
    "pad2d_replicate": (lambda: nn.Pad2D([1, 2, 2, 1], mode="replicate"), [1, 2, 4, 5]),
    "pad2d_circular": (lambda: nn.Pad2D([1, 2, 2, 1], mode="circular"), [1, 2, 4, 5]),
    "flatten": (lambda: nn.Flatten(1, 2), [2, 3, 4, 5]),
}

CASES = {**MODELS, **LAYERS}
# Models whose batch norms get running statistics from the feed (calibrate_batch_norms): without, MobileNets'
# outputs are ~1e-11..1e-17. DenseNet-121 is left out: its outputs are O(1) already.
CALIBRATE = {"resnet18", "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
             "shufflenet_v2_x0_25", "shufflenet_v2_swish", "resnext50_32x4d", "vgg11_bn", "vgg16_bn"}
ALL_CASES = {**CASES, **EXTRA_MODELS}


def op_summary(program):
    ops = []
    for op in program.global_block().ops:
        if op.type in ("feed", "fetch"):
            continue
        attrs = {}
        for n in sorted(op.attr_names):
            if n.startswith("op_") or n == "with_quant_attr":
                continue
            try:
                v = op.attr(n)
                json.dumps(v)
            except Exception:
                v = repr(v)
            attrs[n] = v
        ops.append({"type": op.type, "inputs": {k: op.input(k) for k in op.input_names},
                    "outputs": {k: op.output(k) for k in op.output_names}, "attrs": attrs})
    return ops


def persistables(program):
    return sorted(v.name for v in program.list_vars() if v.persistable and v.name not in ("feed", "fetch"))


def calibrate_batch_norms(exe, main, scope, feeds, seed):
    """Give every batch_norm running statistics near its input's: with the initialisers' Mean 0 / Variance 1,
    activations of deep random networks shrink to ~1e-17 (MobileNetV1) and a parity test compares noise.
    One batch_norm at a time, in program order: fetch its input (a pruned run), set Mean = the batch mean +
    0.1 std * noise, Variance = (the batch variance + 0.1 * its median) * U(0.5, 2) (so a kernel that used batch
    statistics instead would differ)."""
    rng = np.random.default_rng(seed)
    for op in main.global_block().ops:
        if op.type != "batch_norm":
            continue
        (xv,) = exe.run(main, feed=feeds, fetch_list=[op.input("X")[0]], use_prune=True)
        axis = xv.ndim - 1 if op.attr("data_layout") in ("NHWC", "NDHWC") else 1
        red = tuple(a for a in range(xv.ndim) if a != axis)
        mean, var = xv.mean(axis=red), xv.var(axis=red)
        mean = mean + 0.1 * np.sqrt(var) * rng.standard_normal(mean.shape)
        # floor: a channel with almost no spread (late 2x2 maps, batch 1) would divide by ~0 and amplify float32
        # rounding past 1e-4 (ShuffleNetV2-swish reached 3e-3 in float32 against float64, Paddle and kernelcore
        # alike)
        var = (var + 0.1 * np.median(var)) * rng.uniform(0.5, 2.0, var.shape)
        for slot, v in (("Mean", mean), ("Variance", var)):
            scope.find_var(op.input(slot)[0]).get_tensor().set(v.astype("float32"), paddle.CPUPlace())


def randomize_parameters(main, scope, seed):
    """Single-layer cases: batch_norm running statistics and norm gains/offsets away from their initial 0 / 1,
    which would hide a kernel that ignored them."""
    rng = np.random.default_rng(seed)
    for op in main.global_block().ops:
        if op.type not in ("batch_norm", "group_norm", "instance_norm", "layer_norm"):
            continue
        for slot, make in (("Mean", lambda n: rng.normal(0, 0.5, n)), ("Variance", lambda n: rng.uniform(0.5, 2, n)),
                           ("Scale", lambda n: rng.uniform(0.5, 1.5, n)), ("Bias", lambda n: rng.normal(0, 0.5, n))):
            if slot in op.input_names and op.input(slot):
                t = scope.find_var(op.input(slot)[0]).get_tensor()
                shape = np.array(t).shape
                t.set(make(shape).astype("float32"), paddle.CPUPlace())


def make_case(outdir, name, spec):
    make, shape = spec[0], spec[1]
    mode = spec[2] if len(spec) > 2 else "eval"
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    scope = paddle.static.Scope()
    prefix = os.path.join(outdir, name)
    feeds = {"x": randn(shape, abs(hash(name)) % 1000)}
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        paddle.seed(SEED)
        x = paddle.static.data("x", shape, "float32")
        layer = make()
        layer.train() if mode == "train" else layer.eval()
        y = layer(x)
        ys = list(y) if isinstance(y, (list, tuple)) else [y]  # GoogLeNet: (out, aux1, aux2)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        if mode == "eval" and name in CALIBRATE:
            calibrate_batch_norms(exe, main, scope, feeds, SEED)
        elif name in LAYERS:
            randomize_parameters(main, scope, SEED)
        pnames = persistables(main)
        init = {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}
        outs = exe.run(main, feed=feeds, fetch_list=ys)
        after = {n: np.array(scope.find_var(n).get_tensor()) for n in pnames}
        if mode == "eval":
            paddle.static.save_inference_model(prefix, [x], ys, exe, program=main)
    arrays = dict(feeds)
    for i, o in enumerate(outs):
        arrays[f"{'main_' if mode == 'eval' else ''}fetch_{i}"] = np.asarray(o)
    prog, feed_names, fetch_names = main, ["x"], [v.name for v in ys]  # eval: reference_pass() rereads the saved one
    if mode != "eval":
        with open(prefix + ".main.pb", "wb") as f:
            f.write(main.desc.serialize_to_string())
        for n in pnames:
            arrays[f"init/{n}"], arrays[f"after/{n}"] = init[n], after[n]
    np.savez(prefix + ".npz", **arrays)
    summary = op_summary(prog)
    meta = {"case": name, "mode": mode, "paddle_version": paddle.__version__, "feed_names": list(feed_names),
            "fetch_names": fetch_names, "fetch_shapes": [list(np.asarray(o).shape) for o in outs],
            "op_types": [op.type for op in prog.global_block().ops], "persistables": persistables(prog),
            "ops": summary}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name} [{paddle.__version__}]: {sorted({o['type'] for o in summary})}", flush=True)


def reference_pass(outdir, names):
    """Run every saved inference model as Paddle loads it and store its outputs as fetch_i.

    This runs in a fresh process: in the process that built and ran a main program, Paddle's executor reran
    DenseNet's *main* program (is_test=false batch norms) when given the reloaded one, so outputs taken there
    are not the saved program's."""
    for name in names:
        prefix = os.path.join(outdir, name)
        meta = json.load(open(prefix + ".json"))
        if meta["mode"] != "eval":
            continue
        arrays = dict(np.load(prefix + ".npz"))
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe = paddle.static.Executor(paddle.CPUPlace())
            prog, feed_names, fetch_targets = paddle.static.load_inference_model(prefix, exe)
            outs = exe.run(prog, feed={n: arrays[n] for n in feed_names}, fetch_list=fetch_targets)
        matches = True
        for i, o in enumerate(outs):
            arrays[f"fetch_{i}"] = np.asarray(o)
            matches &= bool(np.allclose(o, arrays[f"main_fetch_{i}"], rtol=1e-5, atol=1e-5))
        np.savez(prefix + ".npz", **arrays)
        meta.update(feed_names=list(feed_names), fetch_names=[v.name for v in fetch_targets],
                    op_types=[op.type for op in prog.global_block().ops], persistables=persistables(prog),
                    ops=op_summary(prog), main_matches_saved=matches)
        with open(prefix + ".json", "w") as f:
            json.dump(meta, f, indent=1)
        if not matches:
            print(f"{name}: the saved program's outputs differ from the main program's", flush=True)


class SmallCNN(nn.Layer):
    """conv -> batch norm -> relu -> max pool -> depthwise conv -> relu -> adaptive avg pool -> flatten -> linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2D(8)
        self.pool = nn.MaxPool2D(2, 2)
        self.dw = nn.Conv2D(8, 8, 3, padding=1, groups=8)
        self.gap = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = self.pool(F.relu(self.bn(self.conv(x))))
        h = self.gap(F.relu(self.dw(h)))
        return self.fc(paddle.flatten(h, 1))


def make_train_step(outdir, name, make_model, x_shape, classes, lr=0.1):
    """One Momentum step of make_model() on a fixed batch: <name>.main.pb / .startup.pb, .npz (x, label, loss,
    init/<persistable> after startup, after/<persistable> after the step), .json."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    scope = paddle.static.Scope()
    n = x_shape[0]
    with paddle.static.scope_guard(scope), paddle.static.program_guard(main, startup):
        paddle.utils.unique_name.switch()
        x = paddle.static.data("x", x_shape, "float32")
        label = paddle.static.data("label", [n, 1], "int64")
        model = make_model()
        model.train()
        loss = paddle.mean(F.cross_entropy(model(x), label))
        paddle.optimizer.Momentum(learning_rate=lr, momentum=0.9).minimize(loss, startup)
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        pnames = persistables(main)
        init = {p: np.array(scope.find_var(p).get_tensor()) for p in pnames}
        feeds = {"x": randn(x_shape, 5), "label": np.random.default_rng(6).integers(0, classes, (n, 1))}
        (loss_v,) = exe.run(main, feed=feeds, fetch_list=[loss])
        after = {p: np.array(scope.find_var(p).get_tensor()) for p in pnames}
    prefix = os.path.join(outdir, name)
    with open(prefix + ".main.pb", "wb") as f:
        f.write(main.desc.serialize_to_string())
    with open(prefix + ".startup.pb", "wb") as f:
        f.write(startup.desc.serialize_to_string())
    arrays = dict(feeds, loss=np.asarray(loss_v))
    for p in pnames:
        arrays[f"init/{p}"], arrays[f"after/{p}"] = init[p], after[p]
    np.savez(prefix + ".npz", **arrays)
    meta = {"case": name, "mode": "train_step", "paddle_version": paddle.__version__, "feed_names": ["x", "label"],
            "loss_name": loss.name, "parameters": sorted(p.name for p in main.all_parameters()),
            "op_types": [op.type for op in main.global_block().ops], "persistables": pnames,
            "ops": op_summary(main)}
    with open(prefix + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name} [{paddle.__version__}]: {sorted({o['type'] for o in meta['ops']})}", flush=True)


def make_train_cnn(outdir, name="train_cnn"):
    """One Momentum step of SmallCNN on a fixed [4, 3, 8, 8] batch (tests/test_paddle_vision.py)."""
    make_train_step(outdir, name, SmallCNN, [4, 3, 8, 8], 5)


TRAIN_STEPS = {"train_cnn": make_train_cnn}
# Built only when named (bench/cnn_train.py): the training benchmark's shapes.
EXTRA_TRAIN_STEPS = {
    "train_cnn_b32": lambda outdir: make_train_step(outdir, "train_cnn_b32", SmallCNN, [32, 3, 32, 32], 5),
    "train_resnet18_b8": lambda outdir: make_train_step(
        outdir, "train_resnet18_b8", _vision("resnet18", num_classes=10), [8, 3, 64, 64], 10, lr=0.01),
    "train_mobilenet_v2_b8": lambda outdir: make_train_step(
        outdir, "train_mobilenet_v2_b8", _without_dropout(_vision("mobilenet_v2", num_classes=10)), [8, 3, 64, 64],
        10, lr=0.01),
}


def _without_dropout(make_model):
    """make_model() with its Dropout layers at p = 0: another framework's step can then give the same loss and
    parameters (no two frameworks draw the same masks); the dropout ops stay in the program."""
    def make():
        model = make_model()
        for layer in model.sublayers():
            if isinstance(layer, paddle.nn.Dropout):
                layer.p = 0.0
        return model
    return make


# ---------------------------------------------------------------------------------------------------------------
# --constructors: the inference program of every public model constructor, without parameters
# ---------------------------------------------------------------------------------------------------------------
def constructors():
    """Every public model constructor of paddle.vision.models, as (name, callable), in __all__ order: each
    factory function (resnet18, vgg16, ...) and each model class that no factory stands for (LeNet). The classes
    the factories return (ResNet, VGG, ...) are those factories with fixed arguments, and some cannot be called
    without arguments (ResNet needs a block type, VGG its features). A factory stands for a class when its
    return annotation names it (3.x) or its name begins with the class's name, lower-cased without underscores
    (2.6.2 has no annotations: MobileNetV3Small -> mobilenet_v3_small, DenseNet -> densenet121)."""
    import inspect
    from paddle.vision import models as M
    names = list(M.__all__)
    funcs = [n for n in names if inspect.isfunction(getattr(M, n))]
    returned = set()
    for n in funcs:
        ann = inspect.signature(getattr(M, n)).return_annotation
        returned.add(ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)))
    squashed = [f.replace("_", "").lower() for f in funcs]

    def stood_for(cls):
        return cls in returned or any(f.startswith(cls.lower()) for f in squashed)

    classes = [n for n in names if inspect.isclass(getattr(M, n)) and issubclass(getattr(M, n), nn.Layer)
               and not stood_for(n)]
    return [(n, getattr(M, n)) for n in names if n in funcs or n in classes]


def constructor_input_shape(name):
    """Batch 1 at the size the model was designed for (AlexNet's and GoogLeNet's classifiers need 224x224)."""
    return [1, 1, 28, 28] if name == "LeNet" else [1, 3, 224, 224]


def make_constructor_programs(outdir, only=()):
    """Build (not run) each constructor's eval-mode model on a `paddle.static.data` input and write the program
    save_inference_model would write (normalize_program: pruned to the outputs, feed/fetch ops, is_test set;
    extra attrs clipped) as <name>.pdmodel, with no parameters. constructors.json holds, per constructor, the
    input shape, fetch names, op-type counts, op count and parameter count/bytes (what a .pdiparams would hold);
    the union of op types; the time taken; and any constructor that failed to build, with its error."""
    import time
    t_all = time.perf_counter()
    summary = {"paddle_version": paddle.__version__, "constructors": {}, "failed": {}}
    for name, ctor in constructors():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            main, startup = paddle.static.Program(), paddle.static.Program()
            with paddle.static.program_guard(main, startup):
                paddle.utils.unique_name.switch()
                shape = constructor_input_shape(name)
                x = paddle.static.data("x", shape, "float32")
                model = ctor()
                model.eval()
                y = model(x)
            ys = list(y) if isinstance(y, (list, tuple)) else [y]  # GoogLeNet returns (out, aux1, aux2)
            prog = paddle.static.normalize_program(main, [x], ys)
            prog = prog._remove_training_info(clip_extra=True)  # what save_inference_model does
            data = prog.desc.serialize_to_string()
        except Exception as e:
            summary["failed"][name] = f"{type(e).__name__}: {str(e)[-800:]}"
            print(f"{name}: FAILED {summary['failed'][name][:200]}", flush=True)
            continue
        with open(os.path.join(outdir, name + ".pdmodel"), "wb") as f:
            f.write(data)
        counts = {}
        for op in prog.global_block().ops:
            counts[op.type] = counts.get(op.type, 0) + 1
        params = [v for v in prog.list_vars() if v.persistable and v.name not in ("feed", "fetch")]
        n_params = int(sum(np.prod(v.shape) for v in params))
        # what the fetch ops read (2.6.2's normalize_program puts a save_infer_model/scale_* op after each output)
        fetched = sorted((op.attr("col"), op.input("X")[0]) for op in prog.global_block().ops if op.type == "fetch")
        fetched = [prog.global_block().var(n) for _, n in fetched]
        summary["constructors"][name] = {
            "input_shape": shape, "fetch_names": [v.name for v in fetched],
            "fetch_shapes": [list(v.shape) for v in fetched], "n_ops": sum(counts.values()),
            "op_types": dict(sorted(counts.items())), "n_parameters": n_params, "parameter_bytes": 4 * n_params,
            "program_bytes": len(data), "seconds": round(time.perf_counter() - t0, 3)}
        print(f"{name}: {sum(counts.values())} ops, {n_params / 1e6:.1f}M parameters, "
              f"{time.perf_counter() - t0:.2f} s", flush=True)
    summary["op_types"] = sorted({t for c in summary["constructors"].values() for t in c["op_types"]})
    summary["seconds"] = round(time.perf_counter() - t_all, 2)
    with open(os.path.join(outdir, "constructors.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{len(summary['constructors'])} constructors in {summary['seconds']} s; op types: "
          f"{summary['op_types']}", flush=True)
    return summary


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if len(args) < 1:
        print(__doc__)
        return 2
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    if "--constructors" in argv:
        summary = make_constructor_programs(outdir, args[1:])
        return 1 if summary["failed"] else 0
    names = args[1:] or list(ALL_CASES if "--all" in argv else CASES) + list(TRAIN_STEPS)
    if "--reference" in argv:
        reference_pass(outdir, names)
        return 0
    if "--failed" in argv:
        ok, failed = set(), set()
        for m in glob.glob(os.path.join(outdir, "manifest-*.json")):
            d = json.load(open(m))
            ok |= set(d["ok"])
            failed |= set(d["failed"])
        names = [n for n in names if n in failed - ok]
    manifest = {"ok": [], "failed": {}}
    for name in names:
        try:
            if name in TRAIN_STEPS or name in EXTRA_TRAIN_STEPS:
                {**TRAIN_STEPS, **EXTRA_TRAIN_STEPS}[name](outdir)
            else:
                make_case(outdir, name, ALL_CASES[name])
            manifest["ok"].append(name)
        except Exception as e:  # recorded; a second Paddle version may build it
            manifest["failed"][name] = f"{type(e).__name__}: {str(e)[-800:]}"
            print(f"{name} [{paddle.__version__}]: FAILED {manifest['failed'][name][:200]}", flush=True)
    with open(os.path.join(outdir, f"manifest-{paddle.__version__}.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    evals = [n for n in manifest["ok"] if n not in TRAIN_STEPS and n not in EXTRA_TRAIN_STEPS]
    if evals:
        import subprocess
        subprocess.run([sys.executable, os.path.abspath(__file__), outdir, *evals, "--reference"], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
