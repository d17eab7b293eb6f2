"""What can't run is said up front: a program with op types kernelcore does not define loads (it can be
shown, pruned, edited) with one UnsupportedOpsWarning, and preparing or running it raises one
UnknownOpError naming every such op type with its count and places (block, op index); did-you-mean only
for a name that looks misspelt, never for a PaddlePaddle op kernelcore lacks. `kernelcore show` lists them,
ProgramJSON marks them (`"unsupported": true`) and its DOT draws them with a red dashed border.
"""
from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.formats import paddle_files
from kernelcore.cli import main
from kernelcore.view.display import program_json
from kernelcore.ir.op_names import close_op_types, is_paddle_op, paddle_op_types
from kernelcore.ir.support import UnsupportedOpsWarning, check_supported, unsupported_ops

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "labextension" / "test" / "unsupported-program.json"
NONSENSE = "zz_frobnicate"  # neither Paddle's nor kernelcore's, nothing close to it


def _raw(block, type_, inputs=None, outputs=None):
    """An op desc appended without the registry (as a file written elsewhere may hold it)."""
    op = block.desc.ops.add(type=type_)
    for slot, names in (inputs or {}).items():
        op.inputs.add(parameter=slot, arguments=names)
    for slot, names in (outputs or {}).items():
        op.outputs.add(parameter=slot, arguments=names)
    block.program.touch()


def program_with_unsupported_ops():
    """relu, then (block 0) psroi_pool, NONSENSE, psroi_pool, elementwis_add; a sub-block with psroi_pool and relu
    (psroi_pool: a Paddle op kernelcore does not implement)."""
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2, 3], "float32")
    g.append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    _raw(g, "psroi_pool", {"X": ["y"]}, {"Out": ["s"]})
    _raw(g, NONSENSE, {"X": ["y"]}, {"Out": ["z"]})
    _raw(g, "psroi_pool", {"X": ["x"]}, {"Out": ["s2"]})
    _raw(g, "elementwis_add", {"X": ["x"], "Y": ["y"]}, {"Out": ["w"]})
    sub = prog.create_block(0)
    _raw(sub, "psroi_pool", {"X": ["x"]}, {"Out": ["s3"]})
    sub.append_op("relu", {"X": ["x"]}, {"Out": ["r"]})
    prog.rollback()
    return prog


def test_the_unsupported_types_are_all_found_with_places_and_counts():
    found = {u.type: u for u in unsupported_ops(program_with_unsupported_ops())}
    assert sorted(found) == sorted(["psroi_pool", NONSENSE, "elementwis_add"])
    assert found["psroi_pool"].where == ((0, 1), (0, 3), (1, 0)) and found["psroi_pool"].count == 3
    assert found[NONSENSE].where == ((0, 2),) and found["elementwis_add"].where == ((0, 4),)
    assert found["psroi_pool"].paddle_op and not found[NONSENSE].paddle_op
    assert found["psroi_pool"].suggestions == () and found[NONSENSE].suggestions == ()
    assert found["elementwis_add"].suggestions == ("elementwise_add",)
    assert unsupported_ops(kc.Program()) == []


@pytest.mark.parametrize("how", ["run", "prepare"])
def test_running_or_preparing_names_every_unsupported_op_in_one_error(how):
    prog = program_with_unsupported_ops()
    exe = kc.Executor()
    with pytest.raises(kc.UnknownOpError) as e:
        if how == "run":
            exe.run(prog, feed={"x": np.ones((2, 3), "float32")}, fetch_list=["y"])
        else:
            exe.prepare(prog)
    msg = str(e.value)
    assert "3 op types (5 ops)" in msg
    for text in ("psroi_pool", "x3", "block 0 op #1, #3; block 1 op #0", NONSENSE, "block 0 op #2",
                 "elementwis_add", "did you mean 'elementwise_add'?",
                 "a PaddlePaddle op kernelcore does not implement"):
        assert text in msg, text
    assert "did you mean 'psroi_pool" not in msg  # Paddle's own op types get no did-you-mean
    assert {u.type for u in e.value.unsupported} == {"psroi_pool", NONSENSE, "elementwis_add"}


def test_a_supported_program_passes_the_check():
    prog = kc.Program()
    prog.global_block().create_var("x", [2], "float32")
    prog.global_block().append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    check_supported(prog)  # nothing raised
    assert not any(op["unsupported"] for op in program_json(prog)["blocks"][0]["ops"])


