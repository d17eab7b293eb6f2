"""Write the op types Paddle registers (its OpProtos) into kernelcore/ir/paddle_op_types.txt, merged with
what the file already lists, so running it under each Paddle venv leaves the union of both versions:

    FLAGS_enable_pir_api=0 .venv-paddle/bin/python tests/paddle_oracle/make_op_types.py kernelcore/ir/paddle_op_types.txt
    .venv-paddle2/bin/python tests/paddle_oracle/make_op_types.py kernelcore/ir/paddle_op_types.txt

kernelcore reads the list to tell a Paddle op it has no kernel for (say so, suggest nothing) from a
misspelt op type (suggest the close registered names).
"""
import os
import sys

os.environ.setdefault("FLAGS_enable_pir_api", "0")
import paddle  # noqa: E402
from paddle.base import core  # noqa: E402
from paddle.base.proto import framework_pb2  # noqa: E402


def main(out: str) -> None:
    names, versions = set(), set()
    if os.path.exists(out):
        with open(out) as f:
            for line in f:
                if line.startswith("# versions:"):
                    versions.update(line.split(":", 1)[1].split())
                elif line.strip() and not line.startswith("#"):
                    names.add(line.strip())
    versions.add(paddle.__version__)
    names.update(framework_pb2.OpProto.FromString(p).type for p in core.get_all_op_protos())
    with open(out, "w") as f:
        f.write("# Op types PaddlePaddle registers (OpProtos), written by tests/paddle_oracle/make_op_types.py\n")
        f.write(f"# versions: {' '.join(sorted(versions))}\n")
        f.writelines(n + "\n" for n in sorted(names))


if __name__ == "__main__":
    main(sys.argv[1])
