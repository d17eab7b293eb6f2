"""Programs, parameter streams and inference models: round trips, Paddle's files, and the
LoadErrors that name what is wrong with a file."""
import re
import struct
from pathlib import Path

import numpy as np

import pytest

import kernelcore as kc
from kernelcore.ir import dtypes
from kernelcore.formats import paddle_files
from kernelcore.ir.proto import framework_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "programs"
MLP_MODEL, MLP_PARAMS = EXAMPLES / "mlp.pdmodel", EXAMPLES / "mlp.pdiparams"
MLP_PARAM_SHAPES = {"fc_0.b_0": (32,), "fc_0.w_0": (13, 32), "fc_1.b_0": (16,), "fc_1.w_0": (32, 16),
                    "fc_2.b_0": (10,), "fc_2.w_0": (16, 10)}
MLP_OPS = ["feed", "mul", "elementwise_add", "relu", "mul", "elementwise_add", "tanh", "mul",
           "elementwise_add", "softmax", "fetch"]


def small_program():
    """x -> relu(mul(x, w)) + b, with a sub-block holding a var, built through the API."""
    prog = kc.Program()
    with kc.program_guard(prog):
        block = prog.global_block()
        x = block.create_var("x", shape=[-1, 4], dtype="float32")
        w = block.create_parameter("w", shape=[4, 3])
        b = block.create_parameter("b", shape=[3])
        h = kc.op.elementwise_add(kc.op.relu(kc.op.mul(x, w)), b)
        with prog.block_guard() as sub:
            sub.create_var("inner", shape=[2], dtype="int64")
    return prog, h


def mlp_bytes(name):
    return (EXAMPLES / name).read_bytes()


# ---------------------------------------------------------------------------
# programs
def test_program_round_trip(tmp_path):
    prog, _ = small_program()
    path = tmp_path / "p.pdmodel"
    kc.save_program(prog, path)
    back = kc.load_program(path)
    assert back == prog
    assert str(back) == str(prog)
    assert back.num_blocks == 2 and back.block(1).parent_idx == 0
    assert path.read_bytes() == prog.to_bytes()
    assert not (tmp_path / "p.pdmodel.tmp").exists()


def test_paddle_pdmodel_parses_and_reserializes_byte_for_byte():
    prog = kc.load_program(MLP_MODEL)
    assert [op.type for op in prog.global_block().ops] == MLP_OPS
    assert prog.desc.version.version == 3003001
    assert len(prog.desc.op_version_map.pair) == 76
    assert prog.global_block().var("x").shape == (8, 13)
    # every field survives: what we write is what Paddle wrote
    assert prog.to_bytes() == MLP_MODEL.read_bytes()


def test_load_program_by_prefix_and_directory(tmp_path):
    prog, _ = small_program()
    kc.save_program(prog, tmp_path / "m.pdmodel")
    assert kc.load_program(tmp_path / "m") == prog  # the prefix
    d = tmp_path / "old"
    d.mkdir()
    kc.save_program(prog, d / "__model__")
    assert kc.load_program(d) == prog  # Paddle 1.x's directory layout


@pytest.mark.parametrize("content, words", [
    (b"", "empty"),
    (b"\x0a\x00", "required fields"),                      # a block without idx/parent_idx
    (b"\xff\xff\xff", "not a serialized ProgramDesc"),
    (b'{"program": {"regions": []}}', "PIR"),
    (b"\x22\x02\x08\x05", "no blocks"),                     # only a version field
])
def test_bad_program_files(tmp_path, content, words):
    path = tmp_path / "bad.pdmodel"
    path.write_bytes(content)
    with pytest.raises(kc.LoadError) as e:
        kc.load_program(path)
    assert str(path) in str(e.value) and words in str(e.value)


def test_program_file_problems_name_the_path(tmp_path):
    with pytest.raises(kc.LoadError, match="No such file"):
        kc.load_program(tmp_path / "missing.pdmodel")
    with pytest.raises(kc.LoadError, match="__model__"):
        kc.load_program(tmp_path)  # a directory without __model__
    with pytest.raises(kc.LoadError, match="parameter file"):
        kc.load_program(MLP_PARAMS)


def _desc_with(mutate):
    prog, _ = small_program()
    d = pb.ProgramDesc()
    d.CopyFrom(prog.desc)
    mutate(d)
    return d.SerializeToString()


