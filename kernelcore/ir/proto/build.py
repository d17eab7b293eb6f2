"""Regenerate framework_pb2.py from framework.proto (needs grpcio-tools).

The generated module is committed so that installing kernelcore needs no protoc;
tests/test_program.py checks it is in step with the .proto file (through `generate`).

One change is made to what protoc writes: the descriptors go into a pool of their own instead of protobuf's
default pool. Paddle registers the same file (framework.proto, package paddle.framework.proto: the wire format is
shared on purpose) in the default pool, so with both there, a process that imports paddle and kernelcore (a
notebook calling kc.from_paddle) failed with "duplicate symbol 'paddle.framework.proto.AttrType'". Field numbers,
names and the bytes on the wire are unchanged.
"""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
DEFAULT_POOL = "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile("
OWN_POOL = ("# kernelcore's own descriptor pool: Paddle registers this same file in the default one (see build.py)\n"
            "_POOL = _descriptor_pool.DescriptorPool()\n"
            "DESCRIPTOR = _POOL.AddSerializedFile(")


def generate(out_dir: pathlib.Path) -> pathlib.Path:
    """Write framework_pb2.py for framework.proto into `out_dir`; returns its path."""
    from grpc_tools import protoc

    if protoc.main(["protoc", f"-I{HERE}", f"--python_out={out_dir}", str(HERE / "framework.proto")]) != 0:
        raise RuntimeError("protoc failed on framework.proto")
    out = pathlib.Path(out_dir) / "framework_pb2.py"
    text = out.read_text()
    if text.count(DEFAULT_POOL) != 1:
        raise RuntimeError("protoc's output no longer registers its file as build.py expects: update OWN_POOL")
    out.write_text(text.replace(DEFAULT_POOL, OWN_POOL))
    return out


def main() -> int:
    generate(HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
