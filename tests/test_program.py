"""The program IR: views over the descs, validation on append, text form, round trip."""
import textwrap

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.ir.proto import framework_pb2 as pb


def small_program():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [-1, 3])
    b.create_parameter("b", [3])
    b.append_op("elementwise_add", {"X": ["x"], "Y": ["b"]}, {"Out": ["s"]}, {"axis": 1})
    b.append_op("relu", {"X": ["s"]}, {"Out": ["r"]})
    return prog


def test_text_form_is_deterministic_and_exact():
    expected = textwrap.dedent("""\
        block 0 (parent -1):
          var b: float32[3] (persistable, parameter)
          var r: float32[-1, 3]
          var s: float32[-1, 3]
          var x: float32[-1, 3]
          op #0 elementwise_add(X=[x], Y=[b]) -> (Out=[s]) {axis=1}
          op #1 relu(X=[s]) -> (Out=[r])""")
    assert str(small_program()) == expected
    assert str(small_program()) == str(small_program())


def test_bytes_round_trip_and_paddle_field_numbers():
    prog = small_program()
    data = prog.to_bytes()
    back = kc.Program.from_bytes(data)
    assert back == prog and str(back) == str(prog)
    assert back.to_bytes() == data
    # field numbers follow Paddle's framework.proto
    f = pb.ProgramDesc.DESCRIPTOR.fields_by_name
    assert f["blocks"].number == 1 and f["version"].number == 4 and f["op_version_map"].number == 5
    a = pb.OpDesc.Attr.DESCRIPTOR.fields_by_name
    assert (a["block_idx"].number, a["l"].number, a["float64"].number, a["scalar"].number) == (12, 13, 19, 20)
    assert pb.VarType.STEP_SCOPES == 11 and pb.VarType.FP32 == 5 and pb.AttrType.BLOCK == 8


def test_generated_module_matches_the_proto_file(tmp_path):
    pytest.importorskip("grpc_tools.protoc")
    import pathlib
    from kernelcore.ir.proto import build
    here = pathlib.Path(kc.__file__).parent / "ir" / "proto"
    fresh = build.generate(tmp_path).read_text()
    committed = (here / "framework_pb2.py").read_text()
    strip = lambda s: [l for l in s.splitlines() if "Protobuf Python Version" not in l and "_runtime_version" not in l]
    assert strip(fresh) == strip(committed), "regenerate with: python -m kernelcore.ir.proto.build"


def test_descriptors_live_in_a_pool_of_their_own():
    """Paddle registers the same framework.proto in protobuf's default pool: ours must not collide with it."""
    from google.protobuf import descriptor_pool
    assert pb.ProgramDesc.DESCRIPTOR.file.pool is not descriptor_pool.Default()
    assert pb.ProgramDesc.DESCRIPTOR.full_name == "paddle.framework.proto.ProgramDesc"  # the wire's own names


def test_find_var_through_parent_blocks_and_unique_names():
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("w", [2, 2])
    with prog.block_guard() as sub:
        assert sub.parent_idx == 0 and prog.current_block() is sub
        assert sub.find_var_recursive("w").block == g
        assert sub.find_var_recursive("missing") is None
        tmp = sub.create_var()
    assert prog.current_block() is g
    assert tmp.name == "tmp_0" and prog.unique_name("tmp") == "tmp_1"
    with pytest.raises(kc.ProgramError, match="already declares"):
        g.create_var("w")


def test_defaults_are_filled_into_the_desc():
    prog = small_program()
    relu = prog.global_block().op(1)
    add = prog.global_block().op(0)
    assert add.attr("axis") == 1 and add.attrs == {"axis": 1}
    assert relu.inputs == {"X": ["s"]} and relu.output_arg_names == ["r"]


@pytest.mark.parametrize("call, error, words", [
    (lambda b: b.append_op("elementwise_ad", {"X": ["x"], "Y": ["x"]}, {"Out": ["o"]}),
     kc.UnknownOpError, ["elementwise_ad", "did you mean", "elementwise_add"]),
    (lambda b: b.append_op("relu", {"Input": ["x"]}, {"Out": ["o"]}),
     kc.OpValidationError, ["relu", "unknown input slot 'Input'", "['X']"]),
    (lambda b: b.append_op("relu", {}, {"Out": ["o"]}),
     kc.OpValidationError, ["relu", "input 'X' is required"]),
    (lambda b: b.append_op("relu", {"X": ["x", "x"]}, {"Out": ["o"]}),
     kc.OpValidationError, ["input 'X' takes one variable, got 2"]),
    (lambda b: b.append_op("relu", {"X": ["nope"]}, {"Out": ["o"]}),
     kc.OpValidationError, ["'nope'", "do not declare"]),
    (lambda b: b.append_op("elementwise_add", {"X": ["x"], "Y": ["x"]}, {"Out": ["o"]}, {"axis": "1"}),
     kc.AttrError, ["attribute 'axis'", "expected INT", "str"]),
    (lambda b: b.append_op("elementwise_add", {"X": ["x"], "Y": ["x"]}, {"Out": ["o"]}, {"axes": 1}),
     kc.AttrError, ["unknown attribute 'axes'", "did you mean 'axis'"]),
    (lambda b: b.append_op("elementwise_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["o"]}),
     kc.ShapeError, ["elementwise_add", "[4, 3]", "[5]"]),
])
def test_validation_errors_name_op_slot_and_expected_versus_given(call, error, words):
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [4, 3])
    b.create_var("y", [5])
    before = prog.to_bytes()
    with pytest.raises(error) as e:
        call(b)
    for w in words:
        assert w in str(e.value)
    assert prog.to_bytes() == before or error is kc.OpValidationError  # nothing half-appended


