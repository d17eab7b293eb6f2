"""The BERT-style encoder of tests/paddle_oracle/make_transformer_models.py (`Bert`) in plain PyTorch, for
bench/transformer_models.py: word + position + token-type nn.Embedding, nn.LayerNorm, post-norm encoder layers with
paddle.nn.TransformerEncoderLayer's semantics (normalize_before=False: separate q/k/v/out nn.Linear projections as
Paddle's MultiHeadAttention has, attention through F.scaled_dot_product_attention with the additive float padding
mask, residual + LayerNorm, a Linear-GELU(exact)-Linear feed-forward, residual + LayerNorm), a tanh pooler over the
first token and, for a training program, the Linear classifier after it. No dropout: the inference program's are
identities and the training program is written with p = 0.

The shapes and weights come from a Paddle-written program's ops, in order (`program_layers`): lookup_table_v2's W and
padding_idx, matmul_v2's parameter Y (Paddle's Linear weight is [in, out]: transposed here) with the following
elementwise_add's parameter Y, layer_norm's Scale, Bias and epsilon, the heads from the first 4-d reshape2 (the
heads' split). The torch modules are matched to them in the order the forward pass calls them.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from _torch_ports import called_modules


class Attention(nn.Module):
    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x, mask):
        b, s, d = x.shape

        def split(t):  # [b, s, d] -> [b, heads, s, d / heads]
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)

        o = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), attn_mask=mask)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


class EncoderLayer(nn.Module):
    """paddle.nn.TransformerEncoderLayer(normalize_before=False, activation="gelu"), dropout 0."""

    def __init__(self, d_model: int, heads: int, ffn: int):
        super().__init__()
        self.attn = Attention(d_model, heads)
        self.norm1 = nn.LayerNorm(d_model)
        self.linear1, self.linear2 = nn.Linear(d_model, ffn), nn.Linear(ffn, d_model)
        self.norm2 = nn.LayerNorm(d_model)

    def forward(self, x, mask):
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.linear2(F.gelu(self.linear1(x))))


class Bert(nn.Module):
    def __init__(self, vocab, max_pos, types, d_model, heads, ffn, layers, pad_id, classes=None):
        super().__init__()
        self.pad_id = pad_id
        self.word, self.pos, self.token_type = (nn.Embedding(n, d_model) for n in (vocab, max_pos, types))
        self.norm = nn.LayerNorm(d_model)
        self.layers = nn.ModuleList(EncoderLayer(d_model, heads, ffn) for _ in range(layers))
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, classes) if classes else None

    def forward(self, ids, token_type):
        pos = torch.arange(ids.shape[1]).unsqueeze(0).expand_as(ids)
        word = self.word(ids)
        if self.pad_id >= 0:  # Paddle's padding_idx: zeros for that id (and so no gradient to its row)
            word = word.masked_fill((ids == self.pad_id).unsqueeze(-1), 0.0)
        h = self.norm(word + self.pos(pos) + self.token_type(token_type))
        mask = ((ids == 0).to(h.dtype) * -1e4)[:, None, None, :]  # [b, 1, 1, s], added to the attention logits
        for layer in self.layers:
            h = layer(h, mask)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        return self.classifier(pooled) if self.classifier is not None else (h, pooled)


def program_layers(prog) -> dict:
    """The program's forward layers in op order: embeddings [(W, padding_idx)], linears [(W, bias or None)], norms
    [(Scale, Bias, epsilon)], and heads (from the first 4-d reshape2: MultiHeadAttention's [0, 0, heads, d / heads]).
    Its dropout ops must be identities at inference (upscale_in_train) or have p = 0: the port has none."""
    block = prog.global_block()
    ops = [op for op in block.ops if not op.type.endswith("_grad") and op.attr("op_role", 0) in (0, 256)]

    def param(name):
        return block.has_var(name) and block.var(name).persistable

    adds = {op.input("X")[0]: op.input("Y")[0] for op in ops
            if op.type == "elementwise_add" and param(op.input("Y")[0])}
    out = {"embeddings": [], "linears": [], "norms": [], "heads": None}
    for op in ops:
        if op.type == "lookup_table_v2":
            out["embeddings"].append((op.input("W")[0], int(op.attr("padding_idx"))))
        elif op.type == "matmul_v2" and param(op.input("Y")[0]):
            assert not op.attr("trans_x") and not op.attr("trans_y"), "a Linear's matmul_v2 is transposed"
            out["linears"].append((op.input("Y")[0], adds.get(op.output("Out")[0])))
        elif op.type == "layer_norm":
            out["norms"].append((op.input("Scale")[0], op.input("Bias")[0], float(op.attr("epsilon"))))
        elif op.type == "reshape2" and out["heads"] is None and len(op.attr("shape")) == 4:
            out["heads"] = int(op.attr("shape")[2])
        elif op.type == "dropout":
            assert (op.attr("dropout_implementation") == "upscale_in_train" and op.attr("is_test")) \
                or op.attr("dropout_prob") == 0, "a dropout that is not an identity"
    return out


class Port:
    """A torch `Bert` built from a Paddle program and its persistables (`arrays`: name -> ndarray), with `pairs`:
    (torch tensor, Paddle name, transposed) for every parameter, to load and compare."""

    def __init__(self, prog, arrays: dict):
        spec = program_layers(prog)
        (word, pad), (pos, _), (types, _) = spec["embeddings"]
        layers = (len(spec["norms"]) - 1) // 2
        linears = spec["linears"]
        extra = len(linears) - 6 * layers - 1  # the pooler, and a classifier in a training program
        assert len(spec["norms"]) == 2 * layers + 1 and extra in (0, 1), f"not the BERT-style encoder: {spec}"
        d_model, ffn = arrays[linears[4][0]].shape  # the first layer's linear1
        classes = arrays[linears[-1][0]].shape[1] if extra else None
        self.model = Bert(arrays[word].shape[0], arrays[pos].shape[0], arrays[types].shape[0], d_model,
                          spec["heads"], ffn, layers, pad, classes)
        ids = torch.ones((1, 2), dtype=torch.int64)
        called = called_modules(self.model, (nn.Embedding, nn.Linear, nn.LayerNorm), lambda: self.model(ids, ids * 0))
        queues = {nn.Embedding: list(spec["embeddings"]), nn.Linear: list(linears), nn.LayerNorm: list(spec["norms"])}
        self.pairs = []
        for m in called:
            item = queues[type(m)].pop(0)
            if isinstance(m, nn.Embedding):
                self.pairs.append((m.weight, item[0], False))
            elif isinstance(m, nn.Linear):
                assert item[1] is not None, f"the program's Linear {item[0]} has no bias"
                self.pairs += [(m.weight, item[0], True), (m.bias, item[1], False)]
            else:
                m.eps = item[2]
                self.pairs += [(m.weight, item[0], False), (m.bias, item[1], False)]
        assert not any(queues.values()), f"program layers the torch model did not call: {queues}"
        self.load(arrays)

    def load(self, arrays: dict):
        with torch.no_grad():
            for t, n, tr in self.pairs:
                v = arrays[n]
                t.copy_(torch.from_numpy(np.ascontiguousarray(v.T if tr else v)))


class TorchInference:
    """The inference program's two outputs (encoder states, pooled) under torch.inference_mode."""

    def __init__(self, prog, arrays: dict, feed: dict):
        self.port = Port(prog, arrays)
        self.port.model.eval()
        self.ids = torch.from_numpy(feed["input_ids"])
        self.tt = torch.from_numpy(feed["token_type_ids"])

    def run(self):
        with torch.inference_mode():
            return self.port.model(self.ids, self.tt)


def adam_settings(prog, arrays: dict) -> dict:
    """torch.optim.Adam's arguments from the program's adam ops (attributes) and LearningRate variable."""
    adams = [op for op in prog.global_block().ops if op.type == "adam"]
    assert adams, "no adam op in the training program"
    op = adams[0]
    assert all(not op.input(s) for s in ("Beta1Tensor", "Beta2Tensor", "EpsilonTensor")), "tensor Adam settings"
    return {"lr": float(np.asarray(arrays[op.input("LearningRate")[0]]).reshape(-1)[0]),
            "betas": (float(op.attr("beta1")), float(op.attr("beta2"))), "eps": float(op.attr("epsilon"))}


class TorchTrainStep:
    """One training step: zero_grad + forward + cross_entropy + backward + Adam.step() + loss.item(); `reset`
    restores the initial parameters and forgets Adam's moments (as every timed step starts from them)."""

    def __init__(self, prog, init: dict, feed: dict):
        self.port = Port(prog, init)
        self.model = self.port.model
        self.model.train()
        self.init = init
        self.ids = torch.from_numpy(feed["input_ids"])
        self.tt = torch.from_numpy(feed["token_type_ids"])
        self.label = torch.from_numpy(feed["label"].reshape(-1).astype(np.int64))
        self.settings = adam_settings(prog, init)
        self.opt = torch.optim.Adam(self.model.parameters(), **self.settings)

    def reset(self):
        self.port.load(self.init)
        self.opt.state.clear()

    def step(self) -> float:
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(self.ids, self.tt), self.label)
        loss.backward()
        self.opt.step()
        return loss.item()

    def after(self, name: str) -> np.ndarray:
        """The Paddle-named parameter's value now, in Paddle's layout."""
        t, _, tr = next(p for p in self.port.pairs if p[1] == name)
        v = t.detach().numpy()
        return v.T if tr else v
