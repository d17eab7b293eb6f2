"""PIR programs built by hand, for what the op table's rows do beyond naming slots: XShape named for the reshapes
(their gradients read it), infinite constants (Paddle writes them as "INF"), assign_value_'s values by dtype.
Paddle-written programs for every row: tests/test_pir_reader.py and tests/test_pir_op_table_sweep.py.
"""
import json

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import LoadError
from kernelcore.formats.paddle_files import fetch_target_names
from kernelcore.formats.pir_json import pir_program_from_bytes


def _tensor(dims, elem="t_f32"):
    return {"#": "0.t_dtensor", "D": [{"#": f"0.{elem}"}, dims, "NCHW", [], 0]}


def _attr(name, kind, value):
    key = "VD" if kind == "a_f64" and isinstance(value, str) else "D"
    return {"N": name, "AT": {"#": f"{'1' if kind in ('a_intarray', 'a_dtype') else '0'}.{kind}", key: value}}


def _program(ops) -> bytes:
    return json.dumps({"base_code": {"magic": "pir", "version": 4, "trainable": False},
                       "program": {"regions": [{"#": "region_0", "blocks": [
                           {"#": "block_0", "args": [], "ops": ops}]}]}}).encode()


def _data(vid, dims):
    return {"#": "1.data", "A": [_attr("name", "a_str", "x")], "I": [], "O": [{"%": vid, "TT": _tensor(dims)}]}


def _fetch(vid, out):
    return {"#": "1.fetch", "A": [_attr("col", "a_i32", 0)], "I": [{"%": vid}], "O": [{"%": out, "TT": _tensor([])}]}


def _full(vid, value):
    return {"#": "1.full", "A": [_attr("shape", "a_intarray", [1]), _attr("value", "a_f64", value),
                                 _attr("dtype", "a_dtype", "float32")], "I": [], "O": [{"%": vid, "TT": _tensor([1])}]}


def _run(prog, x):
    out, = kc.Executor().run(prog, feed={"x": x}, fetch_list=fetch_target_names(prog), scope=kc.Scope())
    return out


def test_a_pir_reshape_is_differentiated_like_a_legacy_one():
    """PIR's reshape gives no XShape; the reader names one as legacy programs do, and reshape2_grad reads it."""
    prog = pir_program_from_bytes(_program([
        _data(1, [2, 6]),
        {"#": "1.full_int_array", "A": [_attr("value", "a_intarray", [3, 4])], "I": [],
         "O": [{"%": 2, "TT": _tensor([2], "t_i64")}]},
        {"#": "1.reshape", "A": [], "I": [{"%": 1}, {"%": 2}], "O": [{"%": 3, "TT": _tensor([3, 4])}]},
        _fetch(3, 4)]))
    reshape = next(op for op in prog.global_block().ops if op.type == "reshape2")
    assert reshape.output("XShape")
    block = prog.global_block()
    out = block.var(fetch_target_names(prog)[0])
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    weight = block.create_var("w", [3, 4], "float32", stop_gradient=True)
    dx, = kc.gradients([out], [block.var("x")], target_gradients=[weight])
    scope = kc.Scope()
    scope.set("w", w)
    x = np.ones((2, 6), np.float32)
    got, = kc.Executor().run(prog, feed={"x": x}, fetch_list=[dx.name], scope=scope, training=True)
    np.testing.assert_array_equal(got, w.reshape(2, 6))


@pytest.mark.parametrize("lower, upper", [(-1.0, "INF"), ("-INF", 1.0)])
def test_an_infinite_constant_reads_as_paddle_writes_it(lower, upper):
    """JSON has no infinity: Paddle writes {"VD": "INF"} in place of the number, here a clip's bound."""
    prog = pir_program_from_bytes(_program([
        _data(1, [4]), _full(2, lower), _full(3, upper),
        {"#": "1.clip", "A": [], "I": [{"%": 1}, {"%": 2}, {"%": 3}], "O": [{"%": 4, "TT": _tensor([4])}]},
        _fetch(4, 5)]))
    x = np.array([-3.0, -0.5, 0.5, 3.0], np.float32)
    want = np.clip(x, None if lower == "-INF" else lower, None if upper == "INF" else upper)
    np.testing.assert_array_equal(_run(prog, x), want)


