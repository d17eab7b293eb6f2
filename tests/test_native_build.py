"""kernelcore/native/build.py and the loader: portable builds (a library per x86-64 level, none for the build
machine's own CPU), the level the loader picks, a library built from other sources refused, and the one switch
that turns every C path off."""
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelcore import native
from kernelcore.native import build

NATIVE_DIR = native.LIBRARY.parent
X86 = build.is_x86_64()
needs_library = pytest.mark.skipif(native.library() is None,
                                   reason=f"the C kernels are not loaded: {native.native_state()}")
needs_levels = pytest.mark.skipif(not X86 or os.environ.get("KERNELCORE_CFLAGS") is not None
                                  or not build.library_path(NATIVE_DIR, "x86-64-v3").exists(),
                                  reason="the x86-64 levels are not built here")
needs_compiler = pytest.mark.skipif(not sys.platform.startswith("linux")
                                    or shutil.which(os.environ.get("CC", "cc")) is None, reason="no C compiler")


def test_no_build_is_made_for_the_build_machines_cpu(monkeypatch):
    """A wheel carries what build.py makes: -march=native there would stop another CPU with an illegal
    instruction. On x86-64 the baseline library is built for plain x86-64 and two more for v3 and v4."""
    monkeypatch.delenv("KERNELCORE_CFLAGS", raising=False)
    plans = build.planned_builds()
    assert not any("native" in flag for _, flags in plans for flag in flags)
    if X86:
        assert [level for level, _ in plans] == ["x86-64", "x86-64-v3", "x86-64-v4"]
        assert all(f"-march={level}" in flags for level, flags in plans)
        assert build.library_path(NATIVE_DIR, "x86-64") == native.LIBRARY
    monkeypatch.setenv("KERNELCORE_CFLAGS", "-O2 -march=native")
    assert build.planned_builds() == [(None, ["-O2", "-march=native"])]


def _mnemonics(library: Path) -> set[str]:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)], capture_output=True, text=True,
                         check=True).stdout
    return {m.group(1) for m in re.finditer(r"^\s+[0-9a-f]+:\s+([a-z][a-z0-9]*)", out, flags=re.M)}


# instructions past the x86-64 baseline (SSE2) that a compiler emits for float loops and bit tricks: SSSE3,
# SSE4.1/4.2, POPCNT, BMI, LZCNT, MOVBE; every VEX or EVEX one (AVX and later) starts with "v"
PAST_BASELINE = {"pshufb", "palignr", "ptest", "roundss", "roundsd", "roundps", "roundpd", "blendps", "blendpd",
                 "blendvps", "blendvpd", "pblendvb", "pblendw", "insertps", "extractps", "pextrd", "pextrq",
                 "pinsrd", "pinsrq", "pinsrb", "pextrb", "pmulld", "pminsd", "pmaxsd", "pminud", "pmaxud", "dpps",
                 "pmovsxdq", "pmovzxdq", "pcmpeqq", "pcmpgtq", "crc32", "popcnt", "lzcnt", "tzcnt", "andn",
                 "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx", "sarx", "shlx", "shrx",
                 "movbe"}


@needs_levels
@pytest.mark.skipif(shutil.which("objdump") is None, reason="no objdump to read the libraries")
def test_the_baseline_library_runs_on_any_x86_64_cpu_and_v3_has_no_avx512():
    base = _mnemonics(native.LIBRARY)
    assert not {m for m in base if m.startswith("v") and m != "verr" and m != "verw"}
    assert not base & PAST_BASELINE
    v3 = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(build.library_path(NATIVE_DIR, "x86-64-v3"))],
                        capture_output=True, text=True, check=True).stdout
    assert "%zmm" not in v3 and "%k1" not in v3
    v4 = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(build.library_path(NATIVE_DIR, "x86-64-v4"))],
                        capture_output=True, text=True, check=True).stdout
    assert "%zmm" in v4  # the level that gains from 512-bit vectors has them


def _state_under(value: str) -> str:
    code = "from kernelcore import native; print(native.native_state())"
    return subprocess.run([sys.executable, "-c", code], env={**os.environ, native.ENV: value}, capture_output=True,
                          text=True, check=True).stdout.strip()


@needs_library
@needs_levels
def test_the_loader_takes_the_highest_level_the_cpu_runs_capped_by_the_switch():
    cpu = native.library().kc_native_cpu_level()
    assert 1 <= cpu <= 4
    best = max(n for n in (1, 3, 4) if n <= cpu)
    assert native.library().kc_native_level().decode() == native.LEVELS[best]
    assert _state_under("x86-64").startswith("libkernelcore_cpu.so (x86-64): ")
    assert _state_under("x86-64-v3").startswith(
        "libkernelcore_cpu.x86-64-v3.so (x86-64-v3): " if cpu >= 3 else "libkernelcore_cpu.so (x86-64): ")


def _p(a) -> int:
    return a.ctypes.data


