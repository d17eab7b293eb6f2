"""What kernelcore runs on here, and what would make it faster (`kernelcore env`, `runtime_info()`).

On the CPU nearly all of a convolutional or recurrent training step is NumPy's BLAS (GEMMs), so which BLAS,
which of its kernels and how many threads decide the speed. NumPy's wheels ship OpenBLAS built for many CPUs
at once; it picks its kernels when it loads, from the CPU or from OPENBLAS_CORETYPE where the environment
sets it (set to Haswell, it keeps the AVX2 kernels on an AVX-512 CPU). Measured on such a
machine (docs/benchmarks.md): starting Python with
OPENBLAS_CORETYPE=SkylakeX took a float32 GEMM from ~114 to ~200 GFLOP/s on one thread and a ResNet-18
training step from 1.6x to 1.35x PyTorch's time. Only the person starting Python can choose that (OpenBLAS
reads the variable once, when NumPy loads it), so kernelcore says so rather than doing it.

threadpoolctl (a dependency, which kernelcore/runtime/cpu_parts.py also uses) tells which kernels and threads the loaded
BLAS uses; where it cannot be imported, only NumPy's build information is shown.
"""
from __future__ import annotations

import os
import platform

# OpenBLAS kernel sets that use AVX-512 (threadpoolctl's "architecture")
_AVX512_KERNELS = frozenset({"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"})


def _cpuinfo() -> str:
    """/proc/cpuinfo (Linux), else ""."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return f.read(1 << 20)
    except OSError:
        return ""


def _cpuinfo_field(cpuinfo: str, keys: tuple[str, ...]) -> str | None:
    """The value of the first line of `cpuinfo` whose key is one of `keys`."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in keys:
            return value.strip()
    return None


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags (Linux: /proc/cpuinfo; elsewhere an empty set)."""
    flags = _cpuinfo_field(_cpuinfo() if cpuinfo is None else cpuinfo, ("flags", "Features"))
    return set(flags.split()) if flags else set()


def blas_libraries() -> list[dict]:
    """The BLAS libraries loaded in this process (threadpoolctl's view: name, version, threads, kernels),
    or, without threadpoolctl, NumPy's build record of its BLAS (no threads or kernels)."""
    import numpy as np
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        found = [{"name": d.get("internal_api"), "version": d.get("version"), "threads": d.get("num_threads"),
                  "kernels": d.get("architecture"), "file": d.get("filepath")}
                 for d in threadpool_info() if d.get("user_api") == "blas"]
        if found:
            return found
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return [{"name": blas.get("name"), "version": blas.get("version"), "threads": None, "kernels": None,
                 "file": None}]
    except Exception:  # numpy < 1.26 has no dict form; nothing more to say then
        return []


def hints(flags: set[str], blas: list[dict], env: dict | None = None) -> list[str]:
    """What would make kernelcore faster here, from the CPU's flags, the loaded BLAS and the environment."""
    env = os.environ if env is None else env
    out = []
    for b in blas:
        kernels = (b.get("kernels") or "").lower()
        if b.get("name") == "openblas" and "avx512f" in flags and kernels and kernels not in _AVX512_KERNELS:
            why = (f"OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']} is set in the environment, so NumPy's OpenBLAS "
                   f"uses its {b['kernels']} kernels" if env.get("OPENBLAS_CORETYPE")
                   else f"NumPy's OpenBLAS uses its {b['kernels']} kernels")
            out.append(f"this CPU has AVX-512 but {why}: start Python with OPENBLAS_CORETYPE=SkylakeX (e.g. in the "
                       "shell that starts JupyterLab) for its AVX-512 ones; measured on such a machine, float32 "
                       "GEMMs ran ~1.75x faster")
        if b.get("threads") == 1 and (os.cpu_count() or 1) > 1:
            out.append(f"the BLAS runs 1 thread of {os.cpu_count()} CPUs (OMP_NUM_THREADS / OPENBLAS_NUM_THREADS "
                       "or a threadpoolctl limit): GEMMs use one core")
    return out


def runtime_info() -> dict:
    """kernelcore's versions, the CPU, the BLAS and the GPU as seen from this process, with hints."""
    import numpy as np

    from . import __version__
    from .runtime.cpu_parts import split_run_parts
    from .runtime.host_memory import host_memory_state
    from .native import native_state
    from .runtime.place import PlaceError, cupy_module
    try:
        import google.protobuf as protobuf
        pb_version = protobuf.__version__
    except Exception:
        pb_version = None
    cpuinfo = _cpuinfo()  # read once: the flags and the model come from it
    flags = cpu_flags(cpuinfo)
    blas = blas_libraries()
    try:
        cp = cupy_module()
        gpu = {"available": True, "cupy": cp.__version__, "devices": int(cp.cuda.runtime.getDeviceCount())}
    except PlaceError as e:
        gpu = {"available": False, "why": str(e)}
    return {"kernelcore": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "protobuf": pb_version,
            "cpu": {"model": _cpuinfo_field(cpuinfo, ("model name",)) or platform.processor() or platform.machine(),
                    "logical_cpus": os.cpu_count(),
                    "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
                    "avx2": "avx2" in flags, "avx512": "avx512f" in flags},
            "blas": blas, "cpu_parts": split_run_parts(), "host_memory": host_memory_state(),
            "native": native_state(), "gpu": gpu,
            "hints": hints(flags, blas)}


def format_info(info: dict) -> str:
    cpu = info["cpu"]
    isa = "AVX-512" if cpu["avx512"] else "AVX2" if cpu["avx2"] else "no AVX2"
    lines = [f"kernelcore {info['kernelcore']}   Python {info['python']}   NumPy {info['numpy']}   "
             f"protobuf {info['protobuf']}",
             f"CPU    {cpu['model']}: {cpu['logical_cpus']} logical CPUs ({cpu['usable_cpus']} usable), {isa}"]
    for b in info["blas"] or [{"name": "unknown", "version": None, "threads": None, "kernels": None}]:
        extra = []
        if b.get("kernels"):
            extra.append(f"{b['kernels']} kernels")
        if b.get("threads") is not None:
            extra.append(f"{b['threads']} threads")
        if b.get("kernels") is None and b.get("threads") is None:
            extra.append("kernels and threads: pip install threadpoolctl to see them")
        lines.append(f"BLAS   {b.get('name')} {b.get('version') or ''}".rstrip() + f" ({', '.join(extra)})")
    parts = info.get("cpu_parts")
    if parts is None:
        lines.append("parts  none: no BLAS NumPy loaded that threadpoolctl can hold at one thread")
    else:
        lines.append(f"parts  runs of convolutional programs split their ops into {parts} part(s), one per core "
                     f"(the BLAS's thread limit; kernelcore/runtime/cpu_parts.py)")
    if info.get("host_memory"):
        lines.append(f"memory {info['host_memory']} (kernelcore/runtime/host_memory.py)")
    if info.get("native"):
        lines.append(f"C      {info['native']} (kernelcore/native)")
    g = info["gpu"]
    lines.append(f"GPU    CuPy {g['cupy']}, {g['devices']} device(s)" if g["available"] else f"GPU    none: {g['why']}")
    lines += [f"hint   {h}" for h in info["hints"]]
    return "\n".join(lines)
