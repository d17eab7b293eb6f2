"""Each widget's traits live on the widget class itself: no trait mixin shared between widgets, so a trait's
name means one thing in one place (a Debugger is made of child widgets, not of mixed-in trait sets)."""
import importlib
import pkgutil

import ipywidgets
import pytest
import traitlets as t

import kernelcore_widgets
from kernelcore_widgets._base import KCWidget


def _widget_classes() -> list[type]:
    for info in pkgutil.iter_modules(kernelcore_widgets.__path__):
        importlib.import_module(f"kernelcore_widgets.{info.name}")
    found, todo = [], [KCWidget]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def _trait_mixins(cls: type) -> list[str]:
    """The classes in `cls`'s MRO that bring traits without being widgets."""
    return [base.__name__ for base in cls.__mro__
            if issubclass(base, t.HasTraits) and not issubclass(base, ipywidgets.Widget)
            and base.__module__.startswith("kernelcore_widgets")]


def test_the_widgets_are_found():
    names = {cls.__name__ for cls in _widget_classes()}
    assert {"ProgramGraph", "ScopeForest", "TraceTimeline", "RNNStepper"} <= names


@pytest.mark.parametrize("cls", _widget_classes(), ids=lambda c: c.__name__)
def test_a_widget_mixes_in_no_trait_set(cls):
    assert _trait_mixins(cls) == []


def test_the_graph_keeps_its_debug_trait():
    from kernelcore_widgets.program_graph import ProgramGraph
    assert "debug" in ProgramGraph.class_trait_names(sync=True)


class _Moves:
    """What follow_moves needs of a session: its listeners, called after each move."""

    def __init__(self):
        self.listeners = []

    def move(self):
        for listener in list(self.listeners):
            listener(self)


def test_a_widget_follows_a_sessions_moves_until_it_closes():
    class Counter(KCWidget):
        moves = 0

        def count(self):
            self.moves += 1

    session, widget = _Moves(), Counter()
    widget.follow_moves(session, "count")
    session.move()
    session.move()
    widget.close()
    session.move()
    assert widget.moves == 2 and session.listeners == []