def test_failed_append_leaves_no_op_behind():
    prog = kc.Program()
    b = prog.global_block()
    b.create_var("x", [4, 3])
    with pytest.raises(kc.AttrError):
        b.append_op("elementwise_add", {"X": ["x"], "Y": ["x"]}, {"Out": ["o"]}, {"axis": 2.5})
    assert b.ops == []


def test_op_creators_are_derived_from_the_registry():
    prog = kc.Program()
    with kc.program_guard(prog):
        x = prog.global_block().create_var("x", [2, 3])
        y = kc.op.tanh(kc.op.elementwise_mul(x, x))
    assert [o.type for o in prog.global_block().ops] == ["elementwise_mul", "tanh"]
    assert y.shape == (2, 3)
    assert "tanh activation" in kc.op.tanh.__doc__
    with pytest.raises(AttributeError):
        kc.op.no_such_op


def test_program_guard_restores_in_finally():
    a = kc.Program()
    before = kc.default_main_program()
    with pytest.raises(RuntimeError):
        with kc.program_guard(a):
            assert kc.default_main_program() is a
            raise RuntimeError("boom")
    assert kc.default_main_program() is before


def test_from_bytes_rejects_garbage_with_a_load_error():
    for data in (b"\xff\xff\xff", b"", small_program().to_bytes()[:-3]):
        with pytest.raises(kc.LoadError):
            kc.Program.from_bytes(data)


def test_attributes_of_every_type_round_trip():
    from kernelcore.ir import attrs as attrlib
    A = pb.AttrType
    values = {A.INT: -3, A.FLOAT: 0.5, A.STRING: "s<b>", A.INTS: [1, 2], A.FLOATS: [0.25], A.STRINGS: ["a"],
              A.BOOLEAN: True, A.BOOLEANS: [True, False], A.BLOCK: 2, A.LONG: 2 ** 40, A.BLOCKS: [1, 2],
              A.LONGS: [2 ** 40], A.FLOAT64S: [0.1], A.VAR: "v", A.VARS: ["v", "w"], A.FLOAT64: 0.1,
              A.SCALAR: 1.5, A.SCALARS: [1, True, 2.5]}
    for t, v in values.items():
        msg = pb.OpDesc.Attr()
        assert attrlib.check_value(t, v) is None, t
        attrlib.write(msg, "a", t, v)
        back = pb.OpDesc.Attr.FromString(msg.SerializeToString())
        assert attrlib.read(back) == v, attrlib.type_name(t)


def test_creator_sizes_duplicable_outputs_from_num_or_sections():
    prog = kc.Program()
    with kc.program_guard(prog):
        x = prog.global_block().create_var("x", [6, 4])
        a, b, c = kc.op.split(x, num=3, axis=0)
        d, e = kc.op.split(x, sections=[1, 3], axis=1)
    assert [v.shape for v in (a, b, c)] == [(2, 4)] * 3
    assert (d.shape, e.shape) == ((6, 1), (6, 3))


def test_variable_lookups_follow_the_desc_without_rebuilding_the_index_per_new_name():
    """create_var keeps the block's name index whole, so a miss is answered from it; a desc changed
    behind the block's back (a VarDesc appended, one removed) is still seen."""
    prog = kc.Program()
    b = prog.global_block()
    for i in range(50):
        assert not b.has_var(f"v{i}")
        b.create_var(f"v{i}", [2])
    assert all(b.has_var(f"v{i}") for i in range(50)) and not b.has_var("nope")
    d = b.desc.vars.add()
    d.name = "added_in_the_desc"
    assert b.has_var("added_in_the_desc")
    b.remove_var("v3")
    assert not b.has_var("v3") and b.has_var("v4") and b.var("v49").name == "v49"
    del b.desc.vars[0]
    assert not b.has_var("v0") and b.has_var("v1")
