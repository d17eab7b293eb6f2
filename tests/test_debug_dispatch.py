"""One dispatcher for the debug commands (kernelcore_widgets/dispatch.py): the sidebar's comm, a graph's debug
actions and the Debugger widget run every command through it, with each argument the command table
(kernelcore_widgets/contract/commands.py) declares checked, whatever the other arguments say."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("anywidget")

import kernelcore as kc  # noqa: E402
from kernelcore_widgets import Debugger, comm  # noqa: E402
from kernelcore_widgets.contract.commands import COMMANDS, GRAPH_ACTIONS, MOVE_NAMES  # noqa: E402
from test_graph_debug_actions import _graph  # noqa: E402
from test_widgets import rnn, views  # noqa: E402,F401  - a stub view where the front end is not built

GOOD = {"int": 0, "opt_int": None, "num": None, "str": "x", "opt_str": None, "bool": False, "int_list": None}
BAD = {"int": "1", "opt_int": 1.5, "num": "big", "str": 7, "opt_str": ["x"], "bool": "yes", "int_list": [1, "2"],
       "choice": "bogus"}


def good(arg):
    return arg.choices[0] if arg.kind == "choice" else GOOD[arg.kind]


def session():
    prog, scope, feed, last, hs, names = rnn()
    return prog, kc.debug(prog, feed=feed, fetch_list=[last], scope=scope)


PROG, SESS = session()
CASES = [(c, i) for c in COMMANDS for i in range(len(c.args))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(CASES))
def test_every_declared_argument_is_checked_whatever_the_others_say(case):
    """A wrong value of any argument a command declares is an error reply naming that argument, even where
    another argument (a breakpoint's kind) makes it one the command would not use."""
    command, i = case
    bad = command.args[i]
    args = {a.name: good(a) for a in command.args[:i]}
    args[bad.name] = BAD[bad.kind]
    got = []
    comm.DebugChannel(got.append, lambda: SESS).handle({"type": "request", "id": 1, "command": command.name,
                                                        "args": args})
    replies = [m for m in got if m["type"] == "reply"]
    assert len(replies) == 1 and replies[0]["ok"] is False, (command.name, args, replies)
    assert repr(bad.name) in replies[0]["error"], replies[0]["error"]


@pytest.mark.parametrize("action", GRAPH_ACTIONS, ids=lambda a: a.name)
def test_a_graph_action_and_the_sidebar_refuse_a_bad_argument_in_the_same_words(action):
    prog, sess = session()
    g = _graph(prog, lambda: sess)
    for i, arg in enumerate(action.args()):
        sent = {a.name: good(a) for a in action.args()[:i]} | {arg.name: BAD[arg.kind]}
        got = []
        comm.DebugChannel(got.append, lambda: sess).handle(
            {"type": "request", "id": 1, "command": action.command, "args": {**sent, **action.fixed}})
        g.handle_message({"type": "debug", "action": action.name, **sent})
        reply = next(m for m in got if m["type"] == "reply")
        assert not reply["ok"] and not g.debug["ok"]
        assert g.debug["text"] == f"not done: {reply['error']}"


def test_each_move_message_of_the_debugger_is_the_session_move_of_that_name():
    """The Debugger's step controls, one message per move of the table, move its session as the session's
    own methods move an equal session."""
    _, by_widget = session()
    _, by_hand = session()
    d = Debugger(by_widget)
    sequence = ["step", "step", "next", "step_timestep", "back", "back_timestep", "cont", "reverse_cont",
                "finish", "step_timestep", "back"]
    assert set(sequence) == set(MOVE_NAMES)
    for name in sequence:
        d.handle_message({"type": name})
        getattr(by_hand, name)()
        assert (by_widget.pause_index, str(by_widget.position)) == (by_hand.pause_index, str(by_hand.position)), name
        assert d.position == str(by_hand.position) and "unknown" not in d.stop_reason