@pytest.mark.parametrize("mutate, words", [
    (lambda d: setattr(d.blocks[1], "parent_idx", 7), "parent"),
    (lambda d: setattr(d.blocks[1], "idx", 3), "idx"),
    (lambda d: d.blocks[0].ops[0].attrs.add(name="sub_block", type=pb.AttrType.BLOCK, block_idx=9), "names block 9"),
    (lambda d: d.blocks[0].vars.add().CopyFrom(d.blocks[0].vars[0]), "twice"),
])
def test_structurally_broken_programs(mutate, words):
    with pytest.raises(kc.LoadError, match=words):
        paddle_files.program_from_bytes(_desc_with(mutate), source="t")


def test_invalid_utf8_is_a_load_error():
    prog, _ = small_program()
    data = prog.to_bytes().replace(b"inner", b"\xffnner")
    with pytest.raises(kc.LoadError, match="UTF-8"):
        paddle_files.program_from_bytes(data)


@pytest.mark.parametrize("plant, field", [
    (lambda d: d.blocks[0].vars.add(name="BADVAR", type=pb.VarType(type=pb.VarType.LOD_TENSOR)), "blocks[0].vars"),
    (lambda d: d.blocks[0].ops[0].inputs[0].arguments.append("BADARG"), "blocks[0].ops[0].inputs[0].arguments"),
    (lambda d: d.blocks[0].ops[0].attrs.add(name="note", type=pb.AttrType.STRING, s="BADSTR"), "blocks[0].ops[0].attrs"),
    (lambda d: d.blocks[0].ops[0].attrs.add(name="notes", type=pb.AttrType.STRINGS, strings=["ok", "BADSTR"]),
     "blocks[0].ops[0].attrs"),
])
def test_bad_utf8_anywhere_is_named(plant, field):
    """The parser-level check (proto/wire_twin.py) catches a bad string in any string field, and the
    message names the field; a good program passes it."""
    desc = pb.ProgramDesc()
    desc.ParseFromString(small_program()[0].to_bytes())
    plant(desc)
    good = desc.SerializeToString()
    paddle_files.program_from_bytes(good.replace(b"BAD", b"ok_"))
    with pytest.raises(kc.LoadError, match=r"field " + re.escape(field) + r".* is not valid UTF-8"):
        paddle_files.program_from_bytes(good.replace(b"BAD", b"\xff\xfeX"))


# ---------------------------------------------------------------------------
# parameter streams
def test_paddle_pdiparams_parse_and_rewrite_byte_for_byte():
    prog = kc.load_program(MLP_MODEL)
    names = paddle_files.persistable_names(prog)
    assert names == sorted(MLP_PARAM_SHAPES)
    params = kc.load_params(MLP_PARAMS, names)
    assert {n: a.shape for n, a in params.items()} == MLP_PARAM_SHAPES
    assert all(a.dtype == np.float32 for a in params.values())
    assert kc.load_params(MLP_PARAMS, prog).keys() == params.keys()  # a Program names them too
    assert paddle_files.params_to_bytes(params) == MLP_PARAMS.read_bytes()


def test_tensor_layout_matches_paddle_notes():
    # NOTES.md: fc_0.b_0 f32[16] starts 00000000 0000000000000000 00000000 04000000 08 05 10 10
    data = paddle_files.tensor_to_bytes(np.arange(16, dtype=np.float32))
    head = bytes.fromhex("00000000" "0000000000000000" "00000000" "04000000" "08051010")
    assert data[:len(head)] == head
    assert data[len(head):] == np.arange(16, dtype="<f4").tobytes()
    # a 0-d tensor has no dims in its TensorDesc and one element of data
    scalar = paddle_files.tensor_to_bytes(np.float64(2.5))
    assert scalar == bytes.fromhex("00000000" "0000000000000000" "00000000" "02000000" "0806") + struct.pack("<d", 2.5)


DTYPE_ARRAYS = {
    "a_f32": np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32),
    "b_f64": np.linspace(-1, 1, 5),
    "c_i64": np.arange(6, dtype=np.int64).reshape(2, 3) - 3,
    "d_i32": np.array([[1, -2], [3, 4]], dtype=np.int32),
    "e_f16": np.array([0.5, -1.25, 2.0], dtype=np.float16),
    "f_bool": np.array([True, False, True]),
    "g_scalar_f32": np.array(3.5, dtype=np.float32),
    "h_scalar_i64": np.array(-7, dtype=np.int64),
    "i_u8": np.array([0, 7, 255], dtype=np.uint8),
    "j_i8": np.array([-128, 0, 127], dtype=np.int8),
    "k_i16": np.array([-300, 300], dtype=np.int16),
    "l_c64": np.array([1 + 2j, -3j], dtype=np.complex64),
    "m_c128": np.array([[0.5 - 1j]], dtype=np.complex128),
    "n_empty": np.zeros((0, 3), dtype=np.float32),
    "o_fortran": np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4)),
}


