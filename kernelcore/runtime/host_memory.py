"""Keeping freed host memory for the next op's temporaries (glibc's allocator, Linux).

Every NumPy kernel returns fresh arrays, and a step of a real model frees and allocates the same sizes op after
op. By default glibc hands blocks of 128 KiB and more back to the kernel at once (mmap / munmap, with a
threshold that moves) and trims the heap's free top above 128 KiB, so the next op's arrays fault their pages
in again: on a virtual machine a fault costs about half a microsecond a page, and zeroes it. Measured on a
2-core Intel Xeon KVM guest, one thread: erfc of an [8, 128, 64] float32 array 462 -> 205 us, the BERT-style
encoder's Adam step 18.9 -> 16.7 ms, the 2-layer LSTM's inference 47.8 -> 44.2 ms (alternating in one process).

keep_freed_memory() asks glibc (mallopt) to serve blocks up to 32 MiB from its heap, to grow the heap 64 MiB at
a time and to give back its free top only above 256 MiB: a process running programs then keeps up to that
much freed memory for reuse, in each glibc arena a thread allocates from (the parts' threads of cpu_parts.py have
their own). The first CPU Executor applies it once, unless the environment sets KERNELCORE_HOST_MEMORY=release
(glibc's defaults stay). Elsewhere (macOS, Windows, musl) nothing changes.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading

ENV = "KERNELCORE_HOST_MEMORY"
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
TOP_PAD = 64 << 20
TRIM_THRESHOLD = 256 << 20

_lock = threading.Lock()
_state: str | None = None  # None: not tried yet; else what host_memory_state() reports


def _glibc():
    """glibc's mallopt, or None where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        version = libc.gnu_get_libc_version  # only glibc has it
        version.restype = ctypes.c_char_p
        version()
        return libc.mallopt
    except (OSError, AttributeError):
        return None


def keep_freed_memory() -> str:
    """Apply the settings above once per process (see the module docstring); returns host_memory_state()."""
    global _state
    if _state is not None:  # every Executor after the first: no lock
        return _state
    with _lock:
        if _state is not None:
            return _state
        if os.environ.get(ENV, "").strip().lower() == "release":
            _state = f"glibc's defaults ({ENV}=release)"
            return _state
        mallopt = _glibc()
        if mallopt is None:
            _state = "the C library's defaults (not glibc)"
            return _state
        refused = [name for name, param, value in (("M_MMAP_THRESHOLD", _M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                                    ("M_TOP_PAD", _M_TOP_PAD, TOP_PAD),
                                                    ("M_TRIM_THRESHOLD", _M_TRIM_THRESHOLD, TRIM_THRESHOLD))
                   if mallopt(param, value) != 1]
        kept = (f"freed memory kept for reuse: blocks up to {MMAP_THRESHOLD >> 20} MiB from the heap, which grows "
                f"by {TOP_PAD >> 20} MiB and gives back its free top above {TRIM_THRESHOLD >> 20} MiB")
        _state = kept if not refused else f"{kept}, except what mallopt refused: {', '.join(refused)}"
        return _state


def _new_lock_in_child() -> None:
    """A fork while another thread held the lock would leave it held in the child for good."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


def host_memory_state() -> str:
    """What keep_freed_memory() did in this process, or that no CPU Executor has applied it yet."""
    return _state or f"glibc's defaults until the first CPU Executor keeps freed memory ({ENV}=release: it does not)"
