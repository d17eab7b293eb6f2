"""Each widget's synced traits as a TypeScript interface (`<Name>Traits`), so a view's model is typed
(anywidget's AnyModel<T>): `model.get('program')` is a ProgramJSON where the Python trait says so.

A trait's TypeScript type comes from its traitlets type (Unicode: string, Int: number, Bool: boolean,
List: an array, Dict: a record; allow_none adds null) unless the trait names it: `.tag(sync=True,
ts="ProgramJSON | null")`, where the names are types of contract.generated.ts or protocol.generated.ts."""
from __future__ import annotations

import re

import traitlets as t

# the front end's own names for what every widget has (anywidget's and ipywidgets' traits are not ours)
_BASE_MODULES = ("ipywidgets", "anywidget", "traitlets")


def _default_type(trait) -> str:
    if isinstance(trait, t.Unicode):
        ts = "string"
    elif isinstance(trait, (t.Int, t.Float)):
        ts = "number"
    elif isinstance(trait, t.Bool):
        ts = "boolean"
    elif isinstance(trait, t.List):
        inner = getattr(trait, "_trait", None)
        ts = f"{_default_type(inner)}[]" if inner is not None else "unknown[]"
    elif isinstance(trait, t.Dict):
        ts = "Record<string, unknown>"
    else:
        ts = "unknown"
    return f"{ts} | null" if getattr(trait, "allow_none", False) and ts != "unknown" else ts


def trait_type(trait) -> str:
    return trait.metadata.get("ts") or _default_type(trait)


def own_traits(cls) -> dict:
    """name -> trait, for the synced traits the kernelcore widget classes declare (in MRO order, base first)."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        if klass.__module__.split(".")[0] in _BASE_MODULES:
            continue
        for name, value in vars(klass).items():
            if isinstance(value, t.TraitType) and value.metadata.get("sync") and not name.startswith("_"):
                out[name] = value
    return out


def interface(cls) -> list[str]:
    lines = [f"/** The synced traits of kernelcore_widgets.{cls.__name__}. */",
             f"export interface {cls.__name__}Traits {{"]
    lines += [f"  {name}: {trait_type(trait)};" for name, trait in own_traits(cls).items()]
    return lines + ["}", ""]


def names_used(classes) -> set[str]:
    words: set[str] = set()
    for cls in classes:
        for trait in own_traits(cls).values():
            words |= set(re.findall(r"[A-Z][A-Za-z]+", trait.metadata.get("ts", "")))
    return words - {"Record", "Array"}
