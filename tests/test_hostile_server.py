"""The server extension's program endpoint against hostile requests: clear 4xx answers, Jupyter's
hidden-file policy, size and time budgets, work off the event loop, no token in what it logs."""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
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
        return pool.submit(asyncio.run, server.program_response(root, path, **kw)).result()[:2]


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


@contextlib.contextmanager
def jupyter_server(root, tmp_path, budgets=None):
    """A real `jupyter server` on 127.0.0.1 with the extension, serving `root` (and `budgets`, the
    kernelcore_budgets setting): yields (get, proc, log), get(query dict, route) -> (status, JSON body, bytes)."""
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
    if budgets:
        cmd.append(f"--ServerApp.tornado_settings={{'kernelcore_budgets': {budgets!r}}}")
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def get(query, route="/kernelcore/program"):
        url = f"http://127.0.0.1:{port}{route}?" + urllib.parse.urlencode({**query, "token": token})
        try:
            with urllib.request.urlopen(url, timeout=60) as r:
                raw = r.read()
                return r.status, json.loads(raw), len(raw)
        except urllib.error.HTTPError as e:
            raw = e.read()
            return e.code, json.loads(raw or b"{}"), len(raw)

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
        yield get, proc, log, token
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def test_real_server_answers_hostile_requests_and_logs_no_token(root, tmp_path):
    """One `jupyter server` with the extension: 4xx with messages for hostile paths, and the token given
    in the query appears nowhere in its log."""
    with jupyter_server(root, tmp_path) as (get, _proc, log, token):
        status, body, _n = get({"path": "models/mlp.pdmodel"})
        assert status == 200 and body["blocks"], body
        assert get({"path": ".secret.pdmodel"})[0] == 404
        status, body, _n = get({"path": "loop_a"})
        assert status == 400 and "loop" in body["message"] or "cannot be opened" in body["message"]
        assert get({"path": "x" * 5000})[0] == 400
        assert get({"path": "absent.pdmodel"})[0] == 404
    text = log.read_text()
    assert "kernelcore: program files served at" in text
    assert token not in text


# -- the parts route under the main route's budgets; hostile parts requests --------------------------------
@pytest.fixture
def big_root(root, monkeypatch):
    """`root` with big.pdmodel, a program sent in parts (LAZY_ABOVE lowered for this test), and an empty
    parts cache."""
    import kernelcore as kc
    from kernelcore.ir import op_reads
    from make_frontend_fixtures import training_mlp
    monkeypatch.setattr(op_reads, "LAZY_ABOVE", 100)
    kc.save_program(training_mlp(20, width=8), root / "models" / "big.pdmodel")
    server._parts.clear()
    yield root
    server._parts.clear()


def parts_answer(root, path, request):
    return answer(root, path, request=request if isinstance(request, str) else __import__("json").dumps(request))


def a_group_with_ops(root, path):
    skel = answer(root, path)[1]
    return max((g for g in skel["blocks"][0]["groups"] if not g["loaded"]), key=lambda g: g["nodes"])["id"]


def test_both_routes_hold_the_same_budgets(big_root, monkeypatch):
    monkeypatch.setattr(server, "MAX_NODES", 50)
    search = {"type": "search", "query": "fc"}
    for status, body in (answer(big_root, "models/big.pdmodel"), parts_answer(big_root, "models/big.pdmodel", search)):
        assert status == 413 and "ops and variables" in body["message"] and "up to 50" in body["message"]
    monkeypatch.setattr(server, "MAX_NODES", 1 << 20)
    opened = []
    monkeypatch.setattr(server, "open", lambda *a, **k: opened.append(a) or open(*a, **k), raising=False)
    monkeypatch.setattr(server, "MAX_BYTES", 1000)
    for status, body in (answer(big_root, "models/big.pdmodel"), parts_answer(big_root, "models/big.pdmodel", search)):
        assert status == 413 and "up to 1000" in body["message"]
    assert opened == []  # refused on its size alone, unread


