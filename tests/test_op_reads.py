"""What the outline reads of each op (kernelcore/ir/op_reads.py): the records a big program's loading keeps
(read from the twin parse, proto/wire_twin.py, where slot names are flat) are the desc reader's, on
programs with sub-blocks, Param slots, odd role attributes and repeated slots; an edit drops them; the
outline built from them is the one built from the desc."""
from __future__ import annotations

import pytest

import kernelcore as kc
from kernelcore.formats import paddle_files
from kernelcore.ir import op_reads
from kernelcore.view.program_parts import ProgramParts
from kernelcore.ir.proto import framework_pb2 as pb
from kernelcore.ir.proto.wire_twin import parse_checked
from make_frontend_fixtures import training_mlp
from test_contract import rnn_program, training_program

A = pb.AttrType


@pytest.fixture
def keep_all(monkeypatch):
    """Every loaded program keeps its records, whatever its size."""
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 0)


def _odd_program() -> pb.ProgramDesc:
    """Slots given twice and in odd orders, a Param slot on a non-optimizer op, role attributes of other
    types, an op with no attributes and one with no slots: loadable, if not what Paddle writes."""
    d = pb.ProgramDesc()
    b = d.blocks.add()
    b.idx, b.parent_idx = 0, -1
    for name in ("x", "y", "p", "q", "g", "lr", "fc_2.w"):
        v = b.vars.add(name=name, persistable=name in ("p", "q"))
        v.type.type = pb.VarType.LOD_TENSOR
    op = b.ops.add(type="scale")
    op.inputs.add(parameter="X", arguments=["x"])
    op.inputs.add(parameter="Param", arguments=["p", "q"])
    op.inputs.add(parameter="X", arguments=["y"])
    op.inputs.add(parameter="Param", arguments=[])
    op.inputs.add(parameter="Param", arguments=["fc_2.w"])
    op.outputs.add(parameter="Out", arguments=["y", "x"])
    op.attrs.add(name="op_role", type=A.LONG, l=1)
    op.attrs.add(name="op_namescope", type=A.STRING, s="/a/b/")
    op.attrs.add(name="op_role_var", type=A.STRINGS, strings=["fc_2.w", "g"])
    op = b.ops.add(type="sgd")
    for slot, names in (("Grad", ["g"]), ("Param", ["p"]), ("LearningRate", ["lr"])):
        op.inputs.add(parameter=slot, arguments=names)
    op.outputs.add(parameter="ParamOut", arguments=["p"])
    b.ops.add(type="fill_constant").outputs.add(parameter="Out", arguments=["g"])
    op = b.ops.add(type="scale")  # the role attributes given twice, the first counts
    op.inputs.add(parameter="X", arguments=["x"])
    op.attrs.add(name="op_role", type=A.INT, i=0)
    op.attrs.add(name="op_role", type=A.INT, i=2)
    op.attrs.add(name="op_namescope", type=A.STRING, s="/")
    op.attrs.add(name="op_role_var", type=A.STRINGS)
    return d


def _programs():
    yield "training MLP", training_mlp(6, width=4)
    yield "training program", training_program()[0]
    yield "StaticRNN (sub-blocks)", rnn_program()[0]
    yield "odd slots and attributes", kc.Program(_odd_program())


@pytest.mark.parametrize("name, prog", list(_programs()), ids=[n for n, _ in _programs()])
def test_records_from_the_twin_are_the_desc_readers(name, prog):
    data = prog.desc.SerializeToString()
    desc = pb.ProgramDesc.FromString(data)
    twin = parse_checked(data)
    many = len(desc.blocks) > 1
    want = [op_reads.read_ops(b.ops, many) for b in desc.blocks]
    assert op_reads.read_program(twin, desc) == want
    assert any(r[7] for block in want for r in block) or name == "StaticRNN (sub-blocks)"  # Param slots read


def test_a_big_loaded_program_keeps_its_records_until_edited(keep_all):
    prog = paddle_files.program_from_bytes(training_program()[0].desc.SerializeToString())
    kept = prog.outline_reads()
    assert kept is not None
    parts = ProgramParts(prog, prog.version)
    assert [b.recs for b in parts.blocks] == kept            # the outline took them instead of reading again
    prog.global_block().create_var("late", [1])               # an edit through the program's views
    assert prog.outline_reads() is None
    prog2 = paddle_files.program_from_bytes(training_program()[0].desc.SerializeToString())
    prog2.desc.blocks[0].ops[0].type = "relu"                 # an edit of the desc, said with touch()
    prog2.touch()
    assert prog2.outline_reads() is None
    assert ProgramParts(prog2, prog2.version).blocks[0].recs[0][0] == "relu"


def test_small_programs_keep_nothing():
    prog = paddle_files.program_from_bytes(training_program()[0].desc.SerializeToString())
    assert prog.outline_reads() is None  # LAZY_ABOVE ops or fewer: shown whole, no outline


@pytest.mark.parametrize("name, prog", list(_programs()), ids=[n for n, _ in _programs()])
def test_the_outline_from_kept_records_is_the_outline_from_the_desc(name, prog, keep_all):
    loaded = paddle_files.program_from_bytes(prog.desc.SerializeToString())
    from_twin = ProgramParts(loaded, loaded.version)
    from_desc = ProgramParts(kc.Program(loaded.desc), 0)
    assert from_twin.skeleton("p") == from_desc.skeleton("p")
    for b, blk in enumerate(from_desc.blocks):
        groups = list(blk.by_id)
        assert from_twin.contents(b, groups, groups) == from_desc.contents(b, groups, groups)


def _outcome(data: bytes):
    import warnings
    from kernelcore.ir.support import UnsupportedOpsWarning
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnsupportedOpsWarning)
            prog = paddle_files.program_from_bytes(data, source="f.pdmodel")
    except kc.KernelcoreError as e:
        return type(e).__name__, str(e), None
    return "loaded", None, prog


def test_hostile_files_load_alike_through_the_big_programs_path(monkeypatch):
    """Every file of the hostile corpus is refused with the same error, or loads, whether it goes through
    the path of big programs (the structure check told by the twin which ops carry block attributes; the
    records kept) or not; kept records are the desc reader's. Plus blocks that name missing blocks, run
    themselves or hold a block index under another attribute type."""
    from fuzz import hostile_corpus as hc
    files = [hc.build(name)[0] for name in hc.CORPUS]
    for bad in (hc.int_sub_block()[0], hc.block_runs_itself()[0], hc.blocks_run_each_other()[0]):
        files.append(bad.SerializeToString())
    seen_errors = 0
    for data in files:
        monkeypatch.setattr(op_reads, "LAZY_ABOVE", 10**9)
        small = _outcome(data)
        monkeypatch.setattr(op_reads, "LAZY_ABOVE", 0)
        big = _outcome(data)
        assert small[:2] == big[:2]
        if big[2] is not None:
            many = len(big[2].desc.blocks) > 1
            assert big[2].outline_reads() == [op_reads.read_ops(b.ops, many) for b in big[2].desc.blocks]
        else:
            seen_errors += 1
    assert seen_errors >= 3
