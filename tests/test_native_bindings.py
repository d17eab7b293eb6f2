"""kernelcore/native's ctypes bindings against kc_native.h: every function the header declares is bound with the
argument and result types of its prototype, and nothing else is. The compiler checks each definition against the
header (every .c includes it, and a missing prototype is an error: build.py), so header and bindings agreeing
means the Python side calls what the C side defines; no version number to raise by hand."""
import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelcore import native

HEADER = Path(native.__file__).with_name("kc_native.h")

# C types of kc_native.h's prototypes -> the ctypes type the bindings must give them (None: void)
C_TO_CTYPES = {
    "void": None,
    "int": ctypes.c_int,
    "int64_t": ctypes.c_int64,
    "float": ctypes.c_float,
    "const char *": ctypes.c_char_p,
    "const float *": ctypes.c_void_p,
    "float *": ctypes.c_void_p,
    "const double *": ctypes.c_void_p,
    "double *": ctypes.c_void_p,
    "const int64_t *": ctypes.c_void_p,
    "int64_t *": ctypes.c_void_p,
    "const void *": ctypes.c_void_p,
}
PROTOTYPE = re.compile(r"KC_EXPORT\s+(?P<ret>[\w\s*]+?)\s*\b(?P<name>kc_\w+)\s*\((?P<args>[^)]*)\)\s*;")


def _without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _type_of(param: str) -> str:
    """The C type of one parameter ("const float *x" -> "const float *")."""
    param = " ".join(param.split())
    m = re.fullmatch(r"(?P<type>.*?[\s*])(?P<name>\w+)", param)
    assert m, f"cannot read the parameter {param!r}"
    return re.sub(r"\s*\*", " *", m["type"].strip())


def header_prototypes(text: str) -> dict[str, tuple[str, list[str]]]:
    """name -> (result type, parameter types) of each KC_EXPORT prototype."""
    found = {}
    for m in PROTOTYPE.finditer(_without_comments(text)):
        args = m["args"].strip()
        params = [] if args in ("", "void") else [_type_of(p) for p in args.split(",")]
        assert m["name"] not in found, f"{m['name']} declared twice"
        found[m["name"]] = (re.sub(r"\s*\*", " *", " ".join(m["ret"].split())), params)
    return found


def _ctypes_of(c_type: str):
    assert c_type in C_TO_CTYPES, f"kc_native.h uses {c_type!r}: say which ctypes type it takes"
    return C_TO_CTYPES[c_type]


def test_the_header_parser_reads_a_prototype_and_rejects_an_unknown_type():
    text = "/* x */ KC_EXPORT void kc_f(const float *x, int64_t n,\n float eps, int threads);\n" \
           "KC_EXPORT const char *kc_g(void);"
    assert header_prototypes(text) == {"kc_f": ("void", ["const float *", "int64_t", "float", "int"]),
                                       "kc_g": ("const char *", [])}
    with pytest.raises(AssertionError):
        _ctypes_of("double")


def mismatches(protos, signatures) -> list[str]:
    """How the bindings (name -> (restype, argtypes)) differ from the header's prototypes; empty when they agree."""
    found = [f"declared, not bound: {n}" for n in sorted(set(protos) - set(signatures))]
    found += [f"bound, not declared: {n}" for n in sorted(set(signatures) - set(protos))]
    for name in sorted(set(protos) & set(signatures)):
        ret, params = protos[name]
        restype, argtypes = signatures[name]
        if _ctypes_of(ret) is not restype:
            found.append(f"{name} returns {ret}, bound as {restype}")
        if list(argtypes) != [_ctypes_of(p) for p in params]:
            found.append(f"{name}({', '.join(params)}) bound as {argtypes}")
    return found


def test_every_prototype_in_the_header_has_the_bindings_types():
    protos = header_prototypes(HEADER.read_text())
    assert len(protos) >= 29  # the kernels and build_info.c's three
    assert mismatches(protos, native.SIGNATURES) == []


def test_a_binding_that_differs_from_its_prototype_is_reported():
    """An int bound where the header says int64_t, a result type changed, a function missing on either side."""
    protos = header_prototypes(HEADER.read_text())
    restype, argtypes = native.SIGNATURES["kc_gelu_f32"]
    narrowed = {**native.SIGNATURES, "kc_gelu_f32": (restype, [ctypes.c_int if t is ctypes.c_int64 else t
                                                               for t in argtypes])}
    assert mismatches(protos, narrowed) == [f"kc_gelu_f32(const float *, float *, int64_t, int) bound as "
                                            f"{narrowed['kc_gelu_f32'][1]}"]
    returning = {**native.SIGNATURES, "kc_native_cpu_level": (ctypes.c_int64, [])}
    assert mismatches(protos, returning) == [f"kc_native_cpu_level returns int, bound as {ctypes.c_int64}"]
    fewer = {k: v for k, v in native.SIGNATURES.items() if k != "kc_clip_f32"}
    assert mismatches(protos, fewer) == ["declared, not bound: kc_clip_f32"]


def test_every_exported_definition_is_declared_in_the_header():
    """A KC_EXPORT definition in a .c without its prototype in kc_native.h would be a function the bindings
    check cannot see (the build also refuses it: -Werror=missing-prototypes)."""
    declared = set(header_prototypes(HEADER.read_text()))
    defined = set()
    for src in HEADER.parent.glob("*.c"):
        defined |= set(re.findall(r"KC_EXPORT\s+[\w\s*]+?\b(kc_\w+)\s*\(", _without_comments(src.read_text())))
    assert defined == declared


@pytest.mark.skipif(native.library() is None, reason=f"the C kernels are not loaded: {native.native_state()}")
@pytest.mark.skipif(shutil.which("nm") is None, reason="no nm to list the library's symbols")
def test_the_loaded_library_exports_what_the_header_declares():
    lib = Path(native.library()._name)
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.split()[1:2] == ["T"]}
    assert exported == set(header_prototypes(HEADER.read_text()))
