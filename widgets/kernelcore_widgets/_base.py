"""The base of the kernelcore widgets: the built ESM/CSS assets and message dispatch."""
from __future__ import annotations

import pathlib
import weakref

import anywidget

from .kernel_targets import pin_to_main_shell
from .requests import MAX_ERROR, brief, error_text

STATIC = pathlib.Path(__file__).parent / "static"
BUILD_HINT = ("the kernelcore front end is not built: run `./dev build` in the kernelcore checkout "
              "(or `npm ci --prefix labextension && npm run build --prefix labextension`), "
              "or install a kernelcore wheel, which ships it prebuilt")


class FrontEndNotBuilt(RuntimeError):
    pass


class KCWidget(anywidget.AnyWidget):
    """A widget whose view is `static/<ClassName>.js` (+ `.css`), built from labextension/src/views/.
    Subclasses name them: `_esm = STATIC / "<ClassName>.js"`, `_css = STATIC / "<ClassName>.css"`.

    Messages from the browser are dicts with a "type"; `_messages()` maps each type to its handler.
    Tests call `handle_message` directly, as the comm would."""

    _asset_paths: dict = {}

    def __init_subclass__(cls, **kw):
        # anywidget reads _esm/_css when the class is made and raises a bare FileNotFoundError for a missing
        # file; a missing build should instead fail when a widget is made, saying how to build it (and a
        # build finished after the import should just work). So the paths are kept here and read in __init__.
        cls._asset_paths = {}
        for key in ("_esm", "_css"):
            value = cls.__dict__.get(key)
            if isinstance(value, pathlib.Path):
                cls._asset_paths[key] = value
                delattr(cls, key)
        super().__init_subclass__(**kw)

    def __init__(self, **kw):
        for key, path in type(self)._asset_paths.items():
            if path.is_file():
                setattr(self, key, path.read_text(encoding="utf-8"))
            elif key == "_esm":
                raise FrontEndNotBuilt(f"{path} is missing: {BUILD_HINT}")
            else:
                setattr(self, key, "")
        super().__init__(**kw)
        # JupyterLab sends a widget's messages over a kernel subshell and deletes that subshell when the comm
        # reconnects: the messages still queued there were lost, and asyncio printed "Task was destroyed but
        # it is pending!" under the next cell. On the main shell they run in order with the cells instead.
        pin_to_main_shell(getattr(self, "comm", None))
        self.on_msg(self._on_custom_msg)

    def follow_moves(self, session, on_move: str) -> None:
        """Call `self.<on_move>()` after each move of `session`, whoever makes it (a cell, the sidebar, another
        widget), until the widget closes. The session holds the widget weakly: a dropped widget costs nothing."""
        me = weakref.ref(self)

        def follow(_sess):
            widget = me()
            if widget is not None:
                getattr(widget, on_move)()
        self._follow, self._followed = follow, session
        session.listeners.append(follow)

    def close(self) -> None:
        session = getattr(self, "_followed", None)
        if session is not None and self._follow in session.listeners:
            session.listeners.remove(self._follow)
        super().close()

    def _on_custom_msg(self, _widget, content, _buffers) -> None:
        self.handle_message(content)

    def _messages(self) -> dict:
        """message type -> handler(content); each widget names its own."""
        return {}

    # what a widget's status line says before the error of a failed message, by message type
    _failed_words: dict = {}

    def handle_message(self, content) -> None:
        """Run the handler of one message. A message that fails, whatever the reason (a malformed request,
        a number past float's range, a nesting too deep to print, an engine error), is answered once: the
        widget's status line says why and a `{"type": "error", "request": type, "error": text}` message goes
        back to the view. Nothing raises into the comm, where the browser would see only silence."""
        kind = content.get("type") if isinstance(content, dict) else None
        handler = self._messages().get(kind) if isinstance(kind, str) else None
        if handler is None:
            self._unknown_message(content)
            self._send_error(kind if isinstance(kind, str) else None, f"unknown message {brief(content)}")
            return
        try:
            handler(content)
        except Exception as e:  # the view must hear back whatever went wrong here
            self.report_error(kind, error_text(e))

    def report_error(self, kind: str | None, text: str) -> None:
        """Say that message `kind` failed with `text`: on the status line (where the widget has one) and
        in an error message to the view."""
        words = self._failed_words.get(kind, f"{kind} failed" if kind else "failed")
        try:
            self._say_error(f"{words}: {text}")
        except Exception:  # a status line that cannot take it: the error message below still goes
            pass
        self._send_error(kind, text)

    def _say_error(self, line: str) -> None:
        if self.has_trait("status"):
            self.status = line

    def _send_error(self, kind: str | None, text: str) -> None:
        try:
            self.send({"type": "error", "request": kind, "error": text[:MAX_ERROR]})
        except Exception:  # a closed comm: the status line still says it
            pass

    def _unknown_message(self, content) -> None:
        if self.has_trait("status"):
            self.status = f"unknown message {brief(content)}"
