"""Regenerate framework_pb2.py from framework.proto (needs grpcio-tools).

The generated module is committed so that installing kernelcore needs no protoc;
tests/test_proto.py checks it is in step with the .proto file.
"""
import pathlib
import sys


def main() -> int:
    from grpc_tools import protoc

    here = pathlib.Path(__file__).resolve().parent
    return protoc.main(["protoc", f"-I{here}", f"--python_out={here}", str(here / "framework.proto")])


if __name__ == "__main__":
    sys.exit(main())
