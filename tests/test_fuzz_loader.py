"""Corrupt program and parameter files: the loaders return a well-formed value or raise
kc.LoadError, never anything else (no DecodeError, struct.error, UnicodeDecodeError,
MemoryError from a size the file claims, ...)."""
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kernelcore as kc
from kernelcore.formats import paddle_files
from kernelcore.cli import program_summary
from kernelcore.ir.proto import framework_pb2 as pb

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "programs"
MODEL = (EXAMPLES / "mlp.pdmodel").read_bytes()
PARAMS = (EXAMPLES / "mlp.pdiparams").read_bytes()
NAMES = paddle_files.persistable_names(paddle_files.program_from_bytes(MODEL))

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_or_error(data: bytes):
    """program_from_bytes, checking that whatever it accepts is a usable program."""
    try:
        prog = paddle_files.program_from_bytes(data, source="fuzz.pdmodel")
    except kc.LoadError as e:
        assert "fuzz.pdmodel" in str(e)
        return None
    assert isinstance(prog, kc.Program)
    str(prog)                       # the text form (`kernelcore show`)
    program_summary(prog)           # the JSON summary (`kernelcore show --json`)
    paddle_files.persistable_names(prog)
    again = paddle_files.program_from_bytes(prog.to_bytes())  # and it survives a round trip
    assert again == prog
    return prog


def params_or_error(data: bytes, names=NAMES):
    try:
        out = paddle_files.params_from_bytes(data, names, source="fuzz.pdiparams")
    except kc.LoadError as e:
        assert "fuzz.pdiparams" in str(e)
        return None
    assert list(out) == sorted(names)
    assert all(isinstance(a, np.ndarray) for a in out.values())
    return out


# ---------------------------------------------------------------------------
def test_every_truncation_of_a_real_pdmodel():
    accepted = [n for n in range(len(MODEL)) if load_or_error(MODEL[:n]) is not None]
    # a cut between two top-level fields leaves a well-formed (smaller) program: the blocks
    # are written first, so only cuts after block 0 qualify
    assert all(n > len(MODEL) // 2 for n in accepted)
    assert load_or_error(MODEL) is not None


def test_every_truncation_of_a_real_pdiparams():
    for n in range(len(PARAMS)):
        assert params_or_error(PARAMS[:n]) is None, n  # every prefix lacks a tensor or part of one
    assert params_or_error(PARAMS) is not None


def test_empty_files(tmp_path):
    empty = tmp_path / "empty.pdmodel"
    empty.write_bytes(b"")
    with pytest.raises(kc.LoadError, match="empty"):
        kc.load_program(empty)
    with pytest.raises(kc.LoadError, match="holds 0 tensor"):
        kc.load_params(empty, NAMES)
    assert paddle_files.params_from_bytes(b"", []) == {}  # nothing expected, nothing there: fine


def test_a_file_too_big_for_a_program_is_refused_unread(tmp_path):
    huge = tmp_path / "huge.pdmodel"
    with open(huge, "wb") as f:
        f.truncate(2 ** 31)  # sparse: costs no disk, and must cost no memory either
    with pytest.raises(kc.LoadError, match="at most"):
        kc.load_program(huge)


def test_blocks_that_reference_missing_blocks():
    d = pb.ProgramDesc()
    d.ParseFromString(MODEL)
    sub = d.blocks.add(idx=1, parent_idx=0)
    sub.ops.add(type="relu")
    cases = []
    a = pb.ProgramDesc()
    a.CopyFrom(d)
    a.blocks[0].ops[1].attrs.add(name="sub_block", type=pb.AttrType.BLOCK, block_idx=4)
    cases.append(a)
    b = pb.ProgramDesc()
    b.CopyFrom(d)
    b.blocks[0].ops[1].attrs.add(name="blocks", type=pb.AttrType.BLOCKS, blocks_idx=[1, 2])
    cases.append(b)
    c = pb.ProgramDesc()
    c.CopyFrom(d)
    c.blocks[1].parent_idx = 5
    cases.append(c)
    e = pb.ProgramDesc()
    e.CopyFrom(d)
    e.blocks[0].parent_idx = 0  # block 0 its own parent: a cycle
    cases.append(e)
    for desc in cases:
        with pytest.raises(kc.LoadError, match="block"):
            paddle_files.program_from_bytes(desc.SerializeToString())
    assert load_or_error(d.SerializeToString()) is not None  # the well-formed one loads


def test_pdiparams_with_a_wrong_length(tmp_path):
    prog = paddle_files.program_from_bytes(MODEL)
    for data in (PARAMS[:-1], PARAMS + b"\x00", PARAMS + PARAMS[:40], PARAMS[:-64]):
        path = tmp_path / "w.pdiparams"
        path.write_bytes(data)
        with pytest.raises(kc.LoadError, match="w.pdiparams"):
            kc.load_params(path, prog)


# ---------------------------------------------------------------------------
@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(MODEL) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_byte_flips_in_a_pdmodel(flips):
    data = bytearray(MODEL)
    for pos, value in flips:
        data[pos] = value
    load_or_error(bytes(data))


@FUZZ
@given(st.integers(0, len(MODEL)), st.integers(0, len(MODEL)), st.binary(max_size=16))
def test_splices_in_a_pdmodel(start, length, insert):
    load_or_error(MODEL[:start] + insert + MODEL[start + length:])


@FUZZ
@given(st.binary(max_size=512))
def test_random_bytes_as_a_program(data):
    load_or_error(data)


@FUZZ
@given(st.binary(max_size=512), st.lists(st.text(min_size=1, max_size=8), max_size=4, unique=True))
def test_random_bytes_as_parameters(data, names):
    params_or_error(data, names)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, len(PARAMS) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_byte_flips_in_a_pdiparams(flips):
    data = bytearray(PARAMS)
    for pos, value in flips:
        data[pos] = value
    params_or_error(bytes(data))


@FUZZ
@given(st.integers(0, len(PARAMS)), st.integers(0, 64), st.binary(max_size=16))
def test_splices_in_a_pdiparams(start, length, insert):
    params_or_error(PARAMS[:start] + insert + PARAMS[start + length:])


@FUZZ
@given(st.data())
def test_header_fields_with_huge_or_odd_values(data):
    """Overwrite one of the first tensor's header integers with an arbitrary value."""
    # offset -> size: LoD-tensor version, LoD level count, tensor version, TensorDesc size
    fields = {0: 4, 4: 8, 12: 4, 16: 4}
    pos = data.draw(st.sampled_from(sorted(fields)))
    size = fields[pos]
    value = data.draw(st.integers(0, 2 ** (8 * size) - 1))
    raw = bytearray(PARAMS)
    raw[pos:pos + size] = value.to_bytes(size, "little")
    params_or_error(bytes(raw))


def _tensor_with_header(data_type: int, dims: list, body: bytes) -> bytes:
    desc = pb.VarType.TensorDesc(data_type=data_type, dims=dims).SerializeToString()
    return struct.pack("<IQ", 0, 0) + struct.pack("<Ii", 0, len(desc)) + desc + body


# a dim drawn near the edges that break arithmetic: 0, 1, small, and around 2**31, 2**32, 2**62, 2**63
_EDGE_DIM = st.one_of(st.integers(0, 8), st.integers(-2, 2 ** 63 - 1),
                      st.sampled_from([2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 61, 2 ** 62, 2 ** 63 - 1]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 9, 20, 21, 22, 23, 24]), st.lists(_EDGE_DIM, max_size=6),
       st.binary(max_size=64))
