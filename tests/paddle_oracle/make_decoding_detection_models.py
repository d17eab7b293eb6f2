"""Make PaddlePaddle write the programs of issue 33 that stopped at load: a beam-search decoder
(nn.BeamSearchDecoder + nn.dynamic_decode: tensor arrays inside a while, gather_tree), a training step with
ClipGradByGlobalNorm, AdamW and a learning-rate scheduler, YOLO-style heads with NMS (multiclass_nms3,
matrix_nms, nms), and a Swin block (shifted windows: roll, the relative position bias, the shift mask).

Run with a Paddle venv's python (2.6.2, or 3.3.1 in legacy-IR mode):

    .venv-paddle2/bin/python tests/paddle_oracle/make_decoding_detection_models.py OUTDIR

For every inference case <case> it writes into OUTDIR:
    <case>.pdmodel / <case>.pdiparams   paddle.static.save_inference_model (feed/fetch ops included)
    <case>.npz      the feeds (keys = feed names) and Paddle's outputs fetch_0, fetch_1, ...
    <case>.json     feed/fetch names and the op types per block of the saved program
The training cases `train_clip_adamw` (ClipGradByGlobalNorm + AdamW) and `train_clip_norm` (ClipGradByNorm +
Adam) write <case>.main.pb / .startup.pb (serialized ProgramDescs), <case>.npz (per step k: feeds `x/k`,
`y/k`, the learning rate `lr/k` the scheduler gave, `loss/k`, and `init/<param>`, `after<k>/<param>` for every
parameter) and <case>.json (the lr variable's name).
`index.json` lists the cases written and, with the reason, any this Paddle could not build.
"""

from __future__ import annotations

import json
import os
import sys
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")  # must precede `import paddle`
warnings.filterwarnings("ignore")

# Paddle's control-flow builders collect var names in Python sets: pin the hash seed so the bytes repeat.
if os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)

import numpy as np  # noqa: E402
import paddle  # noqa: E402
from paddle import nn  # noqa: E402
from static_case import save_inference_case  # noqa: E402

paddle.enable_static()
SEED = 20261129
TRAIN_STEPS = 4


def op_types(program):
    return [[op.type for op in b.ops] for b in program.blocks]


def save_case(outdir, name, build):
    _, saved, meta = save_inference_case(outdir, name, build, SEED)
    meta["op_types"] = op_types(saved)
    with open(os.path.join(outdir, name) + ".json", "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


# -- beam search ---------------------------------------------------------------------------------------------
BEAM, VOCAB, HID, MAX_STEPS = 3, 12, 8, 7


def build_beam_search():
    """A GRU decoder (embedding -> GRUCell -> linear over the vocabulary) decoded by beam search from the mean
    of an encoder output; end token 1 so that some beams finish early."""
    enc = paddle.static.data("enc", [-1, 5, HID], "float32")
    emb = nn.Embedding(VOCAB, HID)
    out = nn.Linear(HID, VOCAB)
    cell = nn.GRUCell(HID, HID)
    decoder = nn.BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=BEAM, embedding_fn=emb,
                                   output_fn=out)
    init = paddle.mean(enc, axis=1)
    outputs, _ = nn.dynamic_decode(decoder, inits=init, max_step_num=MAX_STEPS)
    feeds = {"enc": np.random.default_rng(3).standard_normal((2, 5, HID)).astype("float32")}
    return ["enc"], [outputs], feeds


# -- a training step: ClipGradByGlobalNorm, AdamW, a scheduler --------------------------------------------
def _optimizer(kind):
    """`adamw`: ClipGradByGlobalNorm + AdamW under a warmed-up cosine schedule (a Transformer's); `norm`:
    ClipGradByNorm (each gradient by itself) + Adam under a step decay. Both clip norms are small, so the clip
    scales every step's gradients."""
    if kind == "adamw":
        sched = paddle.optimizer.lr.LinearWarmup(
            paddle.optimizer.lr.CosineAnnealingDecay(0.05, T_max=10), warmup_steps=2, start_lr=0.01, end_lr=0.05)
        return sched, paddle.optimizer.AdamW(sched, weight_decay=0.02, grad_clip=nn.ClipGradByGlobalNorm(0.1))
    sched = paddle.optimizer.lr.StepDecay(0.05, step_size=1, gamma=0.5)
    return sched, paddle.optimizer.Adam(sched, grad_clip=nn.ClipGradByNorm(0.05))


