"""One escaping rule for every message a person reads (kernelcore.text_safety): names from files reach
errors, warnings, reprs and the notebook's text form with their control, bidi and invisible characters
shown as escapes, never raw."""
from __future__ import annotations

import codecs
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given, strategies as st

import kernelcore as kc
from kernelcore.formats import paddle_files
from kernelcore.cli import terminal_safe
from kernelcore.errors import OpRunError
from kernelcore.ir.support import UnsupportedOpsWarning, check_supported
from kernelcore.text_safety import NAME_CHARS_SHOWN, is_unsafe, quote_name, safe_name, safe_text
from kernelcore.view.notebook import program_bundle

# one of each kind the rule covers: C0 (ESC, BEL, CR, NUL), DEL, C1 (CSI), bidi (RLO, ALM, LRI, LRM),
# separators, invisible format characters (ZWSP, ZWJ, BOM, soft hyphen, word joiner, a tag letter), a lone
# surrogate and a noncharacter
UNSAFE = ["\x1b", "\x07", "\r", "\x00", "\x7f", "\x9b", "\u202e", "\u061c", "\u2066", "\u200e", "\u2028", "\u2029",
          "\u200b", "\u200d", "\ufeff", "\u00ad", "\u2060", "\U000e0041", "\ud800", "\ufffe"]
EVIL = "n" + "".join(c for c in UNSAFE if c != "\ud800") + "e"  # what a file can hold (UTF-8: no surrogate)


def raw_unsafe(text: str) -> list[str]:
    """The unsafe characters `text` holds raw (newline and tab count: callers pass one-line texts or
    check names)."""
    return [c for c in text if is_unsafe(c) and c not in "\n\t"]


def unescape(shown: str) -> str:
    """The inverse of safe_name: Python's escapes read back (non-Latin-1 characters pass through)."""
    return codecs.decode(shown.encode("latin-1", "backslashreplace"), "unicode_escape")


# -- the rule ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ch", UNSAFE)
def test_each_unsafe_character_is_shown_as_an_escape(ch):
    expected = {"\r": "\\r"}.get(ch) or ch.encode("unicode_escape").decode("ascii")
    assert safe_name(f"a{ch}b") == f"a{expected}b"
    assert safe_text(f"a{ch}b") == f"a{expected}b"
    assert terminal_safe(f"a{ch}b") == f"a{expected}b"


def test_text_keeps_its_layout_a_name_does_not():
    assert safe_text("a\tb\nnäme \\x1b") == "a\tb\nnäme \\x1b"  # backslashes in a message are left alone
    assert safe_name("a\tb\nnäme \\x1b") == "a\\tb\\nnäme \\\\x1b"
    assert safe_name("日本語 ✓ café") == "日本語 ✓ café"  # what prints as itself stays


def test_quote_name_quotes_escapes_and_cuts():
    assert quote_name("x") == "'x'" and quote_name("it's") == "'it\\'s'"
    assert quote_name("a\x1bb") == "'a\\x1bb'"
    assert quote_name("q" * 1000, 10) == "'qqqqqqqqqq\u2026' (1,000 chars)"
    assert quote_name(3) == "3"


def test_every_unsafe_character_is_one_python_deems_unprintable():
    # safe_name passes a printable name without a backslash through untouched: that is only right if no
    # character of the rule is printable
    assert [hex(c) for c in range(sys.maxunicode + 1) if is_unsafe(chr(c)) and chr(c).isprintable()] == []


@given(st.text())
def test_a_safe_name_holds_no_unsafe_character_and_reads_back(s):
    shown = safe_name(s)
    assert not any(is_unsafe(c) for c in shown) and "\n" not in shown and "\t" not in shown
    assert unescape(shown) == s  # so distinct names are shown distinctly


@given(st.text(), st.text())
def test_distinct_names_are_shown_distinctly(a, b):
    if a != b:
        assert safe_name(a) != safe_name(b) and quote_name(a) != quote_name(b)


