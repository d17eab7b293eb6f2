"""Gradient cases for tests/test_backward.py's one-op tier (finite differences on the CPU, the CPU's gradients on
the strict GPU stand-in): squared_l2_norm, argsort, roll, index_select, roi_align. The tensor-array ops' values
are lists, so they are checked inside the programs they belong to (tests/test_tensor_array.py)."""
import numpy as np

rng = np.random.default_rng(33)

CASES = [
    dict(op="squared_l2_norm", inputs={"X": rng.standard_normal((3, 4))}, id="squared_l2_norm"),
    dict(op="squared_l2_norm", inputs={"X": rng.standard_normal((5,))}, id="squared_l2_norm_1d"),
    dict(op="argsort", inputs={"X": rng.standard_normal((3, 5))}, id="argsort"),
    dict(op="argsort", inputs={"X": rng.standard_normal((4, 3))}, attrs={"axis": 0, "descending": True},
         id="argsort_axis0_descending"),
    dict(op="roll", inputs={"X": rng.standard_normal((3, 4, 2))}, attrs={"shifts": [1, -3], "axis": [0, 1]},
         id="roll"),
    dict(op="roll", inputs={"X": rng.standard_normal((3, 4))}, attrs={"shifts": [5]}, id="roll_flat"),
    dict(op="index_select", inputs={"X": rng.standard_normal((5, 3)), "Index": np.array([4, 0, 4, 2])},
         attrs={"dim": 0}, id="index_select_repeats"),
    dict(op="roi_align", inputs={"X": rng.standard_normal((2, 2, 5, 6)),
                                 "ROIs": np.array([[0.5, 1.0, 4.0, 3.5], [1.2, 0.3, 5.5, 4.8], [2.0, 2.0, 2.6, 2.4]]),
                                 "RoisNum": np.array([1, 2], np.int32)},
         attrs={"pooled_height": 2, "pooled_width": 2, "sampling_ratio": 2, "aligned": True},
         stop=("ROIs_0",), id="roi_align"),
    dict(op="roi_align", inputs={"X": rng.standard_normal((1, 1, 4, 4)),
                                 "ROIs": np.array([[-1.0, 0.5, 5.0, 3.3]])},
         attrs={"pooled_height": 3, "pooled_width": 2}, stop=("ROIs_0",), id="roi_align_edges_adaptive"),
]

# differentiable, checked by finite differences through whole programs in tests/test_tensor_array.py
IN_PROGRAMS = {"write_to_array", "read_from_array", "tensor_array_to_tensor"}
