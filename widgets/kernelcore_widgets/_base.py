"""The base of the kernelcore widgets: the built ESM/CSS assets and message dispatch."""
from __future__ import annotations

import pathlib

import anywidget

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
        self.on_msg(self._on_custom_msg)

    def _on_custom_msg(self, _widget, content, _buffers) -> None:
        self.handle_message(content)

    def _messages(self) -> dict:
        """message type -> handler(content); each widget names its own."""
        return {}

    def handle_message(self, content) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        handler = self._messages().get(kind) if isinstance(kind, str) else None
        if handler is None:
            self._unknown_message(content)
            return
        handler(content)

    def _unknown_message(self, content) -> None:
        if self.has_trait("status"):
            self.status = f"unknown message {str(content)[:80]}"
