"""Cases for the plain (non-generator) ops of kernelcore/ops/control_flow.py.

The ops that run sub-blocks (recurrent, while, conditional_block) need programs with blocks: they are
tested in tests/test_control_flow.py. References below are NumPy boolean indexing written independently
of the kernels: split takes the rows where the mask is true / false; merge puts them back row by row.
"""
import numpy as np

from . import Case

rng = np.random.default_rng(7)
X53 = rng.standard_normal((5, 3)).astype(np.float32)
MASK = np.array([[True], [False], [True], [True], [False]])


def _merge_ref(X, Mask, InTrue, InFalse, level=0):
    m = Mask.reshape(-1)
    out = np.zeros((m.size,) + InTrue.shape[1:], InTrue.dtype)
    ti = fi = 0
    for i, flag in enumerate(m):  # row by row, the way the op is described
        if flag:
            out[i] = InTrue[ti]
            ti += 1
        else:
            out[i] = InFalse[fi]
            fi += 1
    return {"Out": out}


CASES = [
    Case("split_lod_tensor", {"X": X53, "Mask": MASK},
         lambda X, Mask, level=0: {"OutTrue": X[Mask[:, 0]], "OutFalse": X[~Mask[:, 0]]}, id="split_lod_tensor"),
    Case("split_lod_tensor", {"X": X53, "Mask": MASK[:, 0]},
         lambda X, Mask, level=0: {"OutTrue": X[Mask], "OutFalse": X[~Mask]}, id="split_lod_tensor-1d-mask"),
    Case("merge_lod_tensor", {"X": MASK, "Mask": MASK, "InTrue": X53[[0, 2, 3]], "InFalse": X53[[1, 4]]},
         _merge_ref, id="merge_lod_tensor"),
    Case("merge_lod_tensor", {"X": MASK, "Mask": np.ones((3, 1), bool), "InTrue": X53[:3],
                              "InFalse": np.zeros((0, 3), np.float32)},
         _merge_ref, id="merge_lod_tensor-all-true"),
    Case("select_input", {"X": [X53, X53 * 2], "Mask": np.array([1], np.int32)},
         lambda X, Mask: {"Out": X[int(Mask[0])]}, id="select_input-1"),
    Case("select_input", {"X": [X53, X53 * 2], "Mask": np.array(0, np.int32)},
         lambda X, Mask: {"Out": X[int(Mask)]}, id="select_input-0d-0"),
    Case("logical_not", {"X": MASK}, lambda X: {"Out": ~X}),
    Case("rnn_memory_helper", {"X": X53}, lambda X, dtype=5: {"Out": X.copy()}, attrs={"dtype": 5}),
    Case("fill_constant_batch_size_like", {"Input": rng.standard_normal((4, 7, 2)).astype(np.float32)},
         lambda Input, shape, dtype, value, input_dim_idx, output_dim_idx:
             {"Out": np.full((3, Input.shape[input_dim_idx]), value, np.float32)},
         attrs={"shape": [3, -1], "dtype": 5, "value": 0.5, "input_dim_idx": 1, "output_dim_idx": 1},
         id="fill_constant_batch_size_like"),
]
