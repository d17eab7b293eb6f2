"""The Jupyter server extension: `GET /kernelcore/program?path=<file>` -> the ProgramJSON of a program file
under the server's root (a `.pdmodel`, `__model__` or kernelcore program), so JupyterLab's file viewer can
draw files it cannot parse in the browser. Errors are JSON 400s, `{"message": ...}`, naming the problem:
a path that leaves the root, a missing file, a file that is not a program."""
from __future__ import annotations

import json
import os
from pathlib import Path

ROUTE = "/kernelcore/program"
MAX_BYTES = 256 * 1024 * 1024


class ProgramRequestError(ValueError):
    """A request the handler answers with 400 and this message."""


def resolve_under(root_dir, path: str | None) -> Path:
    """`path` (relative to the server root, '/'-separated as the contents API gives it) as a file under
    `root_dir`; ProgramRequestError when it is missing, leaves the root (.., absolute, links) or is no file."""
    if not path:
        raise ProgramRequestError("missing the 'path' query argument (a program file under the server root)")
    if "\x00" in path:
        raise ProgramRequestError("the path contains a NUL character")
    root = Path(root_dir).resolve()
    rel = path.lstrip("/")
    full = (root / rel).resolve()
    if full != root and root not in full.parents:
        raise ProgramRequestError(f"{path!r} is outside the server root")
    if not full.exists():
        raise ProgramRequestError(f"{path!r} does not exist")
    if not full.is_file():
        raise ProgramRequestError(f"{path!r} is not a file")
    return full


def program_file_json(root_dir, path: str | None) -> dict:
    """The ProgramJSON of program file `path` under `root_dir` (what the handler answers)."""
    import kernelcore as kc
    from kernelcore.display import program_json

    full = resolve_under(root_dir, path)
    size = full.stat().st_size
    if size > MAX_BYTES:
        raise ProgramRequestError(f"{path!r} is {size} bytes; the viewer opens programs up to {MAX_BYTES}")
    try:
        program = kc.load_program(full)
    except kc.KernelcoreError as e:
        raise ProgramRequestError(f"{path!r} is not a program kernelcore can read: {e}") from None
    except OSError as e:
        raise ProgramRequestError(f"{path!r} cannot be read: {e.strerror or e}") from None
    out = program_json(program)
    out["path"] = path
    return out


def _handler_class():
    import tornado.web
    from jupyter_server.base.handlers import APIHandler

    class ProgramHandler(APIHandler):
        @tornado.web.authenticated
        def get(self):
            root = self.settings.get("kernelcore_root_dir") or self.settings.get("server_root_dir") or os.getcwd()
            path = self.get_query_argument("path", None)
            try:
                data = program_file_json(os.path.expanduser(root), path)
            except ProgramRequestError as e:
                self.set_status(400)
                self.set_header("Content-Type", "application/json")
                self.finish(json.dumps({"message": str(e), "path": path}))
                return
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(data, allow_nan=False))

    return ProgramHandler


def _jupyter_server_extension_points():
    return [{"module": "kernelcore_widgets.server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    web_app = serverapp.web_app
    web_app.settings["kernelcore_root_dir"] = serverapp.root_dir
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.add_handlers(".*$", [(route, _handler_class())])
    serverapp.log.info("kernelcore: program files served at %s", route)