def test_a_nan_constant_fills_a_tensor():
    prog = pir_program_from_bytes(_program([
        _data(1, [3]), _full(2, "NaN"),
        {"#": "1.full_like", "A": [_attr("dtype", "a_dtype", "float32")], "I": [{"%": 1}, {"%": 2}],
         "O": [{"%": 3, "TT": _tensor([3])}]},
        _fetch(3, 4)]))
    assert np.isnan(_run(prog, np.zeros(3, np.float32))).all()


def test_a_special_float_paddle_does_not_write_is_refused():
    with pytest.raises(LoadError, match="INF, -INF or NaN"):
        pir_program_from_bytes(_program([_data(1, [3]), _full(2, "HUGE"), _fetch(1, 3)]), source="m.json")


def _assign_value(dtype: str, values: list, elem: str) -> bytes:
    kind = "a_f64" if dtype.startswith("float") else "a_i64"
    return _program([
        _data(1, [2]),
        {"#": "1.assign_value_", "A": [
            _attr("shape", "a_array", [{"#": "0.a_i32", "D": len(values)}]), _attr("dtype", "a_dtype", dtype),
            _attr("values", "a_array", [{"#": f"0.{kind}", "D": v} for v in values])],
         "I": [{"%": 1}], "O": [{"%": 2, "TT": _tensor([len(values)], elem)}]},
        _fetch(2, 3)])


@pytest.mark.parametrize("dtype, elem", [("float32", "t_f32"), ("int64", "t_i64"), ("int32", "t_i32")])
def test_assign_value_keeps_its_values_in_the_slot_of_its_dtype(dtype, elem):
    prog = pir_program_from_bytes(_assign_value(dtype, [1, 2], elem))
    got = _run(prog, np.zeros(2, np.float32))
    assert got.dtype == np.dtype(dtype) and got.tolist() == [1, 2]


def test_assign_value_of_a_dtype_kernelcore_does_not_hold_values_for_is_refused():
    with pytest.raises(LoadError, match="assign_value_ of dtype"):
        pir_program_from_bytes(_assign_value("float16", [1.0], "t_f16"), source="m.json")


def _arange_to_numel(dtype: str, elem: str) -> bytes:
    def full(vid, value):
        return {"#": "1.full", "A": [_attr("shape", "a_intarray", [1]), _attr("value", "a_f64", value),
                                     _attr("dtype", "a_dtype", "int64")], "I": [],
                "O": [{"%": vid, "TT": _tensor([1], "t_i64")}]}
    return _program([
        _data(1, [6]),
        {"#": "1.numel", "A": [], "I": [{"%": 1}], "O": [{"%": 2, "TT": _tensor([], "t_i64")}]},
        full(3, 0.0), full(4, 1.0),
        {"#": "1.arange", "A": [_attr("dtype", "a_dtype", dtype)], "I": [{"%": 3}, {"%": 2}, {"%": 4}],
         "O": [{"%": 5, "TT": _tensor([-1], elem)}]},
        _fetch(5, 6)])


def test_an_arange_to_a_computed_end_runs():
    """arange's end may come from another op (numel here, as paddle.combinations writes it); the constants beside
    it take the dtype arange states."""
    prog = pir_program_from_bytes(_arange_to_numel("int64", "t_i64"))
    got = _run(prog, np.zeros(6, np.float32))
    assert got.dtype == np.int64 and got.tolist() == list(range(6))


def test_an_arange_whose_computed_end_is_of_another_dtype_is_refused():
    with pytest.raises(LoadError, match="or of its dtype float32"):
        pir_program_from_bytes(_arange_to_numel("float32", "t_f32"), source="m.json")


