"""Check our understanding of the .pdiparams (save_combine) byte layout against Paddle itself.

Run with the Paddle 3.3.1 venv's python after make_programs.py:

    .venv-paddle/bin/python tests/paddle_oracle/check_pdiparams.py tests/paddle_oracle/out/p3

1. For every <case>.pdmodel/.pdiparams in OUTDIR: parse the .pdiparams with the tiny numpy parser below (which
   knows nothing of Paddle), name the tensors by the sorted persistable names of the saved program, and compare with
   the values Paddle loads into a scope (paddle.static.load_inference_model) and with paddle.static.load.
2. Writes a save_combine file of its own holding several dtypes, a 0-d tensor and a tensor with 2 LoD levels, and
   parses it back, so the LoD and dtype parts of the layout are checked too.

Layout (each tensor, concatenated, no names, no file header; order = the save_combine op's X list, which
save_inference_model makes the persistable names sorted by Python's str order):
    uint32  lod-tensor version (0)
    uint64  number of LoD levels L
    L x   { uint64 nbytes; nbytes/8 x uint64 offsets }
    uint32  tensor version (0)
    int32   size of TensorDesc protobuf
    bytes   VarType.TensorDesc { 1: data_type enum, 2: dims int64 repeated }
    bytes   raw data, numel * sizeof(dtype), little-endian, C order
"""

from __future__ import annotations

import glob
import os
import struct
import sys
import tempfile
import warnings

os.environ.setdefault("FLAGS_enable_pir_api", "0")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

# VarType.Type -> numpy dtype
PD_DTYPES = {
    0: np.bool_,
    1: np.int16,
    2: np.int32,
    3: np.int64,
    4: np.float16,
    5: np.float32,
    6: np.float64,
    20: np.uint8,
    21: np.int8,
    23: np.complex64,
    24: np.complex128,
}


def _varint(buf, pos):
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def parse_tensor_desc(buf):
    """Minimal protobuf decode of VarType.TensorDesc: returns (data_type, dims)."""
    pos, dtype, dims = 0, None, []
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        if field == 1 and wire == 0:
            dtype, pos = _varint(buf, pos)
        elif field == 2 and wire == 0:  # unpacked int64
            v, pos = _varint(buf, pos)
            dims.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif field == 2 and wire == 2:  # packed int64
            n, pos = _varint(buf, pos)
            end = pos + n
            while pos < end:
                v, pos = _varint(buf, pos)
                dims.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif wire == 0:
            _, pos = _varint(buf, pos)
        elif wire == 2:
            n, pos = _varint(buf, pos)
            pos += n
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ValueError(f"bad wire type {wire}")
    return dtype, dims


