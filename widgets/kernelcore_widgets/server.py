"""The Jupyter server extension: `GET /kernelcore/program?path=<file>` -> the ProgramJSON of a program file
under the server's root (a `.pdmodel`, `__model__` or kernelcore program), so JupyterLab's file viewer can
draw files it cannot parse in the browser; for a program of more than 2,000 ops that is its skeleton
(ProgramJSON 3, kernelcore/view/program_parts.py), and `GET /kernelcore/program/parts?path=<file>&request=<JSON>`
answers the viewer's requests for a group's contents or a search (`{"ok", "error", "result"}`, the parts
kept for a few files by size and mtime). Errors are JSON 4xx, `{"message": ...}`, naming the problem:
a path that leaves the root, is hidden, too long or a symlink loop (400/404), a missing file, a file that is
not a program, a malformed parts request (400), a program, request or reply over a budget (413).

Both routes hold the same budgets (`_load_within_budgets`): a file's size is checked before it is opened,
its ops and variables before anything is laid out. The parts of big files are cached by estimated bytes
(PARTS_CACHE_BYTES), and a parts request is checked by kernelcore.view.program_parts (ids: type, length,
count, repeats answered once; the ops and variables asked for) before its answer is built. The budgets
can be lowered for one server with `--ServerApp.tornado_settings={'kernelcore_budgets': {'MAX_NODES': n}}`
(any of BUDGETS).

The work (parse, ProgramJSON, DOT) runs on a small thread pool, off the server's event loop, so one large
file cannot freeze the server; the request gives up after TIME_BUDGET_S. Hidden files (a path component
starting with '.') are refused unless the server's ContentsManager.allow_hidden is true, as Jupyter's
contents API does. Nothing logged carries the request's query (its `token=`).
"""
from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
import os
import re
import threading
from pathlib import Path

ROUTE = "/kernelcore/program"
PARTS_ROUTE = "/kernelcore/program/parts"  # a big program's groups and search (kernelcore.view.program_parts)
MAX_BYTES = 64 * 1024 * 1024   # the size budget: larger program files are refused (413) before they are read
MAX_NODES = 200_000            # ops + variables: larger programs are refused (413) before they are laid out
TIME_BUDGET_S = 30.0           # the time budget of one request's work (413 past it)
MAX_PATH_CHARS = 4096          # a longer `path` is refused (400) before it reaches the file system
MAX_REQUEST_CHARS = 1 << 20    # a parts request's JSON (tornado's header limit keeps a URL's far smaller)
MAX_REPLY_BYTES = 64 << 20     # a reply's JSON; a larger one is answered 413 instead
# Parts of big files kept for the next request, by path, size and mtime, within PARTS_CACHE_BYTES as
# estimated by _parts_bytes; an entry estimated larger than the whole cache is not kept.
PARTS_CACHE_BYTES = 768 << 20
# Measured (RSS of a ProgramParts and its desc, training MLPs of 5,000 and 54,000 nodes): ~1.8 kB per op
# or variable and ~19 bytes per byte of file; a file probed with long op records kept 47 per byte.
PARTS_BYTES_PER_NODE = 2048
PARTS_BYTES_PER_FILE_BYTE = 24
WORKERS = 2                    # threads doing the work; requests beyond them wait their turn
# the budgets a server's settings may lower (kernelcore_budgets)
BUDGETS = ("MAX_BYTES", "MAX_NODES", "TIME_BUDGET_S", "MAX_REQUEST_CHARS", "MAX_REPLY_BYTES", "PARTS_CACHE_BYTES")

_pool: concurrent.futures.ThreadPoolExecutor | None = None


