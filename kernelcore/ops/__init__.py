"""Op definitions, one module per family. Importing this package registers them all."""
from . import activation, math, tensor  # noqa: F401
from . import nn, loss  # noqa: F401
