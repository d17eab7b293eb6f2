"""Browser tests: a real `jupyter lab` on 127.0.0.1 and Debian's Chromium driven by Playwright.

The server runs in its own process group (jupyter may start children) from a temporary root holding copies
of the example notebooks and programs, with a random token, its own config/workspace/settings dirs, and
`expose_app_in_browser` so tests can ask the JupyterLab app for kernel and cell state. It is stopped by
killing its process group. Screenshots go to out/screenshots/. Never `playwright install`: the browser is
/usr/bin/chromium.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab_helpers import CHROMIUM, CHROMIUM_ARGS, EXAMPLES, FRONT_END, ROOT, SHOTS, Lab, _slug  # noqa: F401


def pytest_collection_modifyitems(items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    if not FRONT_END.is_file():
        pytest.skip("front end not built: run ./dev build")
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install -y chromium` (./dev build does this as root)")
    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    root.mkdir()
    for name in EXAMPLES:
        shutil.copy(ROOT / "examples" / name, root / name)
    shutil.copytree(ROOT / "examples" / "programs", root / "programs")
    for d in ("config", "data", "runtime", "workspaces", "settings"):
        (base / d).mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               PYTHONUNBUFFERED="1")
    # this checkout's code and its built JupyterLab extension, whatever the venv has installed (an editable
    # install elsewhere, an older copy under share/jupyter/labextensions): JUPYTER_PATH comes first
    built = ROOT / "widgets" / "kernelcore_widgets" / "labextension"
    if (built / "package.json").is_file():
        ext = base / "data" / "labextensions" / "@kernelcore"
        ext.mkdir(parents=True)
        (ext / "labextension").symlink_to(built, target_is_directory=True)
        env["JUPYTER_PATH"] = os.pathsep.join(p for p in (str(base / "data"), env.get("JUPYTER_PATH")) if p)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "widgets"), env.get("PYTHONPATH")) if p)
    # no "would you like news?" toast over the page
    (base / "config" / "labconfig").mkdir()
    (base / "config" / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    # every cell in the DOM (JupyterLab 4 renders only the cells in view by default)
    nb_settings = base / "settings" / "@jupyterlab" / "notebook-extension"
    nb_settings.mkdir(parents=True)
    (nb_settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", f"--LabApp.workspaces_dir={base / 'workspaces'}",
           f"--LabApp.user_settings_dir={base / 'settings'}", "--LabApp.expose_app_in_browser=True"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = base / "jupyter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    srv = Lab(f"http://127.0.0.1:{port}", token, root, proc, log)
    try:
        deadline = time.time() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{srv.log_tail()}")
            try:
                if srv.get("api/status")[0] == 200:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"jupyter lab did not answer within 90 s:\n{srv.log_tail()}")
            time.sleep(0.5)
        yield srv
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser(lab):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, lab, request):
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    problems: list[str] = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    pg.problems = problems
    yield pg
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        if getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed:
            pg.screenshot(path=str(SHOTS / f"FAILED_{_slug(request.node.name)}.png"))
    finally:
        ctx.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)




PADDLE_PY = ROOT / ".venv-paddle" / "bin" / "python"
PADDLE_KERNEL = "kernelcore-paddle"


@pytest.fixture(scope="session")
def paddle_kernel(lab):
    """A kernelspec in the test Lab's own data dir whose kernel runs in .venv-paddle (Paddle 3 and kernelcore's
    runtime and widget dependencies, installed there by `./dev test`) with this checkout on its path; its name."""
    if not PADDLE_PY.is_file():
        pytest.skip(f"{PADDLE_PY} is missing: `./dev test` sets up the Paddle environment")
    probe = subprocess.run([str(PADDLE_PY), "-c", "import paddle, ipykernel, anywidget, ipywidgets"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"{PADDLE_PY} lacks a kernel's packages (`./dev test` installs them): {probe.stderr[-300:]}")
    spec_dir = lab.root.parent / "data" / "kernels" / PADDLE_KERNEL  # the lab fixture's JUPYTER_PATH entry
    spec_dir.mkdir(parents=True, exist_ok=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [str(PADDLE_PY), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (Paddle + kernelcore)", "language": "python",
        # kernelcore_widgets is a top-level package of the wheel; in the checkout it sits under widgets/
        "env": {"PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "widgets"))), "PYTHONUNBUFFERED": "1"}}))
    status, specs = lab.get("api/kernelspecs")
    if status != 200 or PADDLE_KERNEL not in specs.get("kernelspecs", {}):
        pytest.fail(f"the Lab does not list the {PADDLE_KERNEL} kernelspec written to {spec_dir}: {status} {specs}")
    return PADDLE_KERNEL
