"""What the browser sends, checked before anything acts on it: the debug comm, the program-parts comm and
the widgets' messages share these checks.

A request is JSON from a page the kernel does not control: any field may be a deeply nested object, an
integer with hundreds of digits, a float that is infinite, or a string of any length. Each check names the
field and what it expected, and raises RequestError, so a handler answers with an error instead of
raising OverflowError from `float(10**400)`, RecursionError from `str()` of a nested object, or storing a
non-string where a name belongs (where it would break every later message).

"Send to notebook" binds a value to a name in the user's namespace: `check_new_name` accepts only names code
can use (identifiers, not keywords, NFKC-normal, not dunder), and `NameTaken` stops an existing name from
being replaced unless the person confirmed it.
"""
from __future__ import annotations

import builtins
import keyword
import math
import reprlib
import unicodedata

import kernelcore as kc

MAX_INT = 2 ** 53 - 1      # the integers a browser's JSON numbers hold exactly
MAX_STR = 1_000            # characters of any name, condition or query in a request
MAX_LIST = 64              # entries of an axes/index list (dimensions of a tensor)
MAX_NAME = 100             # characters of a name bound in the notebook
MAX_PROPOSALS = 1_000      # free names tried after a taken one (x_2 ... x_1000)
MAX_ERROR = 2_000          # characters of an error text sent back

_brief = reprlib.Repr()
_brief.maxlevel, _brief.maxstring, _brief.maxother, _brief.maxlist, _brief.maxdict = 2, 40, 40, 4, 4
_brief.maxlong = 40


class RequestError(kc.KernelcoreError, ValueError):
    """A request from the browser that does not have the shape its command needs."""


def brief(obj) -> str:
    """A short, safe description of anything a request held (bounded depth and length, never raises)."""
    try:
        return _brief.repr(obj)[:80]
    except Exception:  # a repr that fails (an int past Python's digit limit) still gets a description
        return f"<{type(obj).__name__}>"


def error_text(e: BaseException) -> str:
    """What an error reply says of `e` (its type named unless it is one of ours or a ValueError, whose
    messages say what was wrong), bounded."""
    try:
        text = str(e)
    except Exception:
        text = ""
    if not isinstance(e, (kc.KernelcoreError, ValueError)):
        text = f"{type(e).__name__}: {text}"
    return text[:MAX_ERROR]


def int_arg(args: dict, key: str, lo: int = -MAX_INT, hi: int = MAX_INT, default=...) -> int:
    """`args[key]` as an integer in [lo, hi] (booleans are not integers here)."""
    v = args.get(key, None)
    if v is None and default is not ...:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise RequestError(f"{key!r} must be an integer, got {brief(v)}")
    if not lo <= v <= hi:
        raise RequestError(f"{key!r} must be an integer from {lo} to {hi}, got {brief(v)}")
    return v


def opt_int_arg(args: dict, key: str, lo: int = -MAX_INT, hi: int = MAX_INT):
    """`args[key]` as an integer in [lo, hi], or None when absent or null."""
    return None if args.get(key) is None else int_arg(args, key, lo, hi)


def num_arg(args: dict, key: str):
    """`args[key]` as a finite float, or None when absent or null."""
    v = args.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise RequestError(f"{key!r} must be a number, got {brief(v)}")
    if isinstance(v, int) and abs(v) > MAX_INT:
        raise RequestError(f"{key!r} must be a number of at most {MAX_INT} in size, got {brief(v)}")
    if not math.isfinite(v):
        raise RequestError(f"{key!r} must be a finite number, got {brief(v)}")
    return float(v)


def str_arg(args: dict, key: str, default=..., max_len: int = MAX_STR, empty_ok: bool = False) -> str:
    """`args[key]` as a string of at most `max_len` characters (`default` when absent or null, if given)."""
    v = args.get(key)
    if v is None and default is not ...:
        return default
    if not isinstance(v, str):
        raise RequestError(f"{key!r} must be a string, got {brief(v)}")
    if not v and not empty_ok:
        raise RequestError(f"{key!r} must not be empty")
    if len(v) > max_len:
        raise RequestError(f"{key!r} is {len(v)} characters long; at most {max_len}")
    return v


