"""kernelcore/runtime/host_memory.py: the first CPU Executor makes glibc keep freed memory for the next op's arrays,
unless KERNELCORE_HOST_MEMORY=release; `kernelcore env` says which. Each case runs in a fresh process, since
the settings are the process's."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from kernelcore import cli
from kernelcore.runtime import host_memory

# an 8 MiB array is above glibc's default mmap threshold: mallinfo2's hblkhd (bytes in mmapped blocks) shows
# whether the allocator mapped it or served it from its heap
PROBE = r"""
import ctypes, json, numpy as np
import kernelcore as kc
from kernelcore.runtime.host_memory import host_memory_state

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                 "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
before = host_memory_state()
kc.Executor()
mapped = libc.mallinfo2().hblkhd
a = np.ones(8 << 20, np.uint8)
print(json.dumps({"before": before, "after": host_memory_state(), "mapped": libc.mallinfo2().hblkhd - mapped}))
"""


def _probe(**env) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in dict(os.environ, **env).items() if v is not None}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


needs_glibc = pytest.mark.skipif(host_memory._glibc() is None, reason="glibc's allocator only (Linux)")


@needs_glibc
def test_the_first_cpu_executor_keeps_freed_memory_in_the_heap():
    got = _probe(KERNELCORE_HOST_MEMORY=None)
    assert "until the first CPU Executor" in got["before"]
    assert got["after"].startswith("freed memory kept for reuse: blocks up to 32 MiB")
    assert got["mapped"] == 0  # the 8 MiB array came from the heap


@needs_glibc
def test_release_keeps_glibcs_defaults():
    got = _probe(KERNELCORE_HOST_MEMORY="release")
    assert got["after"] == "glibc's defaults (KERNELCORE_HOST_MEMORY=release)"
    assert got["mapped"] >= 8 << 20  # mapped on its own, as glibc does by default


def test_kernelcore_env_says_what_happens_to_freed_memory(capsys):
    import kernelcore as kc
    kc.Executor()  # this process's first CPU Executor may be this one
    assert cli.main(["env", "--json"]) == 0
    state = json.loads(capsys.readouterr().out)["host_memory"]
    assert state.startswith(("freed memory kept for reuse", "glibc's defaults (KERNELCORE_HOST_MEMORY=release)",
                             "the C library's defaults (not glibc)")), state
    assert cli.main(["env"]) == 0
    assert f"\nmemory {state} (kernelcore/runtime/host_memory.py)" in capsys.readouterr().out
