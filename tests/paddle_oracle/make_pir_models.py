"""Paddle 3 writes PIR programs (`.json` + `.pdiparams`) with its defaults; this script has it write some.

    make_pir_models.py OUTDIR [CASE ...]

For each case: `paddle.jit.save(layer, OUTDIR/<case>, input_spec=...)` with Paddle's default (PIR) API, then
Paddle Inference's CPU predictor runs the saved files on a fixed random feed. Written per case:
  <case>.json, <case>.pdiparams   what Paddle saved
  <case>.npz                      the feeds under their names, the predictor's outputs as fetch_0, fetch_1, ...
  <case>.meta.json                feed names, fetch names (the predictor's output names), Paddle's version
and once, `signatures.json`: for every op type in the saved programs, the operand, attribute and result names
Paddle's runtime reports for it (`Operation.get_input_names()` etc., from Paddle's op YAML), so kernelcore's
table of PIR ops is checked against Paddle rather than written from memory. `manifest.json` lists what failed.
"""
import json
import os
import sys
import traceback

if os.environ.get("PYTHONHASHSEED") != "0":  # parameter names come from dict order in places: pin it
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, *sys.argv])
os.environ.pop("FLAGS_enable_pir_api", None)  # Paddle 3's default: PIR

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle.static import InputSpec  # noqa: E402


class MLP(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = paddle.nn.Linear(13, 16), paddle.nn.Linear(16, 10)

    def forward(self, x):
        return paddle.nn.functional.softmax(self.fc2(paddle.tanh(self.fc1(x))))


class Ops(paddle.nn.Layer):
    """A handful of everyday tensor ops beyond the CNN zoo's."""

    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([6, 4])

    def forward(self, x):
        h = paddle.matmul(x, self.w)                        # [2, 6] @ [6, 4]
        h = paddle.nn.functional.gelu(h) * 2.0 + 1.0
        h = paddle.concat([h, paddle.exp(-h)], axis=1)       # [2, 8]
        h = paddle.reshape(h, [2, 2, 4])
        h = paddle.transpose(h, [0, 2, 1])
        s = paddle.sum(h, axis=-1)
        m = paddle.mean(h)
        return paddle.nn.functional.sigmoid(s) - m, paddle.max(h, axis=1)


class MoreOps(paddle.nn.Layer):
    """Every other op kernelcore's PIR table maps, so each row is checked against Paddle's own signature."""

    def __init__(self):
        super().__init__()
        self.norm = paddle.nn.LayerNorm(8)

    def forward(self, x):
        F = paddle.nn.functional
        a = paddle.abs(x) + 0.5
        h = paddle.sqrt(a) * paddle.rsqrt(a) / (paddle.log(a) + 2.0)
        h = paddle.maximum(h, F.silu(x)) + paddle.pow(a, paddle.full([1], 1.5))
        h = F.leaky_relu(h, 0.1) + F.elu(x, 0.7) + F.hardswish(x) + F.hardsigmoid(x) + F.swish(x)
        h = self.norm(h)
        p, q = paddle.split(h, 2, axis=1)
        r = paddle.nn.functional.relu6(p) + paddle.assign(q)
        u, v = paddle.split(h, [3, 5], axis=1)
        flags = (paddle.cast(x > 0, "float32") + paddle.cast(x < 0.5, "float32")
                 + paddle.cast(paddle.equal(x, x), "float32"))
        return paddle.cast(r, "float64"), flags, paddle.sum(u, axis=1) - paddle.sum(v, axis=1)


class BertLike(paddle.nn.Layer):
    """Token and position embeddings, a GELU Transformer encoder layer, a pooled first token."""

    def __init__(self):
        super().__init__()
        self.emb, self.pos = paddle.nn.Embedding(100, 16), paddle.nn.Embedding(10, 16)
        layer = paddle.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, activation="gelu")
        self.enc, self.norm = paddle.nn.TransformerEncoder(layer, 1), paddle.nn.LayerNorm(16)

    def forward(self, ids):
        pos = paddle.arange(ids.shape[1]).unsqueeze(0)
        h = self.enc(self.norm(self.emb(ids) + self.pos(pos)))
        return paddle.tanh(h[:, 0])


class IfWhile(paddle.nn.Layer):
    """Python `if` and `while` on tensor values: dy2static writes pd_op.if and pd_op.while."""

    def forward(self, x):
        if paddle.mean(x) > 0:
            y = x * 2.0
        else:
            y = paddle.tanh(x) - 1.0
        i = paddle.zeros([1], "int64")
        while i < 3:
            y = y * 0.5 + paddle.tanh(y)
            i = i + 1
        return y, i


