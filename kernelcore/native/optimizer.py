"""The optimizer updates' variants in parts (kernelcore/runtime/fast_paths.py) over their reference kernels
(kernelcore/ops/optimizer.py sgd and momentum): an update's blocks shared among the CPU's cores inside a split run
(kernelcore/runtime/cpu_parts.py), each part with a scratch array of its own; the same elementwise operations on
each element as the reference's."""
from __future__ import annotations

from functools import partial

import numpy as np

from ..ops import optimizer as O
from ..runtime.cpu_parts import chunks, cpu_parts, run_parts
from ..runtime.fast_paths import fast_kernel

# what one element of an update weighs in kernelcore/runtime/cpu_parts.py's units (memory-bound: momentum on 2^20
# elements took 0.35 ms on one core, 0.25 ms split in two; on 2^19, 0.17 ms either way)
ELEMENT_WORK = 24


def update_in_parts(xp, n: int, mt, update) -> None:
    """O.update_whole's work with the blocks shared among the cores, each part with a scratch array of one block."""
    blocks = O.update_blocks(xp, n)
    parts = cpu_parts(xp, n * ELEMENT_WORK) if len(blocks) > 1 else 1
    if parts < 2:
        update(blocks, O.block_scratch(xp, n, mt))
        return

    def part(some):
        update(some, O.block_scratch(xp, n, mt))
    run_parts([partial(part, blocks[s]) for s in chunks(len(blocks), parts)])


def _on_the_host(xp, ins, attrs) -> bool:
    return xp is np


for _dtype in ("float32", "float64"):
    fast_kernel("sgd", _on_the_host, dtype=_dtype)(O.sgd_kernel(update_in_parts))
    fast_kernel("momentum", _on_the_host, dtype=_dtype)(O.momentum_kernel(update_in_parts))