def test_a_row_whose_legacy_op_no_module_registers_says_the_pir_op_has_no_counterpart(monkeypatch):
    """A row may name an op before its kernel lands: the file is refused as for an op with no row (which the API
    sweep counts as a missing op), naming both."""
    from kernelcore.formats import pir_reader
    from kernelcore.formats.pir_op_spec import OUT, X, PirOp
    monkeypatch.setitem(pir_reader.PIR_OPS, "pd_op.relu", PirOp("no_such_kernel_op", X, OUT))
    data = _program([_data(1, [3]), {"#": "1.relu", "A": [], "I": [{"%": 1}], "O": [{"%": 2, "TT": _tensor([3])}]},
                     _fetch(2, 3)])
    with pytest.raises(LoadError, match="no counterpart for PIR op 'pd_op.relu' in this build .*no_such_kernel_op"):
        pir_program_from_bytes(data, source="m.json")


def test_a_tensor_array_is_written_in_place_and_stacked():
    """dy2static's lists: create_array declares the array, array_write_ and increment_ write into the variables
    of the operands they alias (the array, the counter), array_to_tensor stacks what was written."""
    def op(kind, ins, outs, attrs=()):
        return {"#": f"1.{kind}", "A": list(attrs), "I": [{"%": i} for i in ins], "O": outs}
    index = op("full", [], [{"%": 3, "TT": _tensor([1], "t_i64")}],
               [_attr("shape", "a_intarray", [1]), _attr("value", "a_f64", 0.0), _attr("dtype", "a_dtype", "int64")])
    prog = pir_program_from_bytes(_program([
        _data(1, [2]),
        op("create_array", [], [{"%": 2, "TT": {"#": "1.t_dtensor_array"}}], [_attr("dtype", "a_dtype", "float32")]),
        index,
        op("array_write_", [2, 1, 3], [{"%": 4, "TT": {"#": "1.t_dtensor_array"}}]),
        op("increment_", [3], [{"%": 5, "TT": _tensor([1], "t_i64")}], [_attr("value", "a_f32", 1.0)]),
        op("exp", [1], [{"%": 6, "TT": _tensor([2])}]),
        op("array_write_", [2, 6, 3], [{"%": 7, "TT": {"#": "1.t_dtensor_array"}}]),
        op("array_to_tensor", [2], [{"%": 8, "TT": _tensor([2, 2])}, {"%": 9, "TT": _tensor([2], "t_i32")}],
           [_attr("axis", "a_i32", 0), _attr("use_stack", "a_bool", True)]),
        _fetch(8, 10)]))
    x = np.array([0.5, -1.0], np.float32)
    np.testing.assert_allclose(_run(prog, x), np.stack([x, np.exp(x)]), rtol=1e-6)


def test_svdvals_differentiates_as_a_legacy_svd_whose_u_and_vh_the_reader_names():
    """PIR's svdvals gives S alone; legacy svd's gradient reads U and VH, so the reader names them.
    d sum(S)/dX = U V^T (the reduced factors)."""
    prog = pir_program_from_bytes(_program([
        _data(1, [3, 2]),
        {"#": "1.svdvals", "A": [], "I": [{"%": 1}], "O": [{"%": 2, "TT": _tensor([2])}]},
        _fetch(2, 3)]))
    block = prog.global_block()
    dx, = kc.gradients([block.var(fetch_target_names(prog)[0])], [block.var("x")])
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], np.float32)
    s, got = kc.Executor().run(prog, feed={"x": x}, fetch_list=[fetch_target_names(prog)[0], dx.name],
                               scope=kc.Scope(), training=True)
    u, want_s, vh = np.linalg.svd(x.astype(np.float64), full_matrices=False)
    np.testing.assert_allclose(s, want_s, rtol=1e-5)
    np.testing.assert_allclose(got, u @ vh, rtol=1e-4, atol=1e-5)