class ProgramRequestError(ValueError):
    """A request the handler answers with a 4xx (400 unless `status` says otherwise) and this message."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _hidden(parts) -> bool:
    return any(p.startswith(".") and p not in (".", "..") for p in parts)


def resolve_under(root_dir, path: str | None, *, allow_hidden: bool = False) -> Path:
    """`path` (relative to the server root, '/'-separated as the contents API gives it) as a file under
    `root_dir`; ProgramRequestError when it is missing, too long, hidden (unless allow_hidden), leaves the
    root (.., absolute, links), loops through links or is no file."""
    if not path:
        raise ProgramRequestError("missing the 'path' query argument (a program file under the server root)")
    if "\x00" in path:
        raise ProgramRequestError("the path contains a NUL character")
    if len(path) > MAX_PATH_CHARS:
        raise ProgramRequestError(f"the path is {len(path)} characters long; at most {MAX_PATH_CHARS}")
    rel = path.lstrip("/")
    if not allow_hidden and _hidden(rel.split("/")):
        # answered before the file system is asked, so the answer says nothing of whether it exists
        raise ProgramRequestError(f"{path!r} is hidden; this server does not serve hidden files "
                                  f"(ContentsManager.allow_hidden is false)", 404)
    try:
        root = Path(root_dir).resolve()
        full = (root / rel).resolve()
        if full != root and root not in full.parents:
            raise ProgramRequestError(f"{path!r} is outside the server root")
        if not allow_hidden and _hidden(full.relative_to(root).parts):
            raise ProgramRequestError(f"{path!r} is hidden; this server does not serve hidden files "
                                      f"(ContentsManager.allow_hidden is false)", 404)
        if not full.exists():
            raise ProgramRequestError(f"{path!r} does not exist", 404)
        if not full.is_file():
            raise ProgramRequestError(f"{path!r} is not a file")
    except RuntimeError:  # Path.resolve on a symlink loop (Python < 3.13)
        raise ProgramRequestError(f"{path!r} is a loop of symbolic links") from None
    except OSError as e:  # ELOOP, ENAMETOOLONG, EACCES, ...
        raise ProgramRequestError(f"{path!r} cannot be opened: {e.strerror or type(e).__name__}") from None
    return full


def _load_within_budgets(full: Path, path: str):
    """The program in file `full` (the request's `path`), within the size and node budgets: the file's size
    is checked before it is opened, and read no further than the budget (it may grow meanwhile); its ops
    and variables are counted before anything is laid out. Both routes load through here."""
    import kernelcore as kc
    size = full.stat().st_size
    if size > MAX_BYTES:
        raise ProgramRequestError(f"{path!r} is {size} bytes; the viewer opens programs up to {MAX_BYTES}", 413)
    try:
        with open(full, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ProgramRequestError(f"{path!r} cannot be read: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise ProgramRequestError(f"{path!r} grew past {MAX_BYTES} bytes while read; the viewer opens "
                                  f"programs up to {MAX_BYTES}", 413)
    try:
        program = _program_from_bytes(data, str(full))
    except kc.KernelcoreError as e:
        raise ProgramRequestError(f"{path!r} is not a program kernelcore can read: {e}") from None
    del data
    nodes = sum(len(b.ops) + len(b.vars) for b in program.desc.blocks)
    if nodes > MAX_NODES:
        raise ProgramRequestError(f"{path!r} has {nodes} ops and variables; the viewer lays out programs of up "
                                  f"to {MAX_NODES}", 413)
    return program, size, nodes


def _program_from_bytes(data: bytes, source: str):
    """A program file's bytes as a Program, told apart by content as kernelcore.load_program does: Paddle 3's
    PIR `.json` or a serialized ProgramDesc."""
    import kernelcore as kc
    from kernelcore.formats.pir_json import is_pir_json, pir_program_from_bytes
    if is_pir_json(data[:4096]):
        return pir_program_from_bytes(data, source=source)
    return kc.formats.paddle_files.program_from_bytes(data, source=source)


def _parts_bytes(size: int, nodes: int) -> int:
    """What the ProgramParts of a file of `size` bytes and `nodes` ops and variables is taken to keep."""
    return max(nodes * PARTS_BYTES_PER_NODE, size * PARTS_BYTES_PER_FILE_BYTE)


class _PartsCache:
    """ProgramParts by (file, size, mtime), the least recently used dropped first, within `cap` bytes."""

    def __init__(self):
        self._entries: collections.OrderedDict = collections.OrderedDict()  # key -> (parts, bytes)
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            hit = self._entries.get(key)
            if hit is None:
                return None
            self._entries.move_to_end(key)
            return hit[0]

    def put(self, key, parts, nbytes: int, cap: int) -> None:
        with self._lock:
            self._entries.pop(key, None)
            if nbytes > cap:
                return  # kept, it would push out everything else and still be over the cap
            self._entries[key] = (parts, nbytes)
            while sum(b for _p, b in self._entries.values()) > cap:
                self._entries.popitem(last=False)

    def held_bytes(self) -> int:
        with self._lock:
            return sum(b for _p, b in self._entries.values())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_parts = _PartsCache()


def _file_parts(full: Path, path: str, loaded=None):
    """The ProgramParts of program file `full` as it is now (built once per size and mtime while the
    cache keeps it). `loaded`: what _load_within_budgets gave for it, when the caller has it."""
    from kernelcore.view.program_parts import ProgramParts
    st = full.stat()
    key = (str(full), st.st_size, st.st_mtime_ns)
    hit = _parts.get(key)
    if hit is not None:
        return hit
    program, size, nodes = loaded if loaded is not None else _load_within_budgets(full, path)
    parts = ProgramParts(program)
    _parts.put(key, parts, _parts_bytes(size, nodes), PARTS_CACHE_BYTES)
    return parts


def _parts_request(request: str | None) -> dict:
    """A parts request's JSON as a dict, or ProgramRequestError (400; 413 when too long)."""
    request = request or ""
    if len(request) > MAX_REQUEST_CHARS:
        raise ProgramRequestError(f"the 'request' query argument is {len(request)} characters long; at most "
                                  f"{MAX_REQUEST_CHARS}", 413)
    try:
        msg = json.loads(request)
    except RecursionError:  # nested deeper than the parser's recursion limit
        raise ProgramRequestError("the 'request' query argument is nested too deeply") from None
    except ValueError:
        raise ProgramRequestError("the 'request' query argument is not JSON") from None
    if not isinstance(msg, dict):
        raise ProgramRequestError("the 'request' query argument is not a JSON object")
    return msg


def program_file_parts(root_dir, path: str | None, request: str | None, *, allow_hidden: bool = False) -> dict:
    """The answer to one parts request (`request`: its JSON, {"type": "contents"|"search", ...}) about the
    big program file `path`: {"ok", "error", "result"} as the kernel's comm answers; a malformed request
    or one over a cap (kernelcore.view.program_parts) is ProgramRequestError (400 or 413)."""
    from kernelcore.view.program_parts import PartsRequestError
    full = resolve_under(root_dir, path, allow_hidden=allow_hidden)
    msg = _parts_request(request)
    parts = _file_parts(full, path)
    try:
        result = parts.answer(msg)
    except PartsRequestError as e:
        raise ProgramRequestError(f"parts request about {path!r}: {e}", e.status) from None
    if "error" in result:
        return {"ok": False, "error": result["error"], "result": None}
    return {"ok": True, "error": None, "result": result}


def program_file_json(root_dir, path: str | None, *, allow_hidden: bool = False) -> dict:
    """The ProgramJSON of program file `path` under `root_dir` (what the handler answers): a big program's
    skeleton (ProgramJSON 3, `lazy.id` null: the viewer asks PARTS_ROUTE for the rest)."""
    from kernelcore.view.display import program_json
    from kernelcore.view.program_parts import is_big

    full = resolve_under(root_dir, path, allow_hidden=allow_hidden)
    loaded = _load_within_budgets(full, path)
    program = loaded[0]
    if is_big(program):
        out = _file_parts(full, path, loaded).skeleton(None)
    else:
        out = program_json(program)
    out["path"] = path
    return out


def _encoded(body: dict) -> tuple[dict, str]:
    """`body` and its JSON text, or ProgramRequestError (413) when the text is over MAX_REPLY_BYTES."""
    text = json.dumps(body, allow_nan=False)
    if len(text) > MAX_REPLY_BYTES:
        raise ProgramRequestError(f"the reply would be {len(text)} bytes of JSON; the viewer sends at most "
                                  f"{MAX_REPLY_BYTES} (open fewer groups at once)", 413)
    return body, text


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="kernelcore-program")
    return _pool


