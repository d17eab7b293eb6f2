"""The flight recorder's plan check in C (kernelcore/native/row_plan.c) against its reference,
iteration_summaries.name_rows_by_plan: the same rows from the same records of real training loops, the same
refusals where an output is not what the plan says, and the recorder using it where the layouts were checked."""
import numpy as np
import pytest
from hypothesis import event, given, settings, strategies as st

import kernelcore as kc
from kernelcore import native
from kernelcore.native import row_plan
from kernelcore.observe import iteration_summaries
from kernelcore.observe.recorder import record

pytestmark = pytest.mark.skipif(native.library() is None,
                                reason=f"the C kernels are not loaded: {native.native_state()}")
# the tests of the C check itself: where this interpreter's or NumPy's layout is not row_plan.c's, the Python
# check runs instead (test_no_c_check_where_the_layouts_are_not_its_own)
c_check = pytest.mark.skipif(native.library() is None or row_plan.plan_checker() is None,
                             reason="the objects' layout is not row_plan.c's here: the Python check runs")
L = kc.layers


def _viewing_mlp():
    """An MLP whose outputs are every kind a plan row names: arrays the C summary takes, views of them (a
    reshape's, a transpose's: repeats), empty XShape outputs, integers (converted for C: OTHER)."""
    main, startup = kc.Program(), kc.Program()
    with kc.program_guard(main, startup):
        x, y = L.data("x", [-1, 8]), L.data("y", [-1, 1])
        h = L.fc(x, 16, act="tanh")
        flipped = kc.op.transpose2(kc.op.reshape2(h, shape=[-1, 4, 4]), axis=[0, 2, 1])
        back = kc.op.reshape2(flipped, shape=[-1, 16])
        kc.op.arg_max(back, axis=1)  # an int64 output nothing reads
        err = kc.op.elementwise_sub(L.fc(back, 1), y)
        loss = L.mean(kc.op.elementwise_mul(err, err))
        kc.optimizer.SGD(learning_rate=0.05).minimize(loss)
    scope = kc.Scope()
    kc.Executor().run(startup, scope=scope)
    x = np.random.default_rng(0).standard_normal((32, 8)).astype("float32")
    return main, scope, loss, {"x": x, "y": x.sum(1, keepdims=True).astype("float32")}


def _recorded(iterations=3):
    """(the recorder, the last iteration's op records, its plan) after `iterations` of the MLP."""
    main, scope, loss, feed = _viewing_mlp()
    exe = kc.Executor()  # one: its prepared ops are the plan's
    with record(main, scope, keep_last=1) as rec:
        for _ in range(iterations):
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope, training=True)
        rec.drain()
    records = [x for x in rec.kept[-1].items if type(x) is tuple]
    assert rec._plan.fits(records)
    return rec, records, rec._plan


def _both(rec, records, plan):
    reference = iteration_summaries.name_rows_by_plan(records, plan, rec._write, True, rec._address)
    in_c = iteration_summaries.name_rows_by_plan_in_c(records, plan, rec._plan_check, rec._write, rec._address)
    return reference, in_c


def test_a_default_cpython_build_checks_its_plans_in_c():
    # with the GIL and the plain object header (not a free-threaded or trace-refs build), the layouts are
    # row_plan.c's and the probe passes
    import sys
    import sysconfig
    default_build = sys.implementation.name == "cpython" and object.__basicsize__ == 16 and \
        not sysconfig.get_config_var("Py_GIL_DISABLED")
    assert row_plan._interpreter_fits() == default_build
    if default_build:
        assert row_plan._numpy_fits() and row_plan.plan_checker() is not None


@c_check
def test_the_c_check_names_an_iteration_s_rows_as_the_reference_does():
    rec, records, plan = _recorded()
    kinds = {row[0] for row in plan.rows}
    assert kinds == {row_plan.IN_C, row_plan.REPEAT, row_plan.EMPTY, row_plan.OTHER}
    assert any(row[3] for row in plan.rows)  # a row summarised as the array its output views
    reference, in_c = _both(rec, records, plan)
    assert reference is not None and in_c is not None
    # the same C items for the same rows (C lists the OTHER rows' converted arrays after the rest)
    ref_items, c_items = list(reference._items), list(in_c._items)
    by_row = lambda items, rows: {r: tuple(items[3 * k:3 * k + 3]) for k, r in enumerate(rows)}
    ref_by_row, c_by_row = by_row(ref_items, reference._in_c), by_row(c_items, in_c._in_c)
    assert ref_by_row.keys() == c_by_row.keys()
    for r, item in ref_by_row.items():
        if plan.rows[r][0] == row_plan.IN_C:
            assert c_by_row[r] == item  # (an OTHER row's copy is made anew by each)
    assert reference._repeats == in_c._repeats
    reference.fill(rec._many_call)
    in_c.fill(rec._many_call)
    np.testing.assert_array_equal(reference.numbers, in_c.numbers)  # (NaN equal to NaN: the empty rows)
    np.testing.assert_array_equal(reference.numels, in_c.numels)
    np.testing.assert_array_equal(reference.orders, in_c.orders)
    np.testing.assert_array_equal(reference.sites, in_c.sites)