@needs_library
@needs_levels
def test_every_level_gives_the_same_values():
    """Elementwise kernels and the fused GEMM give the same bits at every level that fuses (x86-64-v3 and up);
    the baseline multiplies and adds (KC_FMA), and sums vectorised at another width add their lanes in another
    order (layer_norm's mean here): those within float32 rounding."""
    cpu = native.library().kc_native_cpu_level()
    levels = [name for n, name in native.LEVELS.items() if n in (1, 3, 4) and n <= cpu]
    rng = np.random.default_rng(5)
    x = (3 * rng.standard_normal((16, 999))).astype(np.float32)
    a = rng.standard_normal((13, 300)).astype(np.float32)
    b = rng.standard_normal((300, 70)).astype(np.float32)
    results = []
    for level in levels:
        lib, state, _ = native.open_library(NATIVE_DIR, level)
        assert lib is not None and lib.kc_native_level().decode() == level, state
        gelu = np.empty_like(x)
        lib.kc_gelu_f32(_p(x), _p(gelu), x.size, 2)
        packed = np.empty(3 * 32 * 300, np.float32)
        lib.kc_pack_columns_f32(_p(b), 70, 1, _p(packed), 300, 70)
        gemm = np.empty((13, 70), np.float32)
        lib.kc_gemm_packed_f32(_p(a), 300, 1, _p(packed), None, 0, _p(gemm), 13, 300, 70, 2)
        norm, mean, var = np.empty_like(x), np.empty(16, np.float32), np.empty(16, np.float32)
        lib.kc_layer_norm_f32(_p(x), None, None, _p(norm), _p(mean), _p(var), 16, 999, 1e-5, 2)
        results.append((gelu, gemm, norm))
    fused = [r for level, r in zip(levels, results) if level != "x86-64"]
    for gelu, gemm, norm in fused[1:]:
        np.testing.assert_array_equal(gelu, fused[0][0])
        np.testing.assert_array_equal(gemm, fused[0][1])
    for gelu, gemm, norm in results[1:]:
        for got, want in zip((gelu, gemm, norm), results[0]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(300))


def _copy_sources(dest: Path) -> Path:
    dest.mkdir()
    for p in build.source_files(NATIVE_DIR):
        shutil.copy2(p, dest / p.name)
    return dest


def _open_in_child(directory: Path) -> list:
    """open_library(directory) in a fresh process (this one keeps a library it opened mapped by its name)."""
    code = ("import json, sys; from pathlib import Path; from kernelcore import native\n"
            "lib, state, stale = native.open_library(Path(sys.argv[1]))\n"
            "print(json.dumps([lib is not None, state, stale]))")
    out = subprocess.run([sys.executable, "-c", code, str(directory)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@needs_compiler
def test_a_library_built_from_other_sources_is_refused_until_rebuilt(tmp_path, monkeypatch):
    """An editable install keeps its library when a .c changes: the loader compares the sources' digest recorded
    in the library with the sources beside it, runs the NumPy kernels and says how to rebuild."""
    monkeypatch.setenv("KERNELCORE_CFLAGS", "-O0")  # one quick library: what is checked is the digest, not speed
    src = _copy_sources(tmp_path / "native")
    stale_level = build.library_path(src, "x86-64-v4")
    stale_level.write_bytes(b"an older build")
    assert build.compile_library(src) is None
    assert build.built_libraries(src) == [build.library_path(src, None)]  # the level this build left out: gone
    ok, state, stale = _open_in_child(src)
    assert ok and stale is None and state.startswith("libkernelcore_cpu.so (custom): "), state

    os.utime(src / "gelu.c")  # a newer time, the same bytes: nothing to rebuild
    assert _open_in_child(src)[0]

    with open(src / "gelu.c", "a") as f:
        f.write("/* an edit */\n")
    ok, state, stale = _open_in_child(src)
    assert not ok and "built from other sources" in stale and "python -m kernelcore.native" in stale
    assert state == f"not used: {stale}: NumPy kernels"

    assert build.compile_library(src) is None
    assert _open_in_child(src)[0]


@needs_compiler
def test_the_stale_library_warns_once_and_the_numpy_kernels_run(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELCORE_CFLAGS", "-O0")
    src = _copy_sources(tmp_path / "native")
    assert build.compile_library(src) is None
    (src / "clip.c").write_text((src / "clip.c").read_text() + "/* changed */\n")
    monkeypatch.setattr(native, "LIBRARY", build.library_path(src, None))
    monkeypatch.setattr(native, "_state", None)
    monkeypatch.setattr(native, "_lib", None)
    with pytest.warns(RuntimeWarning, match="built from other sources"):
        assert native.library() is None
    assert native.native_state().startswith("not used: ")
    assert not native.ready(np, np.zeros(4, np.float32))


@needs_compiler
def test_a_failed_baseline_build_leaves_no_library(tmp_path, monkeypatch):
    """An older library of other sources must not be loaded where the new sources do not compile."""
    monkeypatch.setenv("KERNELCORE_CFLAGS", "-O0")
    src = _copy_sources(tmp_path / "native")
    assert build.compile_library(src) is None
    (src / "clip.c").write_text("this is not C;\n")
    why = build.compile_library(src)
    assert why is not None and "clip.c" in why
    assert build.built_libraries(src) == [] and not list(src.glob("*.tmp"))