def test_pdiparams_tensor_headers_with_any_dims(data_type, dims, body):
    """Any data type and dims in a tensor's header, with whatever bytes follow: a LoadError or an array
    of exactly the declared shape, never NumPy's own error about the shape."""
    out = params_or_error(_tensor_with_header(data_type, dims, body), ["w"])
    if out is not None:
        assert list(out["w"].shape) == dims


# ---------------------------------------------------------------------------
# the parts protocol's requests (kernelcore/view/program_parts.py), as the comm and the server's parts route get them
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
                     | st.text(max_size=300),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=20)


@pytest.fixture(scope="module")
def mlp_parts():
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_frontend_fixtures import training_mlp
    from kernelcore.view.program_parts import ProgramParts
    return ProgramParts(training_mlp(6, width=4))


def _group_id_lists(parts):
    real = [g["id"] for g in parts.blocks[0].groups]
    one = st.one_of(st.sampled_from(real), st.none(), _JSON)
    return st.one_of(st.lists(one, max_size=12), _JSON)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(st.data())
def test_parts_requests_with_any_group_ids(mlp_parts, data):
    """Any JSON in a contents request's fields: the comm's `handle` answers (an error or the contents, each
    asked group's ops once), and `answer` raises nothing but PartsRequestError."""
    from kernelcore.view.program_parts import PartsRequestError
    msg = {"type": data.draw(st.sampled_from(["contents", "search"]) | _JSON),
           "block": data.draw(st.sampled_from([0, 0, 1, -1]) | _JSON),
           "groups": data.draw(_group_id_lists(mlp_parts)),
           "loaded": data.draw(_group_id_lists(mlp_parts)),
           "query": data.draw(st.text(max_size=20) | _JSON)}
    out = mlp_parts.handle(msg)
    assert isinstance(out, dict)
    if "ops" in out:
        ids = [o["id"] for o in out["ops"]]
        assert len(ids) == len(set(ids))
    try:
        mlp_parts.answer(msg)
    except PartsRequestError as e:
        assert e.status in (400, 413) and str(e)
