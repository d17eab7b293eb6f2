"""A scope keeps its id when the debugger travels back to a pause: the scope forest of a past pause, rebuilt from
the trace, names the same scopes (ids and parents) as the live forest did at that pause."""
from __future__ import annotations

from test_debug import start_rnn


def _ids(forest) -> list[tuple[int, int | None]]:
    return sorted((node.id, node.parent) for node in forest)


def test_travelling_back_shows_each_pause_with_the_scope_ids_it_had_live():
    s, _, _ = start_rnn()
    live = []
    while not s.finished:
        live.append(_ids(s.forest()))
        s.step()
    assert any(len(ids) > 1 for ids in live), "the run made no step scope: nothing to compare"
    for pause, ids in enumerate(live):
        s.goto_pause(pause)
        assert not s.at_present
        assert _ids(s.forest()) == ids, f"pause {pause}"