def opt_str_arg(args: dict, key: str, max_len: int = MAX_STR):
    """`args[key]` as a non-empty string, or None when absent, null or empty."""
    v = args.get(key)
    return None if v is None or v == "" else str_arg(args, key, max_len=max_len)


def bool_arg(args: dict, key: str, default: bool = False) -> bool:
    v = args.get(key)
    if v is None:
        return default
    if not isinstance(v, bool):
        raise RequestError(f"{key!r} must be true or false, got {brief(v)}")
    return v


def int_list_arg(args: dict, key: str, max_len: int = MAX_LIST):
    """`args[key]` as a list of at most `max_len` integers in the safe range, or None when absent or null."""
    v = args.get(key)
    if v is None:
        return None
    if not isinstance(v, list) or len(v) > max_len or \
            not all(isinstance(i, int) and not isinstance(i, bool) and abs(i) <= MAX_INT for i in v):
        raise RequestError(f"{key!r} must be a list of at most {max_len} integers, got {brief(v)}")
    return list(v)


def choice_arg(args: dict, key: str, choices: tuple, default=...):
    v = args.get(key)
    if v is None and default is not ...:
        return default
    if not isinstance(v, str) or v not in choices:
        raise RequestError(f"{key!r} must be one of {', '.join(choices)}, got {brief(v)}")
    return v


# -- names bound in the notebook ----------------------------------------------------------------------------
class NameTaken(kc.KernelcoreError, ValueError):
    """`name` already means something in the namespace; `proposed` is a free name beside it. The value is
    bound over `name` only when the request says the person confirmed (`overwrite`)."""

    def __init__(self, name: str, proposed: str | None):
        self.name, self.proposed = name, proposed
        offer = f"; send it as {proposed!r}, or confirm to overwrite {name!r}" if proposed else \
            f"; confirm to overwrite {name!r}, or choose another name"
        super().__init__(f"{name!r} is already defined in the notebook{offer}")

    def to_json(self) -> dict:
        return {"taken": self.name, "proposed": self.proposed}


def check_new_name(name) -> str:
    """`name` if code in a cell can use it as a variable: an identifier of at most MAX_NAME characters that
    is no keyword or soft keyword (`None`, `class`, `match`), NFKC-normal (Python reads `ｋｃ` as `kc`, so
    a value bound under the wide form could never be reached) and not a dunder (`__builtins__` is the
    kernel's own). RequestError saying which rule it breaks otherwise."""
    if not isinstance(name, str):
        raise RequestError(f"the name to send to must be a string, got {brief(name)}")
    if not name.isidentifier() or len(name) > MAX_NAME:
        raise RequestError(f"{brief(name)} is not a Python name (letters, digits and _, at most {MAX_NAME} "
                           f"characters, not starting with a digit)")
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        raise RequestError(f"{name!r} is a Python keyword: a variable cannot be named so")
    if unicodedata.normalize("NFKC", name) != name:
        raise RequestError(f"{name!r} is not in Python's normal form: code would read it as "
                           f"{unicodedata.normalize('NFKC', name)!r}; type that name instead")
    if name.startswith("__") and name.endswith("__"):
        raise RequestError(f"{name!r} is a special (dunder) name that Python and the kernel use themselves")
    return name


def is_taken(name: str, namespace: dict) -> bool:
    """Whether binding `name` would replace or hide something: a name in the namespace, or a builtin."""
    return name in namespace or hasattr(builtins, name)


def free_name(name: str, namespace: dict) -> str | None:
    """The first of `name_2`, `name_3`, ... that is free in `namespace` (None past MAX_PROPOSALS or when
    the result would be too long to send)."""
    for k in range(2, MAX_PROPOSALS + 1):
        candidate = f"{name}_{k}"
        if len(candidate) > MAX_NAME:
            return None
        if not is_taken(candidate, namespace):
            return candidate
    return None


def claim_name(name, namespace: dict, overwrite: bool) -> bool:
    """Check that `name` may be bound in `namespace` now: a usable name (check_new_name) that is free, or
    taken and confirmed (`overwrite`). NameTaken (with a free name to propose) when taken and not confirmed.
    Returns whether binding it replaces something."""
    name = check_new_name(name)
    taken = is_taken(name, namespace)
    if taken and not overwrite:
        raise NameTaken(name, free_name(name, namespace))
    return taken