def make_train_clip(outdir, kind):
    name = f"train_clip_{kind}"
    paddle.seed(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [-1, 6], "float32")
        y = paddle.static.data("y", [-1, 1], "int64")
        net = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))
        loss = nn.functional.cross_entropy(net(x), y)
        sched, opt = _optimizer(kind)
        opt.minimize(loss)
        lr_name = opt._global_learning_rate().name  # the persistable variable the executor sets each run
    params = [p.name for p in main.all_parameters()]
    rng = np.random.default_rng(4)
    exe = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    arrays = {}
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for n in params:
            arrays[f"init/{n}"] = np.array(scope.find_var(n).get_tensor())
        for k in range(TRAIN_STEPS):
            feeds = {"x": rng.standard_normal((8, 6)).astype("float32"),
                     "y": rng.integers(0, 4, (8, 1)).astype("int64")}
            arrays[f"lr/{k}"] = np.float32(sched())
            (loss_v,) = exe.run(main, feed=feeds, fetch_list=[loss])
            sched.step()
            arrays[f"x/{k}"], arrays[f"y/{k}"] = feeds["x"], feeds["y"]
            arrays[f"loss/{k}"] = np.asarray(loss_v)
            for n in params:
                arrays[f"after{k}/{n}"] = np.array(scope.find_var(n).get_tensor())
    np.savez(os.path.join(outdir, name + ".npz"), **arrays)
    for what, prog in (("main", main), ("startup", startup)):
        with open(os.path.join(outdir, f"{name}.{what}.pb"), "wb") as f:
            f.write(prog.desc.serialize_to_string())
    meta = {"paddle": paddle.__version__, "feed_names": ["x", "y"], "loss": loss.name, "lr_var": lr_name,
            "params": params, "steps": TRAIN_STEPS, "op_types": op_types(main)}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)


# -- a YOLO-style head with NMS --------------------------------------------------------------------------------
ANCHORS, CLASSES = [10, 13, 16, 30, 33, 23], 3


def _multiclass_nms3(bboxes, scores, **attrs):
    """paddle.vision.ops has no multiclass_nms in 2.6; PaddleDetection appends the op itself, as here."""
    from paddle.base.layer_helper import LayerHelper
    helper = LayerHelper("multiclass_nms3")
    out = helper.create_variable_for_type_inference(bboxes.dtype)
    index = helper.create_variable_for_type_inference("int32")
    count = helper.create_variable_for_type_inference("int32")
    helper.append_op(type="multiclass_nms3", inputs={"BBoxes": bboxes, "Scores": scores}, attrs=attrs,
                     outputs={"Out": out, "Index": index, "NmsRoisNum": count})
    return out, index, count


def build_yolo_head(variant):
    """conv -> yolo_box -> NMS over two images of different sizes. `nms`: clipped pixel boxes and
    multiclass_nms3 (normalized=false, eta < 1); `matrix`: an iou-aware head with scale_x_y, unclipped boxes,
    matrix_nms with gaussian decay; `plain`: paddle.vision.ops.nms over image 0's best class."""
    x = paddle.static.data("x", [2, 8, 16, 16], "float32")
    img = paddle.static.data("img_size", [2, 2], "int32")
    iou_aware = variant == "matrix"
    a = len(ANCHORS) // 2
    head = nn.Conv2D(8, a * (5 + CLASSES) + (a if iou_aware else 0), 3, stride=2, padding=1)
    boxes, scores = paddle.vision.ops.yolo_box(
        # plain: every box kept (conf_thresh 0), so no two scores tie in argsort, which Paddle leaves unstable
        head(x), img, anchors=ANCHORS, class_num=CLASSES, conf_thresh=0.0 if variant == "plain" else 0.45,
        downsample_ratio=8,
        clip_bbox=variant != "matrix", scale_x_y=1.05 if iou_aware else 1.0, iou_aware=iou_aware,
        iou_aware_factor=0.4)
    per_class = paddle.transpose(scores, [0, 2, 1])
    if variant == "nms":
        outs = _multiclass_nms3(boxes, per_class, background_label=0, score_threshold=0.2, nms_top_k=40,
                                keep_top_k=12, nms_threshold=0.45, nms_eta=0.9, normalized=False)
    elif variant == "matrix":
        out, count, index = paddle.vision.ops.matrix_nms(
            boxes, per_class, score_threshold=0.2, post_threshold=0.15, nms_top_k=40, keep_top_k=10,
            use_gaussian=True, gaussian_sigma=2.0, background_label=-1, normalized=False, return_index=True,
            return_rois_num=True)
        outs = (out, index, count)
    else:
        outs = (paddle.vision.ops.nms(boxes[0], 0.4, scores=paddle.max(scores[0], axis=1)),)
    feeds = {"x": np.random.default_rng(5).standard_normal((2, 8, 16, 16)).astype("float32"),
             "img_size": np.array([[64, 80], [48, 64]], dtype="int32")}
    return ["x", "img_size"], [boxes, scores, *outs], feeds


