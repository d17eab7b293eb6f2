"""One rule for every message a person reads: characters that act instead of showing are shown as escapes.

Names come from files the user may not have written. A name holding ESC can retitle or clear a terminal,
a carriage return can overwrite the line it sits on, a bidirectional override (U+202E) can make
`gpj.exe` read as `exe.jpg`, and an invisible character (U+200B) can make two different names look alike.
Every text kernelcore writes for a person (error messages, warnings, the text form of a program, the
`kernelcore` command's output, DOT labels) passes what it quotes through this module.

The rule: these characters are UNSAFE and are written as Python escapes (`\\x1b`, `\\u202e`, `\\U000e0041`;
`\\n`, `\\t`, `\\r` for those three):

- C0 controls (U+0000-U+001F), DEL (U+007F) and C1 controls (U+0080-U+009F);
- bidirectional marks, embeddings, overrides and isolates: U+061C, U+200E/F, U+202A-U+202E, U+2066-U+2069;
- line and paragraph separators (U+2028/9), which some viewers break lines at;
- invisible format characters: soft hyphen U+00AD, U+180E, zero-width U+200B-U+200D, U+2060-U+2064,
  the deprecated format controls U+206A-U+206F, the byte order mark U+FEFF, U+FFF9-U+FFFB, and the tag
  characters U+E0000-U+E007F (invisible letters, used to smuggle text);
- lone surrogates (U+D800-U+DFFF), which cannot even be written as UTF-8, and the noncharacters U+FFFE/F,
  which no XML document may hold.

Two uses, two functions:

- `safe_name(name)` is for one name: every unsafe character is escaped, newline and tab included (a
  name never means a line break), and so is the backslash, so distinct names stay distinct on screen
  (`a\\x1b` typed out and `a` + ESC do not look alike). `quote_name(name)` adds quotes, as messages do.
- `safe_text(text)` is for a whole message that kernelcore laid out itself: newline and tab are kept
  (a multi-line message needs them) and backslashes are left alone (messages quote values with repr,
  which already wrote its own escapes). Names inside a message should be passed through safe_name or
  quote_name where the message is built; safe_text is the last guard for text shown as a whole.
"""
from __future__ import annotations

import re

NAME_CHARS_SHOWN = 64  # a message quotes at most this much of one name (then an ellipsis and its length)

_ALWAYS = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064"
           "\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb\ufffe\uffff\U000e0000-\U000e007f")
# In text, newline and tab are layout; everything else of the rule is escaped.
_UNSAFE_IN_TEXT = re.compile(f"[{_ALWAYS}]")
# In a name, newline and tab are escaped too, and the backslash, so the escaped form is unambiguous.
_UNSAFE_IN_NAME = re.compile(f"[{_ALWAYS}\t\n\\\\]")


def is_unsafe(ch: str) -> bool:
    """Whether `ch` (one character) is one that safe_name writes as an escape (the backslash aside)."""
    return ch != "\\" and _UNSAFE_IN_NAME.match(ch) is not None


_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _escape_match(m: re.Match) -> str:
    return _escape(m.group())


def safe_text(text: str) -> str:
    """`text` with every unsafe character but newline and tab written as an escape (a message's layout
    stays; backslashes are left as they are)."""
    return _UNSAFE_IN_TEXT.sub(_escape_match, text)


def safe_name(name) -> str:
    """One name as it may be shown: every unsafe character (newline and tab included) and the backslash
    written as escapes, so distinct names show distinctly. A name that is not a string shows as its repr."""
    if not isinstance(name, str):
        return repr(name)
    if name.isprintable() and "\\" not in name:  # every unsafe character is one Python deems unprintable
        return name
    return _UNSAFE_IN_NAME.sub(_escape_match, name)


def quote_name(name, limit: int | None = None) -> str:
    """A name in single quotes, for messages: safe_name's escapes, and a quote in the name escaped so the
    quotes end where the name does. With `limit`, as short_name cuts it (the length outside the quotes)."""
    if not isinstance(name, str):
        return repr(name)
    cut = limit is not None and len(name) > limit
    body = safe_name(name[:limit] if cut else name).replace("'", "\\'")
    return f"'{body}\u2026' ({len(name):,} chars)" if cut else f"'{body}'"


def short_name(name, limit: int) -> str:
    """safe_name of at most `limit` characters of `name`; a longer name shows an ellipsis and its length
    (a name read from a file may be megabytes long; a line of a message should not be)."""
    if not isinstance(name, str) or len(name) <= limit:
        return safe_name(name)
    return f"{safe_name(name[:limit])}\u2026 ({len(name):,} chars)"
