"""The debugger's comforts as a person uses them in JupyterLab: a value preview's heat map has its colour
scale (light and dark), Pause's F6 key stops a long Continue and the palette offers Pause only while a move
runs, and a graph's "?" lists its keys. Screenshots in out/screenshots/."""
from __future__ import annotations

import pytest

from lab_helpers import debugger_sidebar, in_theme, shot, wait_at
from test_debugger_panels import LONG_RNN
from test_lab import code_cell, run_notebook

pytestmark = pytest.mark.browser

SMALL = '''import numpy as np
import kernelcore as kc
from kernelcore_widgets import ProgramGraph, ScopeForest
prog = kc.Program()
with kc.program_guard(prog):
    g = prog.global_block()
    x = g.create_var("x", [4, 6])
    w = g.create_parameter("w", [6, 6])
    h = g.create_var("h", [4, 6])
    g.append_op("mul", inputs={"X": [x], "Y": [w]}, outputs={"Out": [h]})
scope = kc.Scope()
scope.set("w", (np.arange(36, dtype=np.float32).reshape(6, 6) - 12.5) * 1234.5)'''


def _palette_pause(page) -> dict:
    return page.evaluate("() => ({enabled: window.jupyterapp.commands.isEnabled('kernelcore:pause'),"
                         " label: window.jupyterapp.commands.label('kernelcore:pause')})")


def test_f6_pauses_a_long_continue_and_the_palette_offers_pause_only_while_it_runs(page, lab):
    run_notebook(page, lab, "comforts_pause.ipynb", [LONG_RNN])
    sb = debugger_sidebar(page)
    wait_at(sb, "block 0 op #0 recurrent")
    assert _palette_pause(page) == {"enabled": False, "label": "Kernelcore: Pause the running move"}
    assert "(F6)" in sb.locator("button.jp-Kernelcore-cmd-pause").get_attribute("title")
    sb.locator("button.jp-Kernelcore-cmd-cont").click()
    page.wait_for_selector("#jp-kernelcore-debugger.jp-Kernelcore-isBusy", timeout=10_000)
    assert _palette_pause(page)["enabled"]
    sb.focus()  # the Continue button went disabled under the pointer: the keys go to the sidebar
    page.keyboard.press("F6")
    sb.locator(".jp-Kernelcore-dbgReason", has_text="paused").wait_for(timeout=60_000)
    page.wait_for_selector("#jp-kernelcore-debugger:not(.jp-Kernelcore-isBusy)", timeout=10_000)
    position = sb.locator(".jp-Kernelcore-dbgPosition").text_content()
    assert "recurrent > block 1" in position, position  # stopped inside the loop, far from the end
    assert sb.locator(".jp-Kernelcore-reply").text_content() == ""
    assert not _palette_pause(page)["enabled"]
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems


def test_a_heat_map_has_its_scale_and_a_graph_lists_its_keys(page, lab):
    run_notebook(page, lab, "comforts_scale.ipynb", [SMALL, "ScopeForest(scope)", "ProgramGraph(prog)"])
    forest = code_cell(page, 1).locator(".jp-Kernelcore-ScopeForest").first
    forest.locator(".jp-Kernelcore-varLine", has_text="w").first.click()
    legend = forest.locator(".jp-Kernelcore-previewLegend")
    legend.wait_for(timeout=30_000)
    assert legend.locator(".jp-Kernelcore-previewLegendMin").text_content() == "-1.543e+4"
    assert legend.locator(".jp-Kernelcore-previewLegendMax").text_content() == "2.778e+4"
    assert legend.locator(".jp-Kernelcore-previewLegendZero").count() == 1
    # one line: the numbers are not wrapped, the bar is drawn
    boxes = legend.locator("span").evaluate_all("els => els.map(e => e.getBoundingClientRect())"
                                                ".map(r => ({top: r.top, height: r.height, width: r.width}))")
    assert all(b["height"] < 20 for b in boxes), boxes
    assert legend.locator(".jp-Kernelcore-previewLegendBar").evaluate("e => e.getBoundingClientRect().width") >= 24
    # as narrow as a narrow sidebar: still one line, the numbers whole, the bar narrower
    legend.evaluate("e => { e.style.width = '170px'; }")
    narrow = legend.locator("span").evaluate_all("els => els.map(e => e.getBoundingClientRect().height)")
    assert max(narrow) < 20, narrow
    assert not legend.locator(".jp-Kernelcore-previewLegendMin, .jp-Kernelcore-previewLegendMax").evaluate_all(
        "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)")
    legend.evaluate("e => { e.style.width = ''; }")
    preview = forest.locator(".jp-Kernelcore-preview").first
    shot(preview, "preview_scale_light")
    with in_theme(page, "dark"):
        shot(preview, "preview_scale_dark")

    graph = code_cell(page, 2).locator(".jp-Kernelcore-ProgramGraph").first
    graph.scroll_into_view_if_needed()
    graph.locator("svg g.node").first.wait_for(timeout=60_000)
    help_button = graph.locator(".jp-Kernelcore-keyHelpButton").first
    help_button.click()
    panel = graph.locator(".jp-Kernelcore-keyHelp").first
    panel.wait_for()
    helps = panel.locator("dd").all_text_contents()
    assert "zoom in" in helps and "search names" in helps and len(helps) == 11, helps
    assert panel.locator("dt kbd").first.text_content() == "\u2190"
    # each key beside its help, on its row
    offsets = panel.evaluate("p => [...p.querySelectorAll('dt')].map(dt => Math.abs("
                             "dt.getBoundingClientRect().top - dt.nextElementSibling.getBoundingClientRect().top))")
    assert max(offsets) < 4, offsets
    shot(graph, "graph_key_help_light")
    with in_theme(page, "dark"):
        shot(graph, "graph_key_help_dark")
    help_button.click()
    assert not panel.is_visible()
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
