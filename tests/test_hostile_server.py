"""The server extension's program endpoint against hostile requests: clear 4xx answers, Jupyter's
hidden-file policy, size and time budgets, work off the event loop, no token in what it logs."""
from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("jupyter_server")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "widgets"))

from kernelcore_widgets import server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MLP = (ROOT / "examples/programs/mlp.pdmodel").read_bytes()


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    (r / "models").mkdir(parents=True)
    (r / "models" / "mlp.pdmodel").write_bytes(MLP)
    (r / ".hidden").mkdir()
    (r / ".hidden" / "mlp.pdmodel").write_bytes(MLP)
    (r / ".secret.pdmodel").write_bytes(MLP)
    (r / "loop_a").symlink_to(r / "loop_b")
    (r / "loop_b").symlink_to(r / "loop_a")
    (r / "to_hidden.pdmodel").symlink_to(r / ".secret.pdmodel")
    return r


def answer(root, path, **kw):
    # on a thread of its own: a session-scoped browser (Playwright's sync API) keeps an event loop running
    # in this one, and asyncio.run refuses to start inside a running loop
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, server.program_response(root, path, **kw)).result()


def test_good_request_is_answered_from_a_worker_thread(root, monkeypatch):
    threads = []
    real = server.program_file_json
    monkeypatch.setattr(server, "program_file_json",
                        lambda *a, **k: threads.append(threading.current_thread().name) or real(*a, **k))
    status, body = answer(root, "models/mlp.pdmodel")
    assert status == 200 and body["path"] == "models/mlp.pdmodel" and body["blocks"]
    assert threads and threads[0].startswith("kernelcore-program")  # not the event loop's thread


@pytest.mark.parametrize("path, status, problem", [
    ("loop_a", 400, "loop of symbolic links|cannot be opened"),
    ("x" * 5000, 400, "characters long"),
    ("models/" + "y" * 300 + ".pdmodel", 400, "cannot be opened|does not exist"),
    (".secret.pdmodel", 404, "hidden"),
    (".hidden/mlp.pdmodel", 404, "hidden"),
    ("models/../.hidden/mlp.pdmodel", 404, "hidden"),
    ("to_hidden.pdmodel", 404, "hidden"),
    (".absent.pdmodel", 404, "hidden"),  # the same answer whether or not it exists
])
def test_hostile_paths_get_clear_4xx(root, path, status, problem):
    got, body = answer(root, path)
    assert got == status and __import__("re").search(problem, body["message"])


def test_hidden_files_are_served_when_allowed(root):
    status, body = answer(root, ".hidden/mlp.pdmodel", allow_hidden=True)
    assert status == 200 and body["blocks"]


def test_size_and_node_budgets(root, monkeypatch):
    monkeypatch.setattr(server, "MAX_BYTES", 100)
    status, body = answer(root, "models/mlp.pdmodel")
    assert status == 413 and "bytes" in body["message"]
    monkeypatch.setattr(server, "MAX_BYTES", 1 << 30)
    monkeypatch.setattr(server, "MAX_NODES", 3)
    status, body = answer(root, "models/mlp.pdmodel")
    assert status == 413 and "ops and variables" in body["message"]


def test_time_budget(root, monkeypatch):
    monkeypatch.setattr(server, "program_file_json", lambda *a, **k: time.sleep(1.0) or {})
    status, body = answer(root, "models/mlp.pdmodel", budget_s=0.05)
    assert status == 413 and "longer than 0.05 s" in body["message"]


def test_scrub_hides_tokens():
    uri = "/kernelcore/program?path=a.pdmodel&token=abc123&_xsrf=zzz"
    out = server.scrub(uri)
    assert "abc123" not in out and "zzz" not in out and "path=a.pdmodel" in out
    assert server.scrub("/x?token=s3cr3t") == "/x?token=[secret]"


def test_real_server_answers_hostile_requests_and_logs_no_token(root, tmp_path):
    """One `jupyter server` with the extension: 4xx with messages for hostile paths, and the token given
    in the query appears nowhere in its log."""
    import json
    import os
    import secrets
    import signal
    import socket
    import subprocess
    import urllib.error
    import urllib.parse
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(16)
    for d in ("config", "runtime", "data"):
        (tmp_path / d).mkdir()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp_path / "config"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTER_DATA_DIR=str(tmp_path / "data"), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "widgets"), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", "--ServerApp.jpserver_extensions={'kernelcore_widgets.server': True}"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def get(path):
        url = f"http://127.0.0.1:{port}/kernelcore/program?" + urllib.parse.urlencode({"path": path, "token": token})
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        status, body = get("models/mlp.pdmodel")
        assert status == 200 and body["blocks"], body
        assert get(".secret.pdmodel")[0] == 404
        status, body = get("loop_a")
        assert status == 400 and "loop" in body["message"] or "cannot be opened" in body["message"]
        assert get("x" * 5000)[0] == 400
        assert get("absent.pdmodel")[0] == 404
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    text = log.read_text()
    assert "kernelcore: program files served at" in text
    assert token not in text