async def program_response(root_dir, path: str | None, *, allow_hidden: bool = False,
                           budget_s: float | None = None, request: str | None = None) -> tuple[int, dict, str]:
    """(status, JSON body, its text) for a request: the work, encoding included, runs on the thread pool,
    bounded by `budget_s` (default TIME_BUDGET_S). A request past its budget is answered 413; its thread
    finishes in the background (Python cannot stop a thread), and the pool's size bounds how many such
    threads there are. With `request` (a parts request's JSON), the answer is program_file_parts'."""
    budget = TIME_BUDGET_S if budget_s is None else budget_s
    loop = asyncio.get_running_loop()
    if request is not None:
        def work():
            return _encoded(program_file_parts(root_dir, path, request, allow_hidden=allow_hidden))
    else:
        def work():
            return _encoded(program_file_json(root_dir, path, allow_hidden=allow_hidden))
    try:
        body, text = await asyncio.wait_for(loop.run_in_executor(_executor(), work), budget)
        return 200, body, text
    except ProgramRequestError as e:
        status, body = e.status, {"message": str(e), "path": path}
    except asyncio.TimeoutError:
        status, body = 413, {"message": f"{path!r} took longer than {budget:g} s to read and lay out; the "
                                        f"viewer gives each program {budget:g} s", "path": path}
    return status, body, json.dumps(body)