# -- SSD-style anchors and RoIAlign ----------------------------------------------------------------------------
def build_anchor_heads(variant):
    """`ssd`: prior_box over a conv feature map, box_coder decoding the head's deltas against those priors (pixel
    boxes, variances from PriorBoxVar) and encoding given boxes against them (normalized, a variance attribute).
    `roi_align`: RoIAlign of ROIs over a two-image feature map, aligned and not, adaptive and fixed sampling."""
    x = paddle.static.data("x", [2, 3, 32, 40], "float32")
    feat = nn.Conv2D(3, 6, 3, stride=4, padding=1)(x)  # [2, 6, 8, 10]
    feeds = {"x": np.random.default_rng(7).standard_normal((2, 3, 32, 40)).astype("float32")}
    if variant == "ssd":
        boxes, variances = paddle.vision.ops.prior_box(
            feat, x, min_sizes=[6.0, 12.0], max_sizes=[9.0, 20.0], aspect_ratios=[2.0, 3.0], flip=True,
            clip=True, steps=[4.0, 4.0], offset=0.5, min_max_aspect_ratios_order=variant == "ssd")
        priors, prior_var = boxes.reshape([-1, 4]), variances.reshape([-1, 4])
        n_priors = priors.shape[0]
        deltas = paddle.static.data("deltas", [2, n_priors, 4], "float32")
        decoded = paddle.vision.ops.box_coder(priors * 40.0, prior_var, deltas, code_type="decode_center_size",
                                              box_normalized=False)
        gt = paddle.static.data("gt", [5, 4], "float32")
        encoded = paddle.vision.ops.box_coder(priors, [0.1, 0.1, 0.2, 0.2], gt, code_type="encode_center_size")
        rng = np.random.default_rng(8)
        xy = rng.uniform(0, 0.6, (5, 2))
        feeds.update(deltas=(rng.standard_normal((2, n_priors, 4)) * 0.5).astype("float32"),
                     gt=np.concatenate([xy, xy + rng.uniform(0.1, 0.4, (5, 2))], 1).astype("float32"))
        return ["x", "deltas", "gt"], [boxes, variances, decoded, encoded], feeds
    rois = paddle.static.data("rois", [5, 4], "float32")
    rois_num = paddle.static.data("rois_num", [2], "int32")
    outs = [paddle.vision.ops.roi_align(feat, rois, rois_num, output_size=(3, 2), spatial_scale=0.25,
                                        sampling_ratio=s, aligned=a) for s, a in ((-1, True), (2, False))]
    feeds.update(rois=np.array([[2, 3, 20, 25], [0, 0, 39, 31], [5.5, 1.2, 9.1, 4.0], [10, 8, 38, 30],
                                [30, 20, 45, 40]], "float32"), rois_num=np.array([2, 3], "int32"))
    return ["x", "rois", "rois_num"], outs, feeds


# -- a Swin Transformer block ---------------------------------------------------------------------------------
WS, SHIFT, DIM, HEADS, SIDE = 4, 2, 16, 2, 8


