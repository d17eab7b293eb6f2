"""Fused device kernels: CUDA kernels (cupy.ElementwiseKernel / ReductionKernel / RawKernel) for the ops that CuPy
runs as many small launches, registered as fast variants of their reference kernels for (gpu, float32) through
kernelcore/runtime/fast_paths.py. Each kernel is declared once with a NumPy twin of the same semantics
(declare.py), which the strict stand-in runs (kernelcore/testing/strict_cuda.py); on a GPU the CUDA body runs and
bench/gpu_check.sh compares it with the reference there."""