_SECRET = re.compile(r"((?:^|[?&;])(?:token|_xsrf|access_token)=)[^&;#]*", re.I)


def scrub(uri: str) -> str:
    """`uri` with the values of token-like query arguments replaced by `[secret]`."""
    return _SECRET.sub(r"\1[secret]", uri)


def _handler_class():
    import tornado.web
    from jupyter_server.base.handlers import APIHandler

    class ProgramHandler(APIHandler):
        @tornado.web.authenticated
        async def get(self):
            root = self.settings.get("kernelcore_root_dir") or self.settings.get("server_root_dir") or os.getcwd()
            cm = self.settings.get("contents_manager")
            allow_hidden = bool(getattr(cm, "allow_hidden", False))
            path = self.get_query_argument("path", None)
            request = self.get_query_argument("request", None) if self.request.path.endswith("/parts") else None
            if request is None and self.request.path.endswith("/parts"):
                request = ""
            try:
                status, _body, text = await program_response(os.path.expanduser(root), path,
                                                             allow_hidden=allow_hidden, request=request)
            except Exception as e:  # noqa: BLE001 - a bug: a plain 500, logged without the query
                self.log.error("kernelcore: %s %s failed: %s: %s", self.request.method, self.request.path,
                               type(e).__name__, e)
                status, text = 500, json.dumps({"message": f"internal error ({type(e).__name__})", "path": path})
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.finish(text)

        def log_exception(self, typ, value, tb):  # tornado's prints the request's URI, token included
            if isinstance(value, tornado.web.HTTPError):
                self.log.warning("kernelcore: %d %s %s", value.status_code, self.request.method,
                                 scrub(self.request.uri or ""))
            else:
                self.log.error("kernelcore: uncaught %s on %s %s", getattr(typ, "__name__", typ),
                               self.request.method, scrub(self.request.uri or ""))

    return ProgramHandler


def set_budgets(budgets: dict) -> None:
    """Lower (or raise) some of BUDGETS for this process: {name: number}. Unknown names and non-numbers
    are refused, so a mistyped setting does not leave a budget silently at its default."""
    for name, value in budgets.items():
        if name not in BUDGETS:
            raise ValueError(f"kernelcore_budgets: unknown budget {name!r} (one of {', '.join(BUDGETS)})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"kernelcore_budgets: {name} must be a positive number, not {value!r}")
        globals()[name] = value


def _jupyter_server_extension_points():
    return [{"module": "kernelcore_widgets.server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    web_app = serverapp.web_app
    web_app.settings["kernelcore_root_dir"] = serverapp.root_dir
    set_budgets(web_app.settings.get("kernelcore_budgets") or {})
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    handler = _handler_class()
    web_app.add_handlers(".*$", [(url_path_join(web_app.settings["base_url"], PARTS_ROUTE), handler),
                                 (route, handler)])
    serverapp.log.info("kernelcore: program files served at %s", route)
