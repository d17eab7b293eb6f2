"""What the browser tests share: paths, the Lab handle, screenshots."""
from __future__ import annotations

import json
import re
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
