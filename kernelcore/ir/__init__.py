"""The program itself: Program / Block / Variable / Operator over the protobuf descs (proto/), attributes, dtypes,
the op registry (each op's spec, which every appended op is bound against), shape inference and the checks a loaded
program passes. Nothing here runs a program."""