def swin_shift_mask():
    """The shifted windows' attention mask as Swin computes it once with NumPy (-100 between regions)."""
    img = np.zeros((SIDE, SIDE))
    cnt = 0
    for hs in (slice(0, -WS), slice(-WS, -SHIFT), slice(-SHIFT, None)):
        for ws in (slice(0, -WS), slice(-WS, -SHIFT), slice(-SHIFT, None)):
            img[hs, ws] = cnt
            cnt += 1
    win = img.reshape(SIDE // WS, WS, SIDE // WS, WS).transpose(0, 2, 1, 3).reshape(-1, WS * WS)
    diff = win[:, None, :] - win[:, :, None]
    return np.where(diff != 0, -100.0, 0.0).astype("float32")


class SwinBlock(nn.Layer):
    """One shifted-window block: roll, window partition (reshape/transpose), window attention with the relative
    position bias (index_select over its table) and the shift mask, window reverse, roll back, MLP."""

    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
        self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
        self.mlp = nn.Sequential(nn.Linear(DIM, 2 * DIM), nn.GELU(), nn.Linear(2 * DIM, DIM))
        self.bias_table = self.create_parameter([(2 * WS - 1) ** 2, HEADS],
                                                default_initializer=nn.initializer.Normal(std=0.5))
        coords = np.stack(np.meshgrid(np.arange(WS), np.arange(WS), indexing="ij")).reshape(2, -1)
        rel = (coords[:, :, None] - coords[:, None, :]).transpose(1, 2, 0) + WS - 1
        self.rel_index = (rel[..., 0] * (2 * WS - 1) + rel[..., 1]).reshape(-1).astype("int64")

    def forward(self, x):
        b, n = x.shape[0], WS * WS
        windows = (SIDE // WS) ** 2
        shortcut = x
        x = paddle.roll(self.norm1(x).reshape([b, SIDE, SIDE, DIM]), shifts=(-SHIFT, -SHIFT), axis=(1, 2))
        x = x.reshape([b, SIDE // WS, WS, SIDE // WS, WS, DIM]).transpose([0, 1, 3, 2, 4, 5]).reshape([-1, n, DIM])
        qkv = self.qkv(x).reshape([-1, n, 3, HEADS, DIM // HEADS]).transpose([2, 0, 3, 1, 4])
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = paddle.matmul(q * (DIM // HEADS) ** -0.5, k, transpose_y=True)
        bias = paddle.index_select(self.bias_table, paddle.to_tensor(self.rel_index))
        attn = attn + bias.reshape([n, n, HEADS]).transpose([2, 0, 1]).unsqueeze(0)
        mask = paddle.to_tensor(swin_shift_mask())
        attn = attn.reshape([-1, windows, HEADS, n, n]) + mask.unsqueeze(1).unsqueeze(0)
        attn = nn.functional.softmax(attn.reshape([-1, HEADS, n, n]), axis=-1)
        x = paddle.matmul(attn, v).transpose([0, 2, 1, 3]).reshape([-1, n, DIM])
        x = self.proj(x).reshape([b, SIDE // WS, SIDE // WS, WS, WS, DIM]).transpose([0, 1, 3, 2, 4, 5])
        x = paddle.roll(x.reshape([b, SIDE, SIDE, DIM]), shifts=(SHIFT, SHIFT), axis=(1, 2))
        x = shortcut + x.reshape([b, SIDE * SIDE, DIM])
        return x + self.mlp(self.norm2(x))


def build_swin_block():
    x = paddle.static.data("x", [2, SIDE * SIDE, DIM], "float32")
    y = SwinBlock()(x)
    feeds = {"x": np.random.default_rng(6).standard_normal((2, SIDE * SIDE, DIM)).astype("float32")}
    return ["x"], [y], feeds


def build_roi_nms():
    """multiclass_nms3 in its LoD form, as a two-stage detector's box head uses it: per-image ROIs (RoisNum), a
    box per class [M, C, 4] and scores [M, C]; pixel boxes with keep_top_k, normalized ones without."""
    boxes = paddle.static.data("boxes", [7, 3, 4], "float32")
    scores = paddle.static.data("scores", [7, 3], "float32")
    rois_num = paddle.static.data("rois_num", [2], "int32")
    from paddle.base.layer_helper import LayerHelper
    outs = []
    for attrs in (dict(background_label=0, keep_top_k=4, normalized=False),
                  dict(background_label=-1, keep_top_k=-1, normalized=True)):
        helper = LayerHelper("multiclass_nms3")
        made = [helper.create_variable_for_type_inference(t) for t in ("float32", "int32", "int32")]
        helper.append_op(type="multiclass_nms3", inputs={"BBoxes": boxes, "Scores": scores, "RoisNum": rois_num},
                         attrs=dict(attrs, score_threshold=0.2, nms_top_k=10, nms_threshold=0.4, nms_eta=1.0),
                         outputs=dict(zip(("Out", "Index", "NmsRoisNum"), made)))
        outs += made
    rng = np.random.default_rng(9)
    xy = rng.uniform(0, 20, (7, 3, 2))
    feeds = {"boxes": np.concatenate([xy, xy + rng.uniform(4, 10, (7, 3, 2))], -1).astype("float32"),
             "scores": rng.uniform(0, 1, (7, 3)).astype("float32"), "rois_num": np.array([3, 4], "int32")}
    return ["boxes", "scores", "rois_num"], outs, feeds


INFERENCE_CASES = {"beam_search": build_beam_search,
                   "roi_nms": build_roi_nms,
                   "swin_block": build_swin_block,
                   "ssd_anchors": lambda: build_anchor_heads("ssd"),
                   "roi_align": lambda: build_anchor_heads("roi_align"),
                   "yolo_nms": lambda: build_yolo_head("nms"),
                   "yolo_matrix_nms": lambda: build_yolo_head("matrix"),
                   "yolo_plain_nms": lambda: build_yolo_head("plain")}


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    written, skipped = [], {}
    for name, build in INFERENCE_CASES.items():
        try:
            save_case(outdir, name, build)
            written.append(name)
        except Exception as e:  # a Paddle that cannot build a case in static mode: say why
            skipped[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    for kind in ("adamw", "norm"):
        try:
            make_train_clip(outdir, kind)
            written.append(f"train_clip_{kind}")
        except Exception as e:  # 3.3.1's legacy mode: "must be Value, but got Variable" (gelu)
            skipped[f"train_clip_{kind}"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    with open(os.path.join(outdir, "index.json"), "w") as f:
        json.dump({"paddle": paddle.__version__, "cases": written, "skipped": skipped}, f, indent=1)
    print(json.dumps({"cases": written, "skipped": skipped}))


if __name__ == "__main__":
    main(sys.argv[1])