def _replaced(records, plan, what, make):
    """`records` with the first output the plan says is `what` replaced by make(value)."""
    row = next(r for r in plan.rows if r[0] == what)
    order, pos = row[1], row[2]
    out = list(records)
    rec = list(out[order])
    rec[pos] = make(rec[pos])
    out[order] = tuple(rec)
    return out


@c_check
@pytest.mark.parametrize("case, what, make", [
    ("another size", row_plan.IN_C, lambda v: np.zeros(v.size + 1, v.dtype)),
    ("another dtype", row_plan.IN_C, lambda v: v.astype(np.float64)),
    ("not contiguous", row_plan.IN_C, lambda v: np.zeros(2 * v.size, v.dtype)[::2].reshape(v.shape)),
    ("not an ndarray", row_plan.IN_C, lambda v: v.tolist()),
    ("a repeat that is a copy", row_plan.REPEAT, lambda v: v.copy()),
    ("a view no longer whole", row_plan.REPEAT, lambda v: np.zeros(2 * v.size, v.dtype)[:v.size].reshape(v.shape)),
    ("an empty output that is not", row_plan.EMPTY, lambda v: np.zeros(3, v.dtype)),
])
def test_the_c_check_refuses_where_the_reference_does(case, what, make):
    rec, records, plan = _recorded()
    changed = _replaced(records, plan, what, make)
    reference, in_c = _both(rec, changed, plan)
    assert in_c is None and reference is None, case


@c_check
def test_the_recorder_checks_its_plan_in_c_and_writes_the_rows_the_reference_writes(monkeypatch):
    import kernelcore.observe.recorder as recorder_module
    main, scope, loss, feed = _viewing_mlp()
    real, in_python = recorder_module.name_rows_by_plan, []
    monkeypatch.setattr(recorder_module, "name_rows_by_plan", lambda *a: in_python.append(1) or real(*a))
    tables, calls = [], []
    for c_check in (True, False):
        in_python.clear()
        s = kc.Scope()
        for v in scope.local_vars():
            s.set(v.name, np.array(v.value, copy=True))
        exe = kc.Executor()
        with record(main, s) as rec:
            if not c_check:
                rec._plan_check = None
            for _ in range(4):
                exe.run(main, feed=feed, fetch_list=[loss], scope=s, training=True)
        tables.append(rec.summaries.columns())
        calls.append(len(in_python))
    assert calls == [0, 3]  # iterations 2-4 named by their plan: in C, else by the reference
    with_c, reference = tables
    for name in with_c:
        np.testing.assert_array_equal(with_c[name], reference[name], err_msg=name)


@pytest.mark.parametrize("moved", [{"data": 24}, {"nd": 28}, {"base": 56}, {"descr": 48}, {"flags": 68},
                                   {"dimensions": 40, "strides": 32}])
def test_numpy_s_layout_is_checked_field_by_field_before_any_c_call(monkeypatch, moved):
    # another NumPy's array struct, as row_plan.c would misread it: Python's reading of the same words notices
    # (a pointer field is only followed once the words beside it were what Python says)
    assert row_plan._numpy_fits()
    monkeypatch.setattr(row_plan, "ARRAY_FIELDS", {**row_plan.ARRAY_FIELDS, **moved})
    assert not row_plan._numpy_fits()
    monkeypatch.setattr(row_plan, "_checked", None)
    monkeypatch.setattr(row_plan, "_probe", lambda check: pytest.fail("the C check was called"))
    assert row_plan.plan_checker() is None


def test_no_c_check_where_the_layouts_are_not_its_own(monkeypatch):
    monkeypatch.setattr(row_plan, "_checked", None)
    monkeypatch.setattr(row_plan, "_interpreter_fits", lambda: False)
    assert row_plan.plan_checker() is None
    monkeypatch.setattr(row_plan, "_checked", None)
    monkeypatch.setattr(row_plan, "_interpreter_fits", lambda: True)
    monkeypatch.setattr(row_plan, "_probe", lambda check: False)  # C read something other than Python says
    assert row_plan.plan_checker() is None
    monkeypatch.setattr(row_plan, "_checked", None)
    monkeypatch.setattr(row_plan, "enabled", lambda xp: False)  # (the one switch of every C path)
    assert row_plan.plan_checker() is None


