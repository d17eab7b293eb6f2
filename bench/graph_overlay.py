"""What an overlay costs in the kernel: ProgramGraph.overlay (keys checked, values encoded, every group's
aggregate) on training MLPs of growing size, next to what displaying the same graph costs the first time
(the ProgramJSON or, past the lazy threshold, the outline its skeleton and parts come from), measured in one
run.

    .venv/bin/python bench/graph_overlay.py            # 100, 1,000 and 3,000 layers
    .venv/bin/python bench/graph_overlay.py --quick    # 100 and 1,000 layers

Each overlay gives every op a value (one in a hundred NaN), the worst case for the group aggregates.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "widgets"), str(ROOT / "bench")]

from _timing import measure  # noqa: E402
from make_frontend_fixtures import training_mlp  # noqa: E402

import kernelcore_widgets as kw  # noqa: E402
from kernelcore.ir.node_ids import op_id  # noqa: E402
from kernelcore.view.display import program_json  # noqa: E402
from kernelcore.view.program_parts import ProgramParts  # noqa: E402


def main(argv: list[str]) -> None:
    sizes = (100, 1_000) if "--quick" in argv else (100, 1_000, 3_000)
    print(f"{'layers':>7} {'ops':>7} {'lazy':>5} {'display s':>10} {'overlay s':>10} {'ratio':>6} {'groups':>7}"
          f" {'us/op':>6}")
    for layers in sizes:
        prog = training_mlp(layers)
        n_ops = sum(len(b.ops) for b in prog.blocks)
        values = {op_id(b.idx, i): (float("nan") if i % 100 == 7 else float(i))
                  for b in prog.blocks for i in range(len(b.ops))}
        graph = kw.ProgramGraph(prog)
        lazy = graph._parts is not None
        # the first display of a big program builds its outline (later ones take it from a cache)
        show = (lambda: ProgramParts(prog, prog.version)) if lazy else (lambda: program_json(prog))
        display, _ = measure(show, repeat=3, min_s=0.0, warmup=1)
        overlay, _ = measure(lambda: graph.overlay(values, scale="log"), repeat=3, min_s=0.0, warmup=1)
        print(f"{layers:>7} {n_ops:>7} {'yes' if lazy else 'no':>5} {display:>10.4f} {overlay:>10.4f} "
              f"{overlay / display:>6.2f} {len(graph.overlay_spec['groups']):>7} {overlay / n_ops * 1e6:>6.1f}")
        graph.close()


if __name__ == "__main__":
    main(sys.argv[1:])
