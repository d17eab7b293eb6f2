"""The notebook code the training-health browser tests share: a small MLP whose learning rate is raised at
iteration RAISE_AT to HIGH_LR, which makes its loss go NaN a few iterations later. The program, its scope after
the startup program and the feed are the names `main`, `scope`, `loss` and `feed`."""

NAN_MLP = '''
import numpy as np
import kernelcore as kc

L = kc.layers
RAISE_AT, HIGH_LR = 5, 50.0
main, startup = kc.Program(), kc.Program()
with kc.program_guard(main, startup):
    x, y = L.data("x", [-1, 8]), L.data("y", [-1, 1])
    err = kc.op.elementwise_sub(L.fc(L.fc(x, 16, act="tanh"), 1), y)
    loss = L.mean(kc.op.elementwise_mul(err, err))
    kc.optimizer.SGD(learning_rate=0.05).minimize(loss)
scope = kc.Scope()
kc.Executor().run(startup, scope=scope)
rng = np.random.default_rng(0)
xs = rng.standard_normal((32, 8)).astype("float32")
feed = {"x": xs, "y": xs.sum(1, keepdims=True).astype("float32")}
'''