@c_check
def test_the_probe_fails_where_c_reads_another_layout():
    # a check that reads every array one word off (as another header size would) is refused by the probe
    real = row_plan._make_check(row_plan._function())

    def shifted(records, table, numbers_address):
        found = real(records, table, numbers_address)
        if found is None:
            return None
        items, in_c, others = found
        items[0] += 8
        return items, in_c, others
    assert row_plan._probe(real) and not row_plan._probe(shifted)


class _Op:
    """What name_rows reads of a prepared op: its outputs' (slot, name) pairs (no inputs in these records)."""

    def __init__(self, outputs: int):
        self.in_pairs = ()
        self.out_pairs = tuple(("Out", f"v{k}") for k in range(outputs))


# how a fuzzed output is made from a generator and the outputs made before it (sizes fixed by the output's place:
# the same kinds make outputs of the same sizes, whatever the values)
_MAKERS = {
    "f32": lambda rng, before: rng.standard_normal(1 + 7 * len(before) % 40).astype(np.float32),
    "f64": lambda rng, before: rng.standard_normal((1 + len(before) % 5, 3)),
    "matrix": lambda rng, before: rng.standard_normal((4, 5)).astype(np.float32),
    "transposed": lambda rng, before: next((b.T for b in reversed(before) if isinstance(b, np.ndarray)
                                            and b.ndim == 2), np.zeros(3, np.float32)),
    "flattened": lambda rng, before: next((b.reshape(-1) for b in reversed(before) if isinstance(b, np.ndarray)
                                           and b.flags.c_contiguous and b.size), np.ones(2, np.float32)),
    "same": lambda rng, before: before[-1] if before else np.zeros(1, np.float32),
    "half": lambda rng, before: np.arange(10, dtype=np.float32)[::2],
    "empty": lambda rng, before: np.zeros((0, 3), np.float32),
    "int": lambda rng, before: rng.integers(-5, 5, 1 + len(before) % 8),
    "bool": lambda rng, before: rng.standard_normal(4) > 0,
    "f16": lambda rng, before: np.ones(3, np.float16),
    "nan": lambda rng, before: np.array([np.nan, 1, -np.inf], np.float32),
    "swapped": lambda rng, before: np.ones(3, ">f4"),
    "number": lambda rng, before: 2.5,
    "nothing": lambda rng, before: None,
    "list": lambda rng, before: [np.ones(2, np.float32)],
}


def _records(kinds_per_op, seed, ops=None):
    rng = np.random.default_rng(seed)
    before, records = [], []
    ops = ops or [_Op(len(kinds)) for kinds in kinds_per_op]
    for order, kinds in enumerate(kinds_per_op):
        values = []
        for kind in kinds:
            v = _MAKERS[kind](rng, before)
            values.append(v)
            before.append(v)
        records.append((order, 0, 0, ops[order], 1, None, "cpu", *values))
    return records, ops


# the kinds a plan row can name, three times as often as what no C check is asked about (numbers, None, lists)
_kind = st.sampled_from([k for k in sorted(_MAKERS) for _ in range(1 if k in ("number", "nothing", "list") else 3)])


@c_check
@settings(max_examples=150, deadline=None)
@given(kinds=st.lists(st.lists(_kind, min_size=1, max_size=4), min_size=1, max_size=8),
       changes=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 3), _kind), max_size=3),
       seed=st.integers(0, 2**16))
def test_fuzzed_records_are_named_by_the_c_check_as_by_the_reference_or_refused_by_both(kinds, changes, seed):
    from kernelcore.observe.health_summary import iteration_writer, summary_writer
    many, ptr = iteration_writer()
    write, check = summary_writer(), row_plan.plan_checker()
    sites = lambda op, timestep: list(range(len(op.out_pairs)))
    records, ops = _records(kinds, seed)
    plan = iteration_summaries.name_rows(records, sites, write, True, ptr).plan
    # the same ops again, some outputs made as another kind: the plan fits their ops, not always their outputs
    again = [list(k) for k in kinds]
    for order, pos, kind in changes:
        if order < len(again) and pos < len(again[order]):
            again[order][pos] = kind
    records2, _ = _records(again, seed + 1, ops)
    assert plan.fits(records2)
    reference = iteration_summaries.name_rows_by_plan(records2, plan, write, True, ptr)
    if plan.table is None:  # an output that was no NumPy array: the check in C is not asked
        event("an output that was no NumPy array")
        return
    in_c = iteration_summaries.name_rows_by_plan_in_c(records2, plan, check, write, ptr)
    assert (in_c is None) == (reference is None)
    event("refused by both" if in_c is None else "named by both")
    if again == kinds:
        assert in_c is not None
    if in_c is not None:
        reference.fill(many)
        in_c.fill(many)
        np.testing.assert_array_equal(in_c.numbers, reference.numbers)
        np.testing.assert_array_equal(in_c.numels, reference.numels)
