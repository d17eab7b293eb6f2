"""Every public model constructor of paddle.vision.models: its inference program, as Paddle writes it, is one
kernelcore supports and can prepare, and kernelcore's shape inference agrees with Paddle's on every value.

A session fixture runs tests/paddle_oracle/make_vision_models.py --constructors with Paddle 3.3.1 (legacy IR):
it builds (does not run) each constructor's eval-mode model at its design input size (1x3x224x224; LeNet
1x1x28x28) and writes the program save_inference_model would write, without parameters (~15 s of CPU); Paddle
2.6.2 does the same for one constructor per model family (~4 s). Without the Paddle venvs these tests skip and
say so. Output parity, which needs parameters, is tests/test_paddle_vision.py.
"""
import json
import os
import subprocess
import warnings
from pathlib import Path

import pytest

import kernelcore as kc
from kernelcore.formats import paddle_files
from kernelcore.ir.program import Program
from kernelcore.ir.proto.framework_pb2 import VarType
from kernelcore.ir.support import UnsupportedOpsWarning, describe, unsupported_ops

pytestmark = pytest.mark.paddle

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "tests" / "paddle_oracle" / "make_vision_models.py"
PADDLE3 = ROOT / ".venv-paddle" / "bin" / "python"
PADDLE2 = ROOT / ".venv-paddle2" / "bin" / "python"

# paddle.vision.models' public constructors (Paddle 3.3.1): the factory functions, and LeNet, the one model
# class no factory returns. test_the_list_is_paddles checks this against what the generator enumerates.
CONSTRUCTORS = [
    "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d", "resnext152_32x4d",
    "resnext152_64x4d", "wide_resnet50_2", "wide_resnet101_2",
    "vgg11", "vgg13", "vgg16", "vgg19",
    "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large",
    "LeNet",
    "densenet121", "densenet161", "densenet169", "densenet201", "densenet264",
    "alexnet", "inception_v3", "squeezenet1_0", "squeezenet1_1", "googlenet",
    "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish",
]


# One constructor per module of paddle.vision.models (the smallest), checked in Paddle 2.6.2's programs too:
# 2.6.2's save path adds a `scale` op after each output; otherwise the same op types (all 39 checked by hand).
ONE_PER_FAMILY = ["resnet18", "vgg11", "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "LeNet",
                  "densenet121", "alexnet", "inception_v3", "squeezenet1_1", "googlenet", "shufflenet_v2_swish"]


def _generate(tmp_path_factory, python: Path, version: str, names=()):
    """(directory of <name>.pdmodel, constructors.json) as `python`'s Paddle writes them"""
    if not python.exists():
        pytest.skip(f"no Paddle {version} oracle at {python.parent.parent}: run ./dev test, or "
                    f"bash tests/paddle_oracle/setup_env.sh {python.parent.parent.name} {version}")
    out = tmp_path_factory.mktemp(f"paddle_vision_ctors_{version}")
    env = dict(os.environ, FLAGS_enable_pir_api="0", GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    r = subprocess.run([str(python), str(GENERATOR), str(out), *names, "--constructors"], capture_output=True,
                       text=True, env=env, timeout=600)
    summary_path = out / "constructors.json"
    if not summary_path.exists():  # exit 1 with a summary: some constructor failed; its test says which
        pytest.fail(f"{GENERATOR.name} --constructors failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return out, json.loads(summary_path.read_text())


@pytest.fixture(scope="session")
def ctors(tmp_path_factory):
    return _generate(tmp_path_factory, PADDLE3, "3.3.1")


@pytest.fixture(scope="session")
def ctors2(tmp_path_factory):
    return _generate(tmp_path_factory, PADDLE2, "2.6.2", ONE_PER_FAMILY)


def test_the_list_is_paddles(ctors):
    """CONSTRUCTORS is what Paddle's paddle.vision.models offers: a constructor Paddle adds is named here."""
    _, summary = ctors
    built = set(summary["constructors"]) | set(summary["failed"])
    assert built == set(CONSTRUCTORS), {"new in Paddle": sorted(built - set(CONSTRUCTORS)),
                                        "gone from Paddle": sorted(set(CONSTRUCTORS) - built)}


def rebuild(prog: Program, feeds: list[str]) -> Program:
    """The program's ops appended one by one (feed/fetch ops left out) to a fresh kernelcore program whose
    variables are Paddle's declarations with the shape and dtype of every one but the parameters and the fed
    ones taken out: every intermediate value's shape and dtype then comes from kernelcore's own bind step and
    shape inference. (The declarations are copied as descs: declaring thousands of variables one create_var at
    a time costs seconds, each new name rebuilding the block's name index.)"""
    out = Program()
    blk = out.global_block()
    for v in prog.global_block().vars:
        if v.name in ("feed", "fetch"):
            continue
        d = blk.desc.vars.add()
        d.CopyFrom(v.desc)
        if not v.persistable and v.name not in feeds:
            assert d.type.type == VarType.LOD_TENSOR, f"{v.name}: {d.type}"
            d.type.ClearField("lod_tensor")
    out.touch()
    for op in prog.global_block().ops:
        if op.type in ("feed", "fetch"):
            continue
        blk.append_op(op.type, inputs={k: vs for k, vs in op.inputs.items() if vs},
                      outputs={k: vs for k, vs in op.outputs.items() if vs}, attrs=op.attrs)
    return out


@pytest.mark.parametrize("name", CONSTRUCTORS)
def test_constructor_program_is_supported(ctors, name):
    """kernelcore defines every op of the constructor's inference program, prepares it for a run, and infers
    Paddle's shape and dtype for every value an op reads and every fetched value."""
    check_constructor(*ctors, name)


@pytest.mark.parametrize("name", ONE_PER_FAMILY)
def test_paddle2_constructor_program_is_supported(ctors2, name):
    """The same for the program Paddle 2.6.2 writes."""
    check_constructor(*ctors2, name)


def check_constructor(out, summary, name):
    if name in summary["failed"]:
        pytest.fail(f"Paddle could not build {name}: {summary['failed'][name]}")
    meta = summary["constructors"][name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOpsWarning)
        prog = kc.load_program(out / f"{name}.pdmodel")
    missing = unsupported_ops(prog)
    assert not missing, f"{name}: {describe(missing)}"
    counts = {}
    for op in prog.global_block().ops:
        counts[op.type] = counts.get(op.type, 0) + 1
    assert counts == meta["op_types"]

    feeds, fetches = paddle_files.feed_target_names(prog), paddle_files.fetch_target_names(prog)
    assert feeds == ["x"] and fetches == meta["fetch_names"]
    kc.Executor(kc.CPUPlace()).prepare(prog)

    ours = rebuild(prog, feeds).global_block()
    src = prog.global_block()
    read = {n for op in src.ops if op.type != "feed" for n in op.input_arg_names}
    checked = 0
    for n in sorted(read):
        theirs = src.var(n)
        if theirs.persistable or n in feeds or n == "feed":
            continue
        mine = ours.var(n)
        assert (mine.shape, mine.dtype) == (theirs.shape, theirs.dtype), (
            f"{name}: {n}: kernelcore infers shape {mine.shape} dtype {mine.dtype_name}, "
            f"Paddle declares {theirs.shape} {theirs.dtype_name}")
        checked += 1
    assert checked >= meta["n_ops"] // 2, f"{name}: only {checked} values checked of {meta['n_ops']} ops"
    for n, shape in zip(fetches, meta["fetch_shapes"]):
        assert list(ours.var(n).shape) == shape, f"{name}: fetch {n}"
