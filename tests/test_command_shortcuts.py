"""The command table's shortcuts: Pause has one, and no two commands, nor a command and JupyterLab, share a key."""
import json
from pathlib import Path

import pytest

from kernelcore_widgets.contract.commands import BY_NAME, CONTROLS, MOVES

LAB_SCHEMAS = Path(__file__).resolve().parents[1] / ".venv" / "share" / "jupyter" / "lab" / "schemas"


def _table_keys() -> list[str]:
    return [c.move.keys for c in MOVES] + [c.control.keys for c in CONTROLS]


def _lab_keys() -> set[str]:
    keys = set()
    for path in LAB_SCHEMAS.rglob("*.json"):
        for shortcut in json.loads(path.read_text()).get("jupyter.lab.shortcuts", []):
            keys.update(shortcut.get("keys", []))
    return keys


def test_pause_is_offered_with_a_shortcut_and_only_while_a_move_runs():
    control = BY_NAME["pause"].control
    assert control is not None and control.keys and control.command_id == "kernelcore:pause"
    assert control.while_busy


def test_no_two_commands_share_a_shortcut():
    keys = _table_keys()
    assert len(set(keys)) == len(keys)


@pytest.mark.skipif(not LAB_SCHEMAS.is_dir(), reason="JupyterLab's settings schemas are not installed")
def test_no_shortcut_of_the_table_is_one_of_jupyterlabs():
    lab = _lab_keys()
    assert lab, "JupyterLab's schemas hold shortcuts"
    assert not set(_table_keys()) & lab