def test_params_round_trip_many_dtypes_and_0d(tmp_path):
    path = tmp_path / "p.pdiparams"
    kc.save_params(path, DTYPE_ARRAYS)
    back = kc.load_params(path, list(DTYPE_ARRAYS))
    assert list(back) == sorted(DTYPE_ARRAYS)
    for name, want in DTYPE_ARRAYS.items():
        got = back[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
        assert got.flags.writeable and got.flags.c_contiguous
    assert back["g_scalar_f32"].ndim == 0


def test_params_are_written_in_sorted_name_order(tmp_path):
    arrays = {"zeta": np.zeros(2, np.float32), "Alpha": np.ones(3, np.float32), "mid.w_0": np.full(1, 2.0)}
    data = paddle_files.params_to_bytes(arrays)
    tensors = paddle_files.read_tensors(data)
    # Python's sorted(): code-point order, so "Alpha" < "mid.w_0" < "zeta"
    assert [t.shape for t, _ in tensors] == [(3,), (1,), (2,)]
    # the names may be given in any order: the file order is sorted(names)
    back = paddle_files.params_from_bytes(data, ["zeta", "mid.w_0", "Alpha"])
    np.testing.assert_array_equal(back["Alpha"], np.ones(3))
    # sort=False: the order given, for streams written in another order
    unsorted = paddle_files.params_to_bytes(arrays, sort=False)
    assert [t.shape for t, _ in paddle_files.read_tensors(unsorted)] == [(2,), (3,), (1,)]
    assert paddle_files.params_from_bytes(unsorted, list(arrays), sort=False)["zeta"].shape == (2,)


def test_lod_levels_round_trip():
    arr = np.arange(12, dtype=np.float32).reshape(6, 2)
    lod = [[0, 2, 3], [0, 1, 4, 6]]
    (got, got_lod), = paddle_files.read_tensors(paddle_files.tensor_to_bytes(arr, lod))
    np.testing.assert_array_equal(got, arr)
    assert got_lod == lod


def _tensor(arr=None, *, version=0, levels=0, tversion=0, desc=None, desc_size=None, data=None):
    arr = np.arange(4, dtype=np.float32) if arr is None else arr
    if desc is None:
        desc = _desc(dtypes.from_numpy(arr.dtype), arr.shape)
    size = len(desc) if desc_size is None else desc_size
    body = arr.tobytes() if data is None else data
    return struct.pack("<IQ", version, levels) + struct.pack("<Ii", tversion, size) + desc + body


def _desc(data_type, dims):
    d = pb.VarType.TensorDesc()
    d.data_type = data_type
    d.dims.extend(dims)
    return d.SerializeToString()


@pytest.mark.parametrize("data, words", [
    (b"", "holds 0 tensor"),
    (_tensor()[:-1], "only 15 are left"),                                    # data one byte short
    (_tensor() + b"\x00", "1 bytes are left after"),                         # trailing byte
    (_tensor() + _tensor(), "left after the 1 expected"),                    # more tensors than names
    (_tensor(version=1), "LoD-tensor version 1"),
    (_tensor(tversion=3), "tensor version 3"),
    (_tensor(levels=2 ** 60), "LoD levels"),                                 # huge claim, no allocation
    (_tensor(desc_size=-5), "negative TensorDesc size"),
    (_tensor(desc_size=2 ** 31 - 1), "TensorDesc needs"),
    (_tensor(desc=_desc(5, [2 ** 40, 2 ** 20])), "needs 4611686018427387904 bytes"),  # 16 EiB claim
    (_tensor(desc=_desc(5, [-1, 4])), "negative dimension"),
    (_tensor(desc=_desc(5, [1] * 65)), "65 dimensions"),
    (_tensor(desc=_desc(22, [4])), "bfloat16"),                              # known enum, no NumPy dtype
    (_tensor(desc=_desc(7, [4])), "LOD_TENSOR"),                             # not a data type at all
    (_tensor(desc=b"\x08\x63\x10\x04"), "no data type"),                     # enum value 99: unknown
    (_tensor(desc=b"\xff\xff"), "does not parse"),
])
def test_bad_param_streams(data, words):
    with pytest.raises(kc.LoadError) as e:
        paddle_files.params_from_bytes(data, ["w"], source="w.pdiparams")
    assert "w.pdiparams" in str(e.value) and words in str(e.value), str(e.value)


@pytest.mark.parametrize("dims", [
    [0, 2 ** 62, 2 ** 62],          # no data at all, yet NumPy refuses the shape
    [2 ** 62, 2 ** 62],             # the product overflows int64
    [2 ** 63 - 1, 2],
    [0, 2 ** 61],                   # 2**61 float32s: 2**63 bytes, one past int64
])
def test_param_dims_that_overflow_are_named_before_any_allocation(tmp_path, dims):
    path = tmp_path / "o.pdiparams"
    path.write_bytes(_tensor(arr=np.ones(2, np.float32)) + _tensor(desc=_desc(5, dims), data=b""))
    with pytest.raises(kc.LoadError) as e:
        kc.load_params(path, ["a", "b"])
    msg = str(e.value)
    assert "o.pdiparams" in msg and "tensor #1 (b)" in msg and str(dims) in msg and "overflows int64" in msg, msg


def test_param_dims_that_fit_are_read():
    out = paddle_files.params_from_bytes(_tensor(desc=_desc(5, [0, 2 ** 60]), data=b""), ["w"])
    assert out["w"].shape == (0, 2 ** 60) and out["w"].dtype == np.float32


def test_param_file_count_must_match_the_program(tmp_path):
    prog = kc.load_program(MLP_MODEL)
    params = kc.load_params(MLP_PARAMS, prog)
    short = tmp_path / "short.pdiparams"
    kc.save_params(short, {k: v for k, v in params.items() if k != "fc_2.w_0"})
    with pytest.raises(kc.LoadError, match=r"holds 5 tensor\(s\) but 6 were expected \(fc_2.w_0 missing\)"):
        kc.load_params(short, prog)
    with pytest.raises(kc.LoadError, match="No such file"):
        kc.load_params(tmp_path / "none.pdiparams", prog)


def test_params_of_another_program_are_refused(tmp_path):
    prog = kc.load_program(MLP_MODEL)
    params = kc.load_params(MLP_PARAMS, prog)
    params["fc_0.w_0"] = params["fc_0.w_0"][:5]  # same count, wrong shape
    kc.save_params(tmp_path / "x.pdiparams", params)
    with pytest.raises(kc.LoadError, match=r"'fc_0.w_0' has shape \[5, 32\] but the program declares \[13, 32\]"):
        kc.load_params(tmp_path / "x.pdiparams", prog)
    params["fc_0.w_0"] = np.zeros((13, 32), np.float64)
    kc.save_params(tmp_path / "x.pdiparams", params)
    with pytest.raises(kc.LoadError, match="float64"):
        kc.load_params(tmp_path / "x.pdiparams", prog)


def test_save_params_rejects_what_it_cannot_write():
    with pytest.raises(TypeError, match="cannot save dtype object"):
        paddle_files.params_to_bytes({"o": np.array([object()])})
    with pytest.raises(TypeError, match="mapping"):
        paddle_files.params_to_bytes([np.zeros(2)])


# ---------------------------------------------------------------------------
# inference models
def test_load_inference_model_from_prefix_or_either_file():
    for arg in (EXAMPLES / "mlp", MLP_MODEL, MLP_PARAMS, str(EXAMPLES / "mlp")):
        prog, scope, feeds, fetches = kc.load_inference_model(arg)
        assert feeds == ["x"] and fetches == ["fc_2.tmp_2"]
        assert {n: scope.get(n).shape for n in MLP_PARAM_SHAPES} == MLP_PARAM_SHAPES


def test_inference_model_round_trip(tmp_path):
    prog, scope, feeds, fetches = kc.load_inference_model(EXAMPLES / "mlp")
    model, params = kc.save_inference_model(tmp_path / "copy", prog, scope)
    assert model.read_bytes() == MLP_MODEL.read_bytes()
    assert params.read_bytes() == MLP_PARAMS.read_bytes()
    prog2, scope2, feeds2, fetches2 = kc.load_inference_model(tmp_path / "copy")
    assert prog2 == prog and (feeds2, fetches2) == (feeds, fetches)
    for n in MLP_PARAM_SHAPES:
        np.testing.assert_array_equal(scope2.get(n), scope.get(n))


def test_save_inference_model_adds_feed_and_fetch_ops(tmp_path):
    prog, h = small_program()
    scope = kc.Scope()
    rng = np.random.default_rng(0)
    scope.set("w", rng.standard_normal((4, 3)).astype(np.float32))
    scope.set("b", rng.standard_normal(3).astype(np.float32))
    x = rng.standard_normal((5, 4)).astype(np.float32)
    exe = kc.Executor(kc.CPUPlace())
    want, = exe.run(prog, feed={"x": x}, fetch_list=[h], scope=scope)

    kc.save_inference_model(tmp_path / "m", prog, scope, feed_names=["x"], fetch_names=[h.name])
    assert not any(op.type == "feed" for op in prog.global_block().ops)  # the caller's program is untouched
    prog2, scope2, feeds, fetches = kc.load_inference_model(tmp_path / "m")
    assert feeds == ["x"] and fetches == [h.name]
    types = [op.type for op in prog2.global_block().ops]
    assert types[0] == "feed" and types[-1] == "fetch"
    got, = exe.run(prog2, feed={"x": x}, scope=scope2)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # a program that already has them gets no second set
    with pytest.raises(kc.ProgramError, match="already has feed/fetch ops"):
        paddle_files.with_feed_fetch(prog2, ["x"], [])


def test_save_inference_model_needs_every_persistable_value(tmp_path):
    prog, h = small_program()
    scope = kc.Scope()
    scope.set("w", np.zeros((4, 3), np.float32))
    with pytest.raises(kc.ScopeError, match="'b'"):
        kc.save_inference_model(tmp_path / "m", prog, scope)
    assert not (tmp_path / "m.pdmodel").exists()


def test_inference_model_problems(tmp_path):
    with pytest.raises(kc.LoadError, match=r"no such model file"):
        kc.load_inference_model(tmp_path / "absent")
    (tmp_path / "m.pdmodel").write_bytes(MLP_MODEL.read_bytes())
    with pytest.raises(kc.LoadError, match=r"m.pdiparams: no parameter file, but .* has 6 persistable"):
        kc.load_inference_model(tmp_path / "m")
    (tmp_path / "m.pdiparams").write_bytes(MLP_PARAMS.read_bytes()[:-4])
    with pytest.raises(kc.LoadError, match="m.pdiparams"):
        kc.load_inference_model(tmp_path / "m")


def test_paddle1_directory_layouts(tmp_path):
    prog, scope, _, _ = kc.load_inference_model(EXAMPLES / "mlp")
    combined = tmp_path / "combined"
    combined.mkdir()
    kc.save_program(prog, combined / "__model__")
    (combined / "__params__").write_bytes(MLP_PARAMS.read_bytes())
    per_var = tmp_path / "per_var"
    per_var.mkdir()
    kc.save_program(prog, per_var / "__model__")
    for n in MLP_PARAM_SHAPES:  # Paddle 1.x's default: one single-tensor file per variable
        kc.save_params(per_var / n, {n: scope.get(n)})
    for d in (combined, per_var, combined / "__model__", per_var / "__model__"):
        _, s, feeds, fetches = kc.load_inference_model(d)
        assert feeds == ["x"] and fetches == ["fc_2.tmp_2"]
        for n in MLP_PARAM_SHAPES:
            np.testing.assert_array_equal(s.get(n), scope.get(n))
    (per_var / "fc_1.b_0").unlink()
    with pytest.raises(kc.LoadError, match="fc_1.b_0"):
        kc.load_inference_model(per_var)


def test_feed_fetch_names_follow_col_not_op_order():
    prog = kc.load_program(EXAMPLES / "mlp.pdmodel")
    block = prog.global_block()
    block.create_var("y", shape=[2], dtype="float32")
    block.append_op("fetch", inputs={"X": ["y"]}, outputs={"Out": ["fetch"]}, attrs={"col": 1}, infer=False)
    # move the new fetch (col 1) before the old one (col 0)
    ops = block.desc.ops
    last = pb.OpDesc()
    last.CopyFrom(ops[-1])
    del ops[-1]
    ops.insert(len(ops) - 1, last)
    assert [op.type for op in block.ops][-2:] == ["fetch", "fetch"]
    assert paddle_files.fetch_target_names(prog) == ["fc_2.tmp_2", "y"]
    block.op(-1).set_attr("col", 1)  # now two fetch ops claim col 1
    with pytest.raises(kc.LoadError, match="col 1"):
        paddle_files.fetch_target_names(prog)
