"""What the browser tests share: paths, the Lab handle, screenshots, the theme switch, the debugger sidebar."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
import subprocess

ROOT = Path(__file__).resolve().parents[2]
FRONT_END = ROOT / "widgets" / "kernelcore_widgets" / "static" / "ProgramGraph.js"
SHOTS = ROOT / "out" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.ipynb"))


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def get(self, path: str) -> tuple[int, dict | str]:
        """GET {url}/{path} with the token; (status, parsed JSON or text)."""
        sep = "&" if "?" in path else "?"
        req = urllib.request.Request(f"{self.url}/{path}{sep}token={self.token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, body = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read().decode()
        try:
            return status, json.loads(body)
        except json.JSONDecodeError:
            return status, body

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)[:120]


def shot(target, name: str) -> Path:
    """Save a screenshot of a page or a locator under out/screenshots/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{_slug(name)}.png"
    target.screenshot(path=str(path))
    return path


THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}


def set_theme(page, which: str) -> None:
    """Switch JupyterLab to its "light" or "dark" theme and wait until the theme is in force: its name on the body
    (set once its stylesheet has loaded) and the splash Lab shows while it restyles gone, so a screenshot or a
    colour measured next sees the new theme."""
    name = THEMES[which]
    page.evaluate("name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", name)
    page.wait_for_function("name => document.body.dataset.jpThemeName === name"
                           " && !document.getElementById('jupyterlab-splash')", arg=name, timeout=30_000)


@contextmanager
def in_theme(page, which: str):
    """Lab in the theme `which` for the block, then light again, even when the block fails: the theme is a user
    setting that outlives the page, and the next test expects light."""
    set_theme(page, which)
    try:
        yield
    finally:
        set_theme(page, "light")


def shot_in_themes(page, target, name: str) -> None:
    """Screenshots of `target` in both themes, `{name}_light` and `{name}_dark`; Lab is left light."""
    for which in THEMES:
        with in_theme(page, which):
            shot(target, f"{name}_{which}")


def debugger_sidebar(page):
    """Open the debugger sidebar and return it."""
    page.evaluate("window.jupyterapp.commands.execute('kernelcore:open-debugger')")
    sidebar = page.locator("#jp-kernelcore-debugger")
    sidebar.wait_for()
    return sidebar


def click_command(sidebar, cmd: str) -> None:
    """Click the sidebar's button for the debugger command `cmd` (step, cont, pause, ...)."""
    sidebar.locator(f"button.jp-Kernelcore-cmd-{cmd}").click()


def wait_at(sidebar, text: str) -> None:
    """Wait until the sidebar's position line contains `text`."""
    sidebar.locator(".jp-Kernelcore-dbgPosition", has_text=text).wait_for(timeout=60_000)
