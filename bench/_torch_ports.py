"""Plain torch.nn ports of the Paddle-written CNNs the model benchmarks time (bench/models.py, bench/cnn_train.py),
with their weights taken from the Paddle program's own parameters.

No torchvision: its ResNet/MobileNet differ from paddle.vision's in small ways (layer order inside a block, the
classifier's Dropout), and the weights are mapped by calling order, so the ports follow Paddle's order exactly.
The mapping reads the program's conv / batch_norm / matmul ops in program order and pairs them with the torch
layers in the order a forward pass calls them, checking the counts agree.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np


def architecture(case: str) -> str:
    """'resnet18' for train_resnet18_b8 / resnet18_b8, and so on."""
    for arch in ("resnet18", "mobilenet_v2", "cnn"):
        if arch in case:
            return arch
    raise KeyError(f"no PyTorch port of {case!r}")


def torch_models():
    """{architecture: nn.Module class taking `classes`}: imported lazily, so the benches run without torch."""
    import torch
    from torch import nn

    class SmallCNN(nn.Module):
        def __init__(self, classes=5):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.bn = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2, 2)
            self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, classes)

        def forward(self, x):
            h = self.pool(torch.relu(self.bn(self.conv(x))))
            h = self.gap(torch.relu(self.dw(h)))
            return self.fc(torch.flatten(h, 1))

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else None)

        def forward(self, x):  # Paddle's order: conv1, bn1, conv2, bn2, then the downsample branch
            out = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            identity = self.down(x) if self.down is not None else x
            return torch.relu(out + identity)

    class ResNet18(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            blocks, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                blocks += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = self.maxpool(torch.relu(self.bn1(self.conv1(x))))
            return self.fc(torch.flatten(self.avgpool(self.blocks(x)), 1))

    def conv_bn(cin, cout, kernel, stride=1, groups=1, act=True):  # paddle.vision's ConvNormActivation
        layers = [nn.Conv2d(cin, cout, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        return nn.Sequential(*layers, nn.ReLU6()) if act else nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.residual = stride == 1 and cin == cout
            self.conv = nn.Sequential(*([conv_bn(cin, hidden, 1)] if expand != 1 else []),
                                      conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                      conv_bn(hidden, cout, 1, act=False))

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):  # paddle.vision.models.mobilenet_v2, scale 1.0
        def __init__(self, classes=10):
            super().__init__()
            layers, cin = [conv_bn(3, 32, 3, 2)], 32
            for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                               (6, 160, 3, 2), (6, 320, 1, 1)):
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            self.features = nn.Sequential(*layers, conv_bn(cin, 1280, 1))
            self.pool = nn.AdaptiveAvgPool2d(1)
            # Paddle's Dropout before the classifier: p = 0 in the training programs, identity in inference ones
            self.classifier = nn.Linear(1280, classes)

        def forward(self, x):
            return self.classifier(torch.flatten(self.pool(self.features(x)), 1))

    return {"cnn": SmallCNN, "resnet18": ResNet18, "mobilenet_v2": MobileNetV2}


def program_layers(prog):
    """The forward conv / batch_norm / linear ops in program order, with their parameter names."""
    ops = prog.global_block().ops
    reshaped = {op.output("Out")[0]: op.input("X")[0] for op in ops if op.type == "reshape2"}  # conv biases
    adds = {op.input("X")[0]: reshaped.get(op.input("Y")[0], op.input("Y")[0]) for op in ops
            if op.type == "elementwise_add"}
    out = {"conv": [], "bn": [], "linear": []}
    for op in ops:
        if op.type in ("conv2d", "depthwise_conv2d"):
            out["conv"].append((op.input("Filter")[0], adds.get(op.output("Output")[0])))
        elif op.type == "batch_norm":
            out["bn"].append(tuple(op.input(s)[0] for s in ("Scale", "Bias", "Mean", "Variance")) +
                             (op.attr("momentum"), op.attr("epsilon")))
        elif op.type == "matmul_v2":
            out["linear"].append((op.input("Y")[0], adds.get(op.output("Out")[0])))
    return out


def called_modules(model, kinds: tuple, forward) -> list:
    """The modules of `model` of these kinds in the order `forward()` (run once, without gradients) calls them:
    the order in which they meet the program's layers."""
    import torch

    called = []
    hooks = [m.register_forward_hook(lambda m, i, o: called.append(m)) for m in model.modules()
             if isinstance(m, kinds)]
    try:
        with torch.no_grad():
            forward()
    finally:
        for h in hooks:
            h.remove()
    return called


def port(case: str, prog, arrays: dict, x: np.ndarray):
    """(model, pairs): the torch port of `case` with the program's parameters copied in from `arrays` (name ->
    array), and pairs [(torch tensor, Paddle name, transposed)] for restoring or comparing them. `x` is a sample
    input: one forward pass records the order the port calls its layers in."""
    import torch
    from torch import nn

    layers = program_layers(prog)
    classes = int(arrays[layers["linear"][-1][0]].shape[1])
    model = torch_models()[architecture(case)](classes)
    called = called_modules(model, (nn.Conv2d, nn.BatchNorm2d, nn.Linear), lambda: model(torch.from_numpy(x)))
    kinds = {nn.Conv2d: "conv", nn.BatchNorm2d: "bn", nn.Linear: "linear"}
    seen = defaultdict(int)
    pairs = []
    for m in called:
        kind = kinds[type(m)]
        spec = layers[kind][seen[kind]]
        seen[kind] += 1
        if kind == "bn":
            scale, bias, mean, var, momentum, eps = spec
            m.momentum, m.eps = 1.0 - momentum, eps  # Paddle: running = momentum * running + (1 - m) * batch
            pairs += [(m.weight, scale, False), (m.bias, bias, False), (m.running_mean, mean, False),
                      (m.running_var, var, False)]
        else:
            w, b = spec
            pairs.append((m.weight, w, kind == "linear"))  # Paddle's Linear weight is [in, out]
            if m.bias is not None:
                assert b is not None, f"the program's {kind} {w} has no bias, the torch module has one"
                pairs.append((m.bias, b, False))
    assert all(seen[k] == len(v) for k, v in layers.items()), \
        f"torch called {dict(seen)} layers, the program has { {k: len(v) for k, v in layers.items()} }"
    with torch.no_grad():
        for t, n, tr in pairs:
            t.copy_(torch.from_numpy(np.ascontiguousarray(arrays[n].T if tr else arrays[n])))
    return model, pairs


def inference_run(case: str, prog, arrays: dict, x: np.ndarray):
    """A call that runs the port of `case` (the program's parameters from `arrays`) on `x` in eval mode under
    torch.inference_mode(), returning its output as a NumPy array."""
    import torch

    model, _ = port(case, prog, arrays, x)
    model.eval()
    tx = torch.from_numpy(x)

    def run():
        with torch.inference_mode():
            return model(tx).numpy()
    return run
