"""Paddle 3's PIR `.json` programs open from JupyterLab's file browser as kernelcore graphs; other JSON files
keep opening as JSON."""
from __future__ import annotations

import json
import re

from lab_helpers import ROOT, shot_in_themes

FACTORY = "Kernelcore Graph"


def _tiny_pir() -> dict:
    """data -> relu -> fetch, in the shape Paddle 3 writes (the document tests/test_pir_reader.py also reads)."""
    return json.loads((ROOT / "tests" / "golden" / "pir_data_relu_fetch.json").read_text())


def _open_from_browser(page, name: str) -> None:
    page.locator(".jp-DirListing-itemText", has_text=re.compile(rf"^{re.escape(name)}$")).dblclick()


def test_a_pir_json_opens_as_a_graph_and_other_json_as_json(page, lab):
    folder = lab.root / "pir_open"
    folder.mkdir(exist_ok=True)
    (folder / "tiny_model.json").write_text(json.dumps(_tiny_pir()))
    (folder / "settings.json").write_text(json.dumps({"magic_number": 42, "note": "not a program"}, indent=1))
    page.goto(f"{lab.url}/lab?reset&token={lab.token}")
    page.wait_for_selector("#jp-main-dock-panel", timeout=60_000)

    # "Open With > Kernelcore Graph" is offered for every .json, and is the default for none
    factories = page.evaluate("""() => {
        const r = window.jupyterapp.docRegistry;
        return { offered: r.preferredWidgetFactories('pir_open/settings.json').map(f => f.name),
                 default: r.defaultWidgetFactory('pir_open/settings.json').name };
    }""")
    assert FACTORY in factories["offered"], factories
    assert factories["default"] != FACTORY, factories

    _open_from_browser(page, "pir_open")
    _open_from_browser(page, "tiny_model.json")
    view = page.locator(".jp-Kernelcore-fileView")
    view.locator("svg g.node.jp-Kernelcore-op").first.wait_for(timeout=60_000)
    ops = [t.strip() for t in view.locator("svg g.node.jp-Kernelcore-op text").all_text_contents()]
    assert "relu" in ops, ops
    assert page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").inner_text().strip() == "tiny_model.json"
    shot_in_themes(page, page, "pir_json_graph")

    _open_from_browser(page, "settings.json")
    page.wait_for_function(
        "() => document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current')"
        "?.textContent.trim() === 'settings.json'")
    # it opens with JupyterLab's own default for JSON (the JSON viewer, or the editor without it)
    page.wait_for_function("() => (window.jupyterapp.shell.currentWidget?.node.textContent ?? '').includes('magic_number')")
    opened = page.evaluate("""() => {
        const w = window.jupyterapp.shell.currentWidget;
        return { kernelcore: !!w.node.querySelector('.jp-Kernelcore-fileView'),
                 json: !!w.node.querySelector('.jp-RenderedJSON, .cm-content') };
    }""")
    assert opened == {"kernelcore": False, "json": True}, opened
    assert page.locator(".jp-Kernelcore-fileView").count() == 1  # the PIR file's view only
    shot_in_themes(page, page, "plain_json_editor")
    assert not [p for p in page.problems if "kernelcore" in p.lower()], page.problems