@given(st.text())
def test_safe_text_holds_no_unsafe_character_but_newline_and_tab(s):
    shown = safe_text(s)
    assert raw_unsafe(shown) == []
    assert shown.count("\n") == s.count("\n") and shown.count("\t") == s.count("\t")


# -- where names reach messages ---------------------------------------------------------------------------
def program_with_evil_names():
    prog = kc.Program()
    g = prog.global_block()
    g.create_var("x", [2], "float32")
    g.create_var("v" + EVIL, [2], "float32")
    g.append_op("scale", {"X": ["x"]}, {"Out": ["y" + EVIL]})
    g.desc.ops.add(type="zz" + EVIL).inputs.add(parameter="X" + EVIL, arguments=["x" + EVIL])
    prog.touch()
    return prog


def test_the_unknown_op_error_escapes_the_op_type():
    with pytest.raises(kc.UnknownOpError) as e:
        check_supported(program_with_evil_names())
    assert raw_unsafe(str(e.value).replace("\n", "")) == [] and "zzn\\x1b\\x07\\r" in str(e.value)


def test_the_unknown_op_error_of_one_op_is_short_for_a_huge_name():
    with pytest.raises(kc.UnknownOpError) as e:
        kc.Program().global_block().append_op("z" * 1_000_000 + "\x1b", {}, {})
    assert len(str(e.value)) < 300 and "(1,000,001 chars)" in str(e.value) and "\x1b" not in str(e.value)


def test_the_load_warning_escapes_the_op_types():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paddle_files.program_from_bytes(program_with_evil_names().to_bytes(), source="m.pdmodel")
    text = "".join(str(w.message) for w in caught if issubclass(w.category, UnsupportedOpsWarning))
    assert text and raw_unsafe(text.replace("\n", "")) == []


def test_the_feed_error_escapes_the_fed_name_and_the_declared_names():
    prog = program_with_evil_names()
    prog.desc.blocks[0].ops.pop()  # the unknown op: the run must get as far as the feed
    prog.touch()
    with pytest.raises(kc.ProgramError, match="cannot feed") as e:
        kc.Executor().run(prog, feed={"nope" + EVIL: np.ones(2, np.float32)}, scope=kc.Scope())
    msg = str(e.value)
    assert raw_unsafe(msg.replace("\n", "")) == [] and "\n" not in msg and "'vn\\x1b" in msg


def test_the_op_run_error_escapes_the_inputs_it_names():
    err = OpRunError("failed", op_type="scale" + EVIL, block_idx=0, op_idx=1,
                     inputs=(("X" + EVIL, "x" + EVIL, (2,), "float32"),))
    lines = str(err).split("\n")
    assert len(lines) == 2 and all(raw_unsafe(line) == [] for line in lines)
    assert "X" + safe_name(EVIL) + "=x" + safe_name(EVIL) in lines[1]


def test_op_types_in_messages_are_cut():
    err = OpRunError("failed", op_type="s" * 100_000, block_idx=0, op_idx=1)
    assert len(str(err)) < 2 * NAME_CHARS_SHOWN + 100


def test_reprs_and_the_text_form_escape_names():
    prog = program_with_evil_names()
    g = prog.global_block()
    texts = [str(prog), repr(g.var("v" + EVIL)), str(g.var("v" + EVIL)), repr(g.op(0)), str(g.op(1))]
    bundle = program_bundle(prog)
    texts += [bundle["text/plain"], bundle["text/html"]]
    for text in texts:
        assert raw_unsafe(text) == [], text
        assert "\\x1b" in text
    # one line per var and op: a name's newline does not start a line of its own
    assert len(str(prog).splitlines()) == 1 + 3 + 2


def test_a_trace_shows_escaped_op_types():
    from kernelcore.view.display import trace_mimebundle
    body = trace_mimebundle({}, "1 events", {"op" + EVIL: (1, 1000)}, "t")["text/html"]
    assert raw_unsafe(body) == [] and "op" + safe_name(EVIL) in body.replace("&#x27;", "'")
