"""bench/gpu_models.py's batch-64 feeds, its PyTorch GPU runners for the BERT-style encoder, and its stepping-speed
row.

Batch 64 reuses the programs Paddle wrote (batch 8, or 32 for the small CNN and the LSTM): jit.save's input spec
fixes the feed variables' batch dim, but none of these models' ops does (conv, pool, flatten, matmul, reshape2 with
0 dims, the fused rnn op), so the feeds' declared batch dim is opened to -1 and each feed's rows are repeated up to
64. Paddle's reference exists at the written batch only: a batch-64 row is checked against kernelcore's CPU path.
"""
from __future__ import annotations

import time

import numpy as np

import kernelcore as kc


def open_batch(prog, feed: dict, batch: int) -> dict:
    """`feed` with `batch` rows along dim 0 (each variable's rows repeated), its variables' declared dim 0 opened
    to -1 in `prog` so that the executor's feed check takes them"""
    for v in prog.global_block().desc.vars:
        if v.name in feed and len(v.type.lod_tensor.tensor.dims):
            v.type.lod_tensor.tensor.dims[0] = -1
    out = {}
    for name, value in feed.items():
        reps = -(-batch // value.shape[0])
        out[name] = np.ascontiguousarray(np.concatenate([value] * reps, axis=0)[:batch])
    return out


def torch_bert_inference(prog, params: dict, feed: dict):
    """bench/_torch_bert.py's port of the encoder with the same weights on the GPU: (run, sync)"""
    import torch
    from _torch_bert import TorchInference
    t = TorchInference(prog, params, feed)
    t.port.model.cuda()
    t.ids, t.tt = t.ids.cuda(), t.tt.cuda()
    return t.run, torch.cuda.synchronize


def torch_bert_train(prog, init: dict, feed: dict):
    """bench/_torch_bert.py's adam training step on the GPU (its loss.item() waits for the GPU): (step, None)"""
    from _torch_bert import TorchTrainStep
    t = TorchTrainStep(prog, init, feed)
    t.model.cuda()  # in place: the optimizer keeps the same parameters
    t.ids, t.tt, t.label = t.ids.cuda(), t.tt.cuda(), t.label.cuda()
    return t.step, None


def stacked_lstm(T: int, B: int, D: int, H: int):
    """a 2-layer LSTM (kc.layers.lstm over kc.layers.lstm: one recurrent op per layer, steppable timestep by
    timestep) over a time-major [T, B, D] input: (program, host parameters, feed, output)"""
    prog, startup = kc.Program(), kc.Program()
    with kc.program_guard(prog, startup):
        x = prog.global_block().create_var("x", [T, B, D])
        out = kc.layers.lstm(kc.layers.lstm(x, H, name="lstm_0"), H, name="lstm_1")
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    params = {n: np.asarray(scope.find_var(n).value) for n in scope.local_var_names()
              if scope.find_var(n).value is not None}
    feed = {"x": np.random.default_rng(0).standard_normal((T, B, D)).astype(np.float32)}
    return prog, params, feed, out


def scope_on(place, params: dict):
    scope = kc.Scope()
    for n, v in params.items():
        scope.var(n).value = place.xp.asarray(v) if place.kind == "gpu" else v.copy()
    return scope


def stepping_rate(place, model, repeat: int) -> tuple[int, float]:
    """(debug steps per session, best seconds per session) of a kc.debug session on `place` stepped with
    step_timestep() from start to finish, the last step's result fetched to the host (waiting for the device)"""
    prog, params, feed, out = model
    scope = scope_on(place, params)
    best, steps = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        session = kc.debug(prog, feed, [out], scope, place=place)
        steps = 0
        while not session.finished:
            session.step_timestep()
            steps += 1
        kc.runtime.place.to_host(scope.find_var(out.name).value)
        best = min(best, time.perf_counter() - t0)
    return steps, best