@pytest.mark.parametrize("request_text, words", [
    ('{"type": "contents", "block": 0, "groups": [{"a": 1}]}', "groups[0] is a dict"),
    ('{"type": "contents", "block": 0, "groups": [["x"]], "loaded": []}', "groups[0] is a list"),
    ('{"type": "contents", "block": 0, "groups": [], "loaded": [{}]}', "loaded[0] is a dict"),
    ('{"type": "search", "query": [1]}', "query must be a string"),
    ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
    ('{"type": "contents", "groups": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
    ("[1]", "not a JSON object"),
])
def test_malformed_parts_requests_are_400(big_root, request_text, words):
    status, body = parts_answer(big_root, "models/big.pdmodel", request_text)
    assert status == 400 and words in body["message"], body


def test_repeated_group_ids_are_answered_once_and_lists_are_capped(big_root, monkeypatch):
    import kernelcore.view.program_parts as pp
    g = a_group_with_ops(big_root, "models/big.pdmodel")
    once = parts_answer(big_root, "models/big.pdmodel", {"type": "contents", "block": 0, "groups": [g]})[1]
    status, many = parts_answer(big_root, "models/big.pdmodel",
                                {"type": "contents", "block": 0, "groups": [g] * 3000, "loaded": [g] * 3000})
    assert status == 200 and once["result"]["ops"]
    assert [o["id"] for o in many["result"]["ops"]] == [o["id"] for o in once["result"]["ops"]]
    monkeypatch.setattr(pp, "MAX_GROUP_IDS", 100)
    status, body = parts_answer(big_root, "models/big.pdmodel", {"type": "contents", "block": 0, "groups": [g] * 101})
    assert status == 413 and "at most 100" in body["message"]


def test_a_reply_over_its_byte_cap_is_413(big_root, monkeypatch):
    monkeypatch.setattr(server, "MAX_REPLY_BYTES", 2000)
    status, body = answer(big_root, "models/mlp.pdmodel")
    assert status == 413 and "at most 2000" in body["message"]
    status, body = parts_answer(big_root, "models/big.pdmodel", {"type": "search", "query": "fc"})
    assert status == 413 and "at most 2000" in body["message"]


def test_the_parts_cache_is_bounded_in_bytes(big_root, monkeypatch):
    import kernelcore as kc
    from make_frontend_fixtures import training_mlp
    kc.save_program(training_mlp(22, width=8), big_root / "models" / "big2.pdmodel")
    search = {"type": "search", "query": "fc"}
    assert parts_answer(big_root, "models/big.pdmodel", search)[0] == 200
    one = server._parts.held_bytes()
    assert one > 0
    monkeypatch.setattr(server, "PARTS_CACHE_BYTES", one + one // 2)  # room for one such entry, not two
    assert parts_answer(big_root, "models/big2.pdmodel", search)[0] == 200
    held = server._parts.held_bytes()
    assert one < held <= one + one // 2  # the first was dropped for the second
    server._parts.clear()
    monkeypatch.setattr(server, "PARTS_CACHE_BYTES", one - 1)
    assert parts_answer(big_root, "models/big.pdmodel", search)[0] == 200
    assert server._parts.held_bytes() == 0  # an entry over the whole cap is not kept


def test_budgets_setting_lowers_budgets_and_refuses_typos(monkeypatch):
    for name in server.BUDGETS:
        monkeypatch.setattr(server, name, getattr(server, name))
    server.set_budgets({"MAX_NODES": 123})
    assert server.MAX_NODES == 123
    with pytest.raises(ValueError, match="unknown budget 'MAX_NODE'"):
        server.set_budgets({"MAX_NODE": 1})
    with pytest.raises(ValueError, match="positive number"):
        server.set_budgets({"MAX_BYTES": "1"})


def _peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's peak RSS from /proc")
def test_real_server_holds_its_budgets_against_big_and_repeated_requests(root, tmp_path):
    """A real server whose node budget is lowered to fit between two generated programs (both over
    LAZY_ABOVE ops, so sent in parts): the bigger is refused by both routes; a ~50 kB URL repeating one
    group id, object ids and a deeply nested request get clear answers; the server stays under 1 GB and
    answers a normal request afterwards."""
    import json
    import urllib.parse
    import kernelcore as kc
    from kernelcore.ir import op_reads
    from make_frontend_fixtures import training_mlp
    big = training_mlp(op_reads.LAZY_ABOVE // 8 + 10, width=8)
    nodes = sum(len(b.ops) + len(b.vars) for b in big.desc.blocks)
    kc.save_program(big, root / "models" / "big.pdmodel")
    kc.save_program(training_mlp(op_reads.LAZY_ABOVE // 8 + 60, width=8), root / "models" / "bigger.pdmodel")
    parts = "/kernelcore/program/parts"
    with jupyter_server(root, tmp_path, budgets={"MAX_NODES": nodes + 10}) as (get, proc, _log, _token):
        search = json.dumps({"type": "search", "query": "fc"})
        for status, body, _n in (get({"path": "models/bigger.pdmodel"}),
                                 get({"path": "models/bigger.pdmodel", "request": search}, parts)):
            assert status == 413 and f"up to {nodes + 10}" in body["message"], body
        status, skel, _n = get({"path": "models/big.pdmodel"})
        assert status == 200 and skel["lazy"]["ops"] > op_reads.LAZY_ABOVE
        g = max((x for x in skel["blocks"][0]["groups"] if not x["loaded"]), key=lambda x: x["nodes"])["id"]
        status, once, once_bytes = get({"path": "models/big.pdmodel", "request": json.dumps(
            {"type": "contents", "block": 0, "groups": [g]})}, parts)
        assert status == 200 and once["result"]["ops"]
        # as long as tornado lets a URL be (its 64 kB header limit)
        repeated = json.dumps({"type": "contents", "block": 0, "groups": [g] * 2400}, separators=(",", ":"))
        assert len(urllib.parse.quote(repeated)) > 40_000
        status, many, many_bytes = get({"path": "models/big.pdmodel", "request": repeated}, parts)
        assert status == 200
        assert [o["id"] for o in many["result"]["ops"]] == [o["id"] for o in once["result"]["ops"]]
        assert many_bytes < 2 * once_bytes
        for request, words in ((json.dumps({"type": "contents", "block": 0, "groups": [{"id": g}]}), "is a dict"),
                               (json.dumps({"type": "contents", "block": 0, "groups": [[g]] * 1000}), "is a list"),
                               ("[" * 9_000 + "]" * 9_000, "nested too deeply")):
            status, body, _n = get({"path": "models/big.pdmodel", "request": request}, parts)
            assert status == 400 and words in body["message"], body
        status, body, _n = get({"path": "models/mlp.pdmodel"})
        assert status == 200 and body["blocks"]
        assert _peak_rss_bytes(proc.pid) < 1 << 30


def test_a_pir_json_program_is_served_within_the_same_budgets(root, monkeypatch):
    """The loader both routes share reads Paddle 3's PIR `.json` too, as kernelcore.load_program does."""
    from test_pir_reader import _bytes, _minimal
    (root / "models" / "relu.json").write_bytes(_bytes(_minimal()))
    status, body = answer(root, "models/relu.json")
    assert status == 200 and {o["type"] for o in body["blocks"][0]["ops"]} >= {"relu"}
    monkeypatch.setattr(server, "MAX_NODES", 2)
    status, body = answer(root, "models/relu.json")
    assert status == 413 and "ops and variables" in body["message"]
