"""`kernelcore env` / kernelcore/runtime_env.py: what the process runs on, and the hints that follow."""
from __future__ import annotations

import json

import numpy as np
import pytest

from kernelcore import cli
from kernelcore import runtime_env as ri

HASWELL = [{"name": "openblas", "version": "0.3.31", "threads": 2, "kernels": "Haswell", "file": None}]
SKYLAKE = [{"name": "openblas", "version": "0.3.31", "threads": 2, "kernels": "SkylakeX", "file": None}]


def test_cpu_flags_come_from_the_flags_line():
    text = "processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n\nprocessor\t: 1\n"
    assert ri.cpu_flags(text) == {"fpu", "sse2", "avx2", "avx512f", "avx512bw"}
    assert ri.cpu_flags("Features\t: fp asimd\n") == {"fp", "asimd"}  # arm64's name for the line
    assert ri.cpu_flags("nothing here") == set()


def test_an_avx512_cpu_on_openblas_avx2_kernels_gets_the_coretype_hint():
    [hint] = ri.hints({"avx2", "avx512f"}, HASWELL, env={})
    assert "OPENBLAS_CORETYPE=SkylakeX" in hint and "Haswell kernels" in hint
    [hint] = ri.hints({"avx2", "avx512f"}, HASWELL, env={"OPENBLAS_CORETYPE": "Haswell"})
    assert "OPENBLAS_CORETYPE=Haswell is set in the environment" in hint
    assert ri.hints({"avx2", "avx512f"}, SKYLAKE, env={}) == []        # already AVX-512 kernels
    assert ri.hints({"avx2"}, HASWELL, env={}) == []                   # no AVX-512 to use
    mkl = [{"name": "mkl", "version": "2024", "threads": 2, "kernels": None, "file": None}]
    assert ri.hints({"avx512f"}, mkl, env={}) == []


def test_one_blas_thread_on_a_machine_with_more_is_said(monkeypatch):
    monkeypatch.setattr(ri.os, "cpu_count", lambda: 4)
    one = [dict(SKYLAKE[0], threads=1)]
    [hint] = ri.hints({"avx512f"}, one, env={})
    assert "1 thread of 4 CPUs" in hint


def test_kernelcore_env_prints_the_runtime(capsys):
    assert cli.main(["env", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["numpy"] == np.__version__
    assert info["cpu"]["logical_cpus"] >= 1 and isinstance(info["cpu"]["avx512"], bool)
    assert info["blas"] and info["blas"][0]["name"]
    assert info["gpu"]["available"] in (True, False)
    assert info["hints"] == ri.hints(ri.cpu_flags(), info["blas"])
    assert cli.main(["env"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("kernelcore ") and "\nBLAS " in text and "\nGPU " in text
    assert "\nparts  " in text
    from kernelcore import native
    assert info["native"] == native.native_state()
    assert f"\nC      {native.native_state()} (kernelcore/native)" in text  # the C kernels, or why NumPy's run


def test_kernelcore_env_says_how_many_parts_a_split_run_allows(capsys):
    from threadpoolctl import threadpool_limits
    from kernelcore.runtime import cpu_parts
    if cpu_parts.split_run_parts() is None:
        pytest.skip("no BLAS NumPy loaded that threadpoolctl controls")
    with threadpool_limits(1):
        assert cli.main(["env", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["cpu_parts"] == 1
    with threadpool_limits(2):
        assert cli.main(["env"]) == 0
        assert "split their ops into 2 part(s)" in capsys.readouterr().out


def test_without_threadpoolctl_the_build_record_names_the_blas(monkeypatch, capsys):
    import sys
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # `import threadpoolctl` raises ImportError
    blas = ri.blas_libraries()
    assert blas and blas[0]["name"] and blas[0]["threads"] is None and blas[0]["kernels"] is None
    assert ri.hints({"avx512f"}, blas, env={}) == []  # no kernels known: nothing to advise
    assert cli.main(["env"]) == 0
    assert "pip install threadpoolctl" in capsys.readouterr().out
