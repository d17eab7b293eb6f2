"""What users write programs with: layers (fc, conv2d, StaticRNN, IfElse, ...), Model (fit / evaluate / predict) and
the op creators behind kc.op."""
