"""Paddle's op roles (OpRole in op_proto_maker.h): the bits of an op's `op_role` attribute, which says what part
of training wrote the op. Backward writes them, the optimizer writes them, the views read them."""
FORWARD = 0x0000
BACKWARD = 0x0001
OPTIMIZE = 0x0002
LRSCHED = 0x0010   # learning-rate schedule ops: shown with the optimizer's
LOSS = 0x0100      # or-ed into the role of the op that makes the loss and of the op seeding its gradient
