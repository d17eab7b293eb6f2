"""A throwaway JupyterLab server and Debian's Chromium settings, shared by the browser benchmarks
(bench/browser_graph.py, browser_graph_big.py, browser_svg_size.py)."""
from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1500, "height": 1100}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    def __init__(self, base: Path):
        self.base = base
        self.root = base / "root"
        self.root.mkdir(parents=True)
        for d in ("config", "runtime", "workspaces", "settings"):
            (base / d).mkdir()
        (base / "config" / "labconfig").mkdir()
        (base / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
            {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        nb_settings = base / "settings" / "@jupyterlab" / "notebook-extension"
        nb_settings.mkdir(parents=True)
        (nb_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
        self.port, self.token = _free_port(), secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base / "jupyter.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        env = dict(os.environ, JUPYTER_CONFIG_DIR=str(self.base / "config"),
                   JUPYTER_RUNTIME_DIR=str(self.base / "runtime"), PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               f"--LabApp.workspaces_dir={self.base / 'workspaces'}",
               f"--LabApp.user_settings_dir={self.base / 'settings'}", "--LabApp.expose_app_in_browser=True"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.time() + 90
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"jupyter lab did not answer within 90 s:\n{self.log_tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""
