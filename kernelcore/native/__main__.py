"""`python -m kernelcore.native`: rebuild the C kernels in place (build.py), as after editing a .c or .h in an
editable install."""
import sys

from .build import main

sys.exit(main())
