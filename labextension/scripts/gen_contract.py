"""Write every generated file of the front-end contract and the debug protocol (kernelcore_widgets/contract/
generate.py says which and from what).

    python labextension/scripts/gen_contract.py          # rewrite the stale files
    python labextension/scripts/gen_contract.py --check  # exit 1, naming them, if any is stale

tests/test_contract.py runs the check.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "widgets")]

from kernelcore_widgets.contract import generate  # noqa: E402


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = generate.stale()
        for path in stale:
            print(f"{path} is stale: run python {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
        return 1 if stale else 0
    for path in generate.write():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
