"""Scope semantics: variables found through the parents, kids, dropping, threads."""
import gc
import threading
import weakref

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.runtime.scope import Variable


def test_var_finds_or_creates_locally():
    s = kc.Scope()
    v = s.var("x")
    assert s.var("x") is v
    assert s.find_var("x") is v
    assert s.local_var_names() == ["x"]


def test_find_var_walks_parents_and_returns_none_when_absent():
    root = kc.Scope()
    kid = root.new_scope()
    grandkid = kid.new_scope()
    w = root.var("w")
    assert grandkid.find_var("w") is w
    assert grandkid.find_var("nope") is None
    shadow = kid.var("w")
    assert grandkid.find_var("w") is shadow and root.find_var("w") is w


def test_only_a_scope_creates_variables():
    with pytest.raises(kc.ScopeError):
        Variable(object(), "x", 1)


def test_dropping_a_scope_drops_its_variables_and_kids():
    root = kc.Scope()
    kid = root.new_scope()
    gk = kid.new_scope()
    kid.set("a", np.ones(3))
    gk.set("b", np.zeros(2))
    kid.drop()
    assert kid.dropped and gk.dropped
    assert kid.find_var("a") is None and gk.local_var_names() == []
    assert root.kids == []
    with pytest.raises(kc.ScopeError):
        kid.var("again")


def test_a_kid_keeps_its_parent_alive():
    root = kc.Scope()
    kid = root.new_scope()
    ref = weakref.ref(root)
    root.set("w", 1.5)
    del root
    gc.collect()
    assert ref() is not None
    assert kid.get("w") == 1.5


def test_variable_holds_one_typed_value_with_lazy_allocation():
    s = kc.Scope()
    v = s.var("scopes")
    assert not v.is_initialized
    lst = v.get_mutable(list)
    assert lst == [] and v.get() is lst and v.is_type(list)
    with pytest.raises(kc.ScopeError):
        v.get_mutable(dict)
    t = s.var("t")
    with pytest.raises(kc.ScopeError, match="holds no value"):
        t.get()
    t.set(np.ones((2, 3), np.float32))
    assert t.is_type("tensor") and not t.is_type(list)
    assert "float32[2, 3] on CPUPlace" in repr(t)
    for value in (3, 2.5, True, "text"):
        t.set(value)
        assert t.get() == value and t.is_type(type(value))


def test_get_names_what_is_missing():
    with pytest.raises(kc.ScopeError, match="no variable 'ghost'"):
        kc.Scope().get("ghost")


def test_scopes_are_safe_under_threads():
    root = kc.Scope()
    barrier = threading.Barrier(8)
    made = []

    def work(i):
        barrier.wait()
        for k in range(500):
            made.append(root.var(f"v{k % 50}"))
            kid = root.new_scope()
            kid.set(f"k{i}", k)
            if k % 2:
                kid.drop()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(root.local_var_names()) == sorted(f"v{k}" for k in range(50))
    # every thread got the same Variable object for the same name
    by_name = {}
    for v in made:
        assert by_name.setdefault(v.name, v) is v
    assert len(root.kids) == 8 * 250


def test_walk_and_depth():
    root = kc.Scope()
    a = root.new_scope()
    b = a.new_scope()
    c = root.new_scope()
    assert [s.id for s in root.walk()] == [root.id, a.id, b.id, c.id]
    assert (root.depth, a.depth, b.depth) == (0, 1, 2)


def test_a_scope_answers_for_its_own_names_without_asking_its_parents():
    """What the executor binds with: a local variable or None, whether a name is local, and a version that
    moves when the set of local names changes (and only then)."""
    root = kc.Scope()
    kid = root.new_scope()
    w = root.var("w")
    assert kid.local_var("w") is None and not kid.holds("w") and kid.find_var("w") is w
    assert root.local_var("w") is w and root.holds("w")
    before = kid.version
    x = kid.var("x")
    assert kid.version > before and kid.local_var("x") is x and kid.holds("x")
    after_create = kid.version
    kid.set("x", np.ones(2, np.float32))  # a new value, the same names
    assert kid.version == after_create
    kid.erase(["x"])
    assert kid.version > after_create and kid.local_var("x") is None