def parse_pdiparams(data: bytes):
    """Return a list of (array, lod, data_type_enum) in file order."""
    out, pos = [], 0
    while pos < len(data):
        (ver,) = struct.unpack_from("<I", data, pos)
        pos += 4
        assert ver == 0, f"lod tensor version {ver} at {pos - 4}"
        (lod_levels,) = struct.unpack_from("<Q", data, pos)
        pos += 8
        lod = []
        for _ in range(lod_levels):
            (nbytes,) = struct.unpack_from("<Q", data, pos)
            pos += 8
            lod.append(list(np.frombuffer(data, "<u8", nbytes // 8, pos)))
            pos += nbytes
        (tver,) = struct.unpack_from("<I", data, pos)
        pos += 4
        assert tver == 0, f"tensor version {tver}"
        (dsize,) = struct.unpack_from("<i", data, pos)
        pos += 4
        dtype_enum, dims = parse_tensor_desc(data[pos : pos + dsize])
        pos += dsize
        dt = np.dtype(PD_DTYPES[dtype_enum]).newbyteorder("<")
        numel = int(np.prod(dims)) if dims else 1
        arr = np.frombuffer(data, dt, numel, pos).reshape(dims)
        pos += numel * dt.itemsize
        out.append((arr, lod, dtype_enum))
    return out


def check_case(prefix):
    import paddle

    paddle.enable_static()
    with open(prefix + ".pdiparams", "rb") as f:
        parsed = parse_pdiparams(f.read())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe = paddle.static.Executor(paddle.CPUPlace())
        prog, _, _ = paddle.static.load_inference_model(prefix, exe)
        pvars = sorted(
            (
                v
                for v in prog.list_vars()
                if v.persistable
                and v.name not in ("feed", "fetch")
                and v.type != paddle.framework.core.VarDesc.VarType.RAW
            ),
            key=lambda v: v.name,
        )
        names = [v.name for v in pvars]
        assert len(names) == len(parsed), (names, len(parsed))
        # paddle.static.load (load_combine with var_list) on the same file: a second Paddle reader
        scope2 = paddle.static.Scope()
        with paddle.static.scope_guard(scope2):
            paddle.static.load(prog, prefix + ".pdiparams", exe, var_list=pvars)
            loaded2 = {n: np.array(scope2.find_var(n).get_tensor()) for n in names}
        for name, (arr, lod, _) in zip(names, parsed):
            ref = np.array(scope.find_var(name).get_tensor())
            assert arr.dtype == ref.dtype and arr.shape == ref.shape, (name, arr.dtype, ref.dtype, arr.shape, ref.shape)
            np.testing.assert_array_equal(arr, ref)
            np.testing.assert_array_equal(arr, loaded2[name])
            assert lod == []
    print(f"{os.path.basename(prefix)}.pdiparams: {len(names)} tensors OK, order {names}")


def check_custom_save_combine():
    """Write tensors of several dtypes, a 0-d one and one with LoD via Paddle's save_combine op; parse back."""
    import paddle
    from paddle.base import core

    paddle.enable_static()
    rng = np.random.default_rng(0)
    tensors = {
        "a_f32": (rng.standard_normal((3, 4)).astype(np.float32), []),
        "b_f64": (rng.standard_normal((5,)).astype(np.float64), []),
        "c_i64": (np.arange(6, dtype=np.int64).reshape(2, 3) - 3, []),
        "d_i32": (np.array([[1, -2], [3, 4]], dtype=np.int32), []),
        "e_f16": (np.array([0.5, -1.25, 2.0], dtype=np.float16), []),
        "f_bool": (np.array([True, False, True]), []),
        "g_scalar": (np.array(3.5, dtype=np.float32), []),
        "h_lod": (np.arange(12, dtype=np.float32).reshape(6, 2), [[0, 2, 3], [0, 1, 4, 6]]),
        "i_u8": (np.array([0, 7, 255], dtype=np.uint8), []),
        "j_i8": (np.array([-128, 0, 127], dtype=np.int8), []),
    }
    prog = paddle.static.Program()
    block = prog.global_block()
    scope = paddle.static.Scope()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "custom.pdiparams")
        in_vars = []
        for name, (arr, lod) in tensors.items():
            v = block.create_var(name=name, shape=arr.shape, dtype=arr.dtype, persistable=True)
            in_vars.append(v)
            t = scope.var(name).get_tensor()
            t.set(arr, core.CPUPlace())
            if lod:
                t.set_lod(lod)
        y = block.create_var(name="save_combine_out", type=core.VarDesc.VarType.RAW, persistable=True)
        block.append_op(
            type="save_combine",
            inputs={"X": in_vars},
            outputs={"Y": [y]},
            attrs={"file_path": path, "save_to_memory": False},
        )
        with paddle.static.scope_guard(scope):
            paddle.static.Executor(paddle.CPUPlace()).run(prog)
        with open(path, "rb") as f:
            data = f.read()
    parsed = parse_pdiparams(data)
    assert len(parsed) == len(tensors)
    for (name, (arr, lod)), (got, got_lod, enum) in zip(tensors.items(), parsed):
        assert got.dtype == arr.dtype and got.shape == arr.shape, (name, got.dtype, got.shape)
        np.testing.assert_array_equal(got, arr)
        assert [list(map(int, lv)) for lv in got_lod] == lod, (name, got_lod)
    print(f"custom save_combine: {len(tensors)} tensors OK (dtypes, 0-d, 2 LoD levels), {len(data)} bytes")
    return data


def main(argv):
    outdir = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "out", "p3")
    prefixes = sorted(p[: -len(".pdiparams")] for p in glob.glob(os.path.join(outdir, "*.pdiparams")))
    if not prefixes:
        print(f"no .pdiparams in {outdir}; run make_programs.py first")
        return 1
    for prefix in prefixes:
        check_case(prefix)
    check_custom_save_combine()
    print("pdiparams layout verified")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