def test_loading_warns_once_with_every_unsupported_op_and_still_loads():
    data = program_with_unsupported_ops().to_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prog = paddle_files.program_from_bytes(data, source="m.pdmodel")
    mine = [w for w in caught if issubclass(w.category, UnsupportedOpsWarning)]
    assert len(mine) == 1
    text = str(mine[0].message)
    assert text.startswith("m.pdmodel: 3 op types (5 ops)") and NONSENSE in text and "elementwis_add" in text
    assert [op.type for op in prog.global_block().ops][:2] == ["relu", "psroi_pool"]


def test_loading_a_supported_program_is_silent():
    prog = kc.Program()
    prog.global_block().create_var("x", [2], "float32")
    prog.global_block().append_op("relu", {"X": ["x"]}, {"Out": ["y"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOpsWarning)
        paddle_files.program_from_bytes(prog.to_bytes())


def test_did_you_mean_is_stricter_than_difflibs_default():
    registered = list(kc.all_op_defs())
    assert close_op_types("elementwis_add", registered) == ["elementwise_add"]
    assert close_op_types("sofmax", registered) == ["softmax"]
    assert close_op_types(NONSENSE, registered) == []
    # a PaddlePaddle op type kernelcore lacks is never "corrected" into one that merely looks alike
    for paddle_op in ("psroi_pool", "kron", "trace", "yolov3_loss", "sequence_pool"):
        assert is_paddle_op(paddle_op) and close_op_types(paddle_op, registered) == [], paddle_op
    # and a name only loosely like a registered one (difflib's default cutoff would offer it) gets nothing
    assert close_op_types("rshp2", ["reshape2"]) == [] and close_op_types("reshape_2", ["reshape2"]) == ["reshape2"]
    with pytest.raises(kc.UnknownOpError) as e:
        kc.Program().global_block().append_op("psroi_pool", {"X": ["x"]}, {"Out": ["s"]})
    assert "did you mean" not in str(e.value) and "PaddlePaddle op" in str(e.value)
    with pytest.raises(kc.UnknownOpError, match="did you mean 'elementwise_add'"):
        kc.Program().global_block().append_op("elementwis_add", {}, {})


def test_the_paddle_op_list_is_paddles():
    names = paddle_op_types()
    assert len(names) > 500 and {"mul", "elementwise_add", "while", "recurrent", "shape", "feed"} <= names
    header = (ROOT / "kernelcore" / "ir" / "paddle_op_types.txt").read_text().splitlines()[:2]
    assert header[1].startswith("# versions:") and "3.3.1" in header[1]


# -- kernelcore show ----------------------------------------------------------------------------------------
def test_show_lists_the_unsupported_ops(tmp_path, capsys):
    path = tmp_path / "m.pdmodel"
    path.write_bytes(program_with_unsupported_ops().to_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnsupportedOpsWarning)  # show says it itself, no warning on top
        assert main(["show", str(path)]) == 0
        out = capsys.readouterr().out
        assert "not runnable here: 3 op types (5 ops)" in out and "block 0 op #1, #3; block 1 op #0" in out
        assert main(["show", str(path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    by_type = {u["type"]: u for u in summary["unsupported_ops"]}
    assert by_type["psroi_pool"] == {"type": "psroi_pool", "count": 3, "where": [[0, 1], [0, 3], [1, 0]],
                                     "paddle_op": True, "suggestions": []}
    assert by_type["elementwis_add"]["suggestions"] == ["elementwise_add"]


def test_run_command_fails_naming_every_unsupported_op(tmp_path, capsys):
    path = tmp_path / "m.pdmodel"
    path.write_bytes(program_with_unsupported_ops().to_bytes())
    assert main(["run", str(path), "--random-feeds"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelcore: error:") and all(t in err for t in ("psroi_pool", NONSENSE, "elementwis_add"))


# -- ProgramJSON and its DOT ----------------------------------------------------------------------------------
def test_program_json_marks_unsupported_ops_and_the_dot_draws_them_red_dashed():
    pj = program_json(program_with_unsupported_ops())
    flags = {(b["idx"], op["idx"]): op["unsupported"] for b in pj["blocks"] for op in b["ops"]}
    assert flags == {(0, 0): False, (0, 1): True, (0, 2): True, (0, 3): True, (0, 4): True, (1, 0): True,
                     (1, 1): False}
    node = next(line for line in pj["dot"].splitlines() if 'id="o0:2"' in line)
    assert "unsupported" in node and 'color="#d32f2f"' in node and "dashed" in node
    assert "no kernel in kernelcore" in node
    relu = next(line for line in pj["dot"].splitlines() if 'id="o0:0"' in line)
    assert "unsupported" not in relu and "dashed" not in relu


def test_widget_schema_declares_the_field():
    import typing

    from kernelcore_widgets.schema import OpJSON
    assert typing.get_type_hints(OpJSON)["unsupported"] is bool
    pj = program_json(program_with_unsupported_ops())
    hints = typing.get_type_hints(OpJSON, include_extras=True)
    required = {k for k, v in hints.items() if typing.get_origin(v) is not typing.NotRequired}
    assert required <= set(pj["blocks"][0]["ops"][0]) <= set(hints)


def test_the_front_end_fixture_is_what_python_writes():
    """labextension/test/unsupported-program.json (read by the vitest test) is this program's ProgramJSON;
    KC_UPDATE_FIXTURES=1 rewrites it."""
    pj = program_json(program_with_unsupported_ops())
    pj["dot"] = ""  # the TypeScript side builds its own DOT; keep the fixture independent of Graphviz
    text = json.dumps(pj, indent=1, sort_keys=True) + "\n"
    if os.environ.get("KC_UPDATE_FIXTURES"):
        FIXTURE.write_text(text)
    assert FIXTURE.read_text() == text


# -- a program Paddle wrote ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def paddle_unsupported(tmp_path_factory) -> Path:
    from test_paddle_parity import ORACLE, PADDLE3, _need, run_paddle
    _need(PADDLE3, "3.3.1")
    out = tmp_path_factory.mktemp("paddle_unsupported")
    run_paddle(PADDLE3, ORACLE / "make_unsupported.py", out)
    return out


@pytest.mark.paddle
def test_a_paddle_program_reports_every_op_kernelcore_lacks(paddle_unsupported):
    meta = json.loads((paddle_unsupported / "unsupported.json").read_text())
    lacking = [t for t in dict.fromkeys(meta["op_types"]) if not kc.ir.registry.has_op(t)]
    if not lacking:
        pytest.skip("kernelcore now has every op of this Paddle program; pick ops it lacks")
    with pytest.warns(UnsupportedOpsWarning) as rec:
        prog = paddle_files.load_program(paddle_unsupported / "unsupported.pdmodel")
    assert all(t in str(rec[0].message) for t in lacking)
    with pytest.raises(kc.UnknownOpError) as e:
        kc.Executor().prepare(prog)
    got = {u.type: u for u in e.value.unsupported}
    assert sorted(got) == sorted(lacking)
    for t, u in got.items():
        assert u.paddle_op and u.suggestions == ()  # Paddle's own ops: no did-you-mean
        assert [i for b, i in u.where] == [i for i, op in enumerate(meta["op_types"]) if op == t]
    assert all(t in str(e.value) for t in lacking)


# -- the report is sized by what it says ---------------------------------------------------------------------
def test_the_report_is_not_padded_to_the_longest_name_and_caps_its_rows():
    from kernelcore.ir.support import MAX_TYPES_SHOWN, describe
    prog = kc.Program()
    g = prog.global_block()
    _raw(g, "q" * 100_000)
    for i in range(1000):
        _raw(g, f"zz_unknown_{i}")
    found = unsupported_ops(prog)
    text = describe(found)
    assert len(text) < 20_000  # the old table padded all 1,001 rows to 100,000 characters: 100 MB
    lines = text.splitlines()
    assert len(lines) == 1 + MAX_TYPES_SHOWN + 1
    assert lines[0].startswith("1001 op types (1001 ops)")
    assert "q" * 64 + "\u2026 (100,000 chars)" in lines[1] and "q" * 65 not in lines[1]
    assert lines[-1] == f"  ... and {1001 - MAX_TYPES_SHOWN} more op types ({1001 - MAX_TYPES_SHOWN} ops)"
    assert max(len(line) for line in lines[2:-1]) < 120  # a short name's row is short


def test_the_report_shows_names_with_their_control_characters_escaped():
    prog = kc.Program()
    _raw(prog.global_block(), "evil\x1b]0;t\x07\u202e\u2028")
    with pytest.raises(kc.UnknownOpError) as e:
        check_supported(prog)
    msg = str(e.value)
    assert "evil\\x1b]0;t\\x07\\u202e\\u2028" in msg
    assert not any(c in msg for c in "\x1b\x07\u202e\u2028")