class DBDetector(paddle.nn.Layer):
    """An OCR text detector in the DB style (PP-OCR's det): a small conv backbone, an FPN neck (nearest
    upsampling, adds, a concat of the levels) and the DB head (conv, batch norm, two transposed convs, sigmoid)."""

    def __init__(self):
        super().__init__()
        nn = paddle.nn

        def stage(cin, cout, stride):
            return nn.Sequential(nn.Conv2D(cin, cout, 3, stride, 1, bias_attr=False), nn.BatchNorm2D(cout),
                                 nn.Hardswish())
        self.c1, self.c2, self.c3 = stage(3, 8, 2), stage(8, 16, 2), stage(16, 32, 2)
        self.lat2, self.lat3 = nn.Conv2D(16, 16, 1), nn.Conv2D(32, 16, 1)
        self.out2, self.out3 = nn.Conv2D(16, 8, 3, padding=1), nn.Conv2D(16, 8, 3, padding=1)
        self.head = nn.Sequential(nn.Conv2D(16, 8, 3, padding=1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU(),
                                  nn.Conv2DTranspose(8, 8, 2, 2), nn.BatchNorm2D(8), nn.ReLU(),
                                  nn.Conv2DTranspose(8, 1, 2, 2))

    def forward(self, x):
        F = paddle.nn.functional
        f2 = self.c2(self.c1(x))
        f3 = self.c3(f2)
        p3 = self.lat3(f3)
        p2 = self.lat2(f2) + F.interpolate(p3, scale_factor=2, mode="nearest")
        up3 = F.interpolate(self.out3(p3), scale_factor=2, mode="bilinear", align_corners=False)
        fuse = paddle.concat([self.out2(p2), up3], axis=1)
        return F.sigmoid(self.head(fuse))


class SVTRRecognizer(paddle.nn.Layer):
    """An OCR text recognizer in the SVTR style (PP-OCR's rec): a conv patch embedding, global mixing blocks
    (multi-head self-attention and an MLP, pre-norm), a height pool and a CTC head (softmax over the characters)."""

    def __init__(self, dim=32, heads=4, classes=40):
        super().__init__()
        nn = paddle.nn
        self.embed = nn.Sequential(nn.Conv2D(3, dim // 2, 3, 2, 1), nn.BatchNorm2D(dim // 2), nn.GELU(),
                                   nn.Conv2D(dim // 2, dim, 3, 2, 1), nn.BatchNorm2D(dim), nn.GELU())
        self.heads = heads
        self.norm1, self.norm2, self.norm = nn.LayerNorm(dim), nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.ctc = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.embed(x)                                   # [N, C, H/4, W/4]
        n, c, hh, ww = h.shape
        t = h.flatten(2).transpose([0, 2, 1])               # [N, L, C]
        q, k, v = paddle.split(self.qkv(self.norm1(t)), 3, axis=-1)
        split = lambda z: z.reshape([0, -1, self.heads, c // self.heads]).transpose([0, 2, 1, 3])  # noqa: E731
        scale = (c // self.heads) ** -0.5
        att = paddle.nn.functional.softmax(paddle.matmul(split(q), split(k), transpose_y=True) * scale)
        o = paddle.matmul(att, split(v)).transpose([0, 2, 1, 3]).reshape([0, -1, c])
        t = t + self.proj(o)
        t = t + self.mlp(self.norm2(t))
        t = self.norm(t).transpose([0, 2, 1]).reshape([0, c, hh, ww])
        seq = paddle.nn.functional.adaptive_avg_pool2d(t, [1, ww]).squeeze(2).transpose([0, 2, 1])  # [N, W/4, C]
        return paddle.nn.functional.softmax(self.ctc(seq), axis=-1)


def _encoder():
    return paddle.nn.TransformerEncoder(paddle.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), 2)


def _vision(name, **kw):
    import paddle.vision.models as M
    return getattr(M, name)(**kw)


class DetectionOps(paddle.nn.Layer):
    """A YOLO head decoded and suppressed (yolo_box, matrix_nms, nms by score), SSD anchors (prior_box, box_coder),
    RoIAlign, and a Swin window's roll and relative-position gather (index_select). The image sizes, ROIs and
    bias index are buffers, as a detector or a Swin block holds them. conf_thresh 0 keeps every box, so no two
    scores tie in the argsort before nms (Paddle leaves the order of ties to its sort)."""

    def __init__(self):
        super().__init__()
        self.head = paddle.nn.Conv2D(8, 2 * (5 + 3), 3, stride=2, padding=1)
        self.register_buffer("img_size", paddle.to_tensor([[64, 80], [48, 64]], dtype="int32"))
        self.register_buffer("rois", paddle.to_tensor([[2.0, 3.0, 20.0, 25.0], [0.0, 0.0, 30.0, 31.0],
                                                       [5.5, 1.2, 9.1, 4.0]]))
        self.register_buffer("rois_num", paddle.to_tensor([1, 2], dtype="int32"))
        self.register_buffer("rel_index", paddle.to_tensor([3, 0, 0, 2, 7], dtype="int64"))

    def forward(self, x):
        boxes, scores = paddle.vision.ops.yolo_box(self.head(x), self.img_size, anchors=[10, 13, 16, 30],
                                                   class_num=3, conf_thresh=0.0, downsample_ratio=8)
        out, count, index = paddle.vision.ops.matrix_nms(
            boxes, paddle.transpose(scores, [0, 2, 1]), 0.2, 0.1, 40, 10, use_gaussian=True, normalized=False,
            return_index=True, return_rois_num=True)
        keep = paddle.vision.ops.nms(boxes[0], 0.4, scores=paddle.max(scores[0], axis=1))
        priors, var = paddle.vision.ops.prior_box(x, x, min_sizes=[4.0], max_sizes=[9.0], aspect_ratios=[2.0],
                                                  flip=True, clip=True)
        decoded = paddle.vision.ops.box_coder(priors.reshape([-1, 4]), var.reshape([-1, 4]),
                                              scores[:, :, :1].tile([1, 8, 4]), code_type="decode_center_size")
        rois = paddle.vision.ops.roi_align(x, self.rois, self.rois_num, output_size=(3, 2), spatial_scale=0.5,
                                           sampling_ratio=-1, aligned=True)
        window = paddle.index_select(paddle.roll(x, shifts=[-2, 1], axis=[2, 3]), self.rel_index, axis=1)
        return boxes, scores, out, index, count, keep, decoded, rois, window


CASES = {
    "mlp": (MLP, [InputSpec([None, 13], "float32", "x")], [(8, 13)]),
    "ops": (Ops, [InputSpec([2, 6], "float32", "x")], [(2, 6)]),
    "more_ops": (MoreOps, [InputSpec([4, 8], "float32", "x")], [(4, 8)]),
    "encoder": (_encoder, [InputSpec([None, 5, 16], "float32", "src")], [(2, 5, 16)]),
    "bert_like": (BertLike, [InputSpec([None, 6], "int64", "ids")], [(2, 6)]),
    "lstm": (lambda: paddle.nn.LSTM(8, 16, 2), [InputSpec([None, 5, 8], "float32", "x")], [(3, 5, 8)]),
    "gru": (lambda: paddle.nn.GRU(8, 16, direction="bidirect"), [InputSpec([None, 5, 8], "float32", "x")],
            [(3, 5, 8)]),
    # the same program twice: a feed that takes the true branch, then one that takes the false branch
    "if_while_true": (IfWhile, [InputSpec([2, 3], "float32", "x")], [(2, 3)], 3.0),
    "if_while_false": (IfWhile, [InputSpec([2, 3], "float32", "x")], [(2, 3)], -3.0),
    "ocr_det_db": (DBDetector, [InputSpec([None, 3, 64, 64], "float32", "x")], [(1, 3, 64, 64)]),
    "ocr_rec_svtr": (SVTRRecognizer, [InputSpec([None, 3, 32, 128], "float32", "x")], [(2, 3, 32, 128)]),
    "lenet": (lambda: _vision("LeNet"), [InputSpec([None, 1, 28, 28], "float32", "x")], [(2, 1, 28, 28)]),
    "detection_ops": (DetectionOps, [InputSpec([2, 8, 16, 16], "float32", "x")], [(2, 8, 16, 16)]),
}
# paddle.vision's model families at small inputs (the classifier heads sized down where they would dominate)
ZOO = {
    "resnet18": dict(), "resnext50_32x4d": dict(num_classes=10), "mobilenet_v1": dict(scale=0.5),
    "mobilenet_v2": dict(scale=0.5), "mobilenet_v3_small": dict(num_classes=10),
    "mobilenet_v3_large": dict(num_classes=10), "squeezenet1_0": dict(num_classes=10),
    "shufflenet_v2_x0_25": dict(num_classes=10), "shufflenet_v2_swish": dict(num_classes=10),
    "densenet121": dict(num_classes=10), "vgg11_bn": dict(num_classes=0, batch_norm=True),
    "alexnet": dict(num_classes=10),
}
for _name, _kw in ZOO.items():
    _size = 224 if _name == "alexnet" else 64
    _ctor = _name.removesuffix("_bn")
    CASES[_name] = (lambda n=_ctor, kw=_kw: _vision(n, **kw), [InputSpec([None, 3, _size, _size], "float32", "x")],
                    [(1, 3, _size, _size)])
# bench/pir_models.py only: full-size models at 224x224, batch 1, as a deployed classifier runs them (no test reads
# these; they take longer to write and to run than the cases above)
for _name in ("resnet18", "mobilenet_v3_large", "densenet121"):
    CASES[f"bench_{_name}_224"] = (lambda n=_name: _vision(n), [InputSpec([None, 3, 224, 224], "float32", "x")],
                                   [(1, 3, 224, 224)])


def save_static_cnn(prefix):
    """The static-graph way in PIR mode: paddle.static layers in a program, `save_inference_model` (it writes .json
    too in Paddle 3). Returns the InputSpec-like (name, dtype) and feed shape."""
    paddle.enable_static()
    try:
        main_prog, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_prog, startup):
            x = paddle.static.data("img", [None, 3, 16, 16], "float32")
            h = paddle.nn.functional.relu(paddle.nn.Conv2D(3, 4, 3, padding=1)(x))  # static.nn.conv2d: legacy only
            h = paddle.nn.functional.max_pool2d(h, 2)
            out = paddle.nn.functional.softmax(paddle.nn.Linear(4 * 8 * 8, 5)(paddle.flatten(h, 1)))
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        paddle.static.save_inference_model(prefix, [x], [out], exe, program=main_prog)
    finally:
        paddle.disable_static()
    return [paddle.static.InputSpec([None, 3, 16, 16], "float32", "img")], [(2, 3, 16, 16)]


STATIC_CASES = {"static_cnn": save_static_cnn}


def _feed(rng, spec, shape):
    if spec.dtype == paddle.int64:
        return rng.integers(0, 10, shape).astype("int64")
    return rng.standard_normal(shape).astype("float32")


def calibrate_batch_norms(layer, spec, shapes):
    """Running statistics near the activations' own, so outputs keep a useful scale through deep stacks (with the
    initial mean 0 / variance 1 a deep network's output shrinks toward 0, and a comparison to it says little)."""
    norms = [m for m in layer.sublayers() if isinstance(m, paddle.nn.layer.norm._BatchNormBase)]
    if not norms or spec[0].dtype != paddle.float32:
        return
    for m in norms:
        m._momentum = 0.0  # each training pass sets the running statistics to that batch's
    rng = np.random.default_rng(1)
    x = paddle.to_tensor(rng.standard_normal((4, *shapes[0][1:])).astype("float32"))
    layer.train()
    with paddle.no_grad():
        layer(x)


def predict(prefix, feeds):
    from paddle import inference
    config = inference.Config(prefix + ".json", prefix + ".pdiparams")
    config.disable_gpu()
    config.switch_ir_optim(False)  # the program as saved, op for op
    config.disable_mkldnn()
    pred = inference.create_predictor(config)
    for name, arr in feeds.items():
        pred.get_input_handle(name).copy_from_cpu(arr)
    pred.run()
    names = pred.get_output_names()
    return names, [pred.get_output_handle(n).copy_to_cpu() for n in names]


def signatures(prefix, table):
    paddle.enable_static()
    try:
        exe = paddle.static.Executor(paddle.CPUPlace())
        prog, _feeds, _fetches = paddle.static.load_inference_model(prefix, exe)
        for block in [prog.global_block()]:
            for op in block.ops:
                name = op.name()
                if name in table:
                    continue
                try:
                    table[name] = {"inputs": op.get_input_names(), "attrs": op.get_attr_names(),
                                   "outputs": op.get_output_names()}
                except Exception:  # builtin ops have no YAML: their shape is fixed by PIR itself
                    table[name] = None
    finally:
        paddle.disable_static()


def main(out, only):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    failed, table = {}, {}
    for case in [*CASES, *STATIC_CASES]:
        if only and case not in only:
            continue
        try:
            paddle.seed(0)
            prefix = os.path.join(out, case)
            offset = ()
            if case in STATIC_CASES:
                spec, shapes = STATIC_CASES[case](prefix)
            else:
                make, spec, shapes, *offset = CASES[case]
                layer = make()
                calibrate_batch_norms(layer, spec, shapes)
                layer.eval()
                paddle.jit.save(layer, prefix, input_spec=spec)
            feeds = {s.name: _feed(rng, s, shape) + sum(offset) for s, shape in zip(spec, shapes)}
            names, outs = predict(prefix, feeds)
            np.savez(prefix + ".npz", **feeds, **{f"fetch_{i}": o for i, o in enumerate(outs)})
            with open(prefix + ".meta.json", "w") as f:
                json.dump({"feed_names": [s.name for s in spec], "fetch_names": names,
                           "paddle": paddle.__version__}, f, indent=1)
            signatures(prefix, table)
        except Exception:
            failed[case] = traceback.format_exc()[-3000:]
    with open(os.path.join(out, "signatures.json"), "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "failed": failed}, f, indent=1)
    for case, tb in failed.items():
        print(f"{case}: FAILED\n{tb}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], set(sys.argv[2:]))
