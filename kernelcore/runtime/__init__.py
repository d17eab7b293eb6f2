"""What runs a program: the Scope, places (CPU, GPU, the strict stand-in), the executor loop and the events it
emits, with its helpers for values, host memory and an op's parts on the CPU's cores. Kernels (ops/, native/) and
gradient rules (grad/) plug into the op registry in ir/."""
