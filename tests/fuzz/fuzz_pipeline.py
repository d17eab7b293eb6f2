"""Coverage-guided fuzzing of kernelcore's pipeline: load -> text -> display -> prune -> run under a trace,
and of trace loading. Every stage must end in success or a kernelcore error (KernelcoreError), in bounded
time and memory; anything else (a bare TypeError, RecursionError, MemoryError) is a finding.

    # a longer run (atheris: `pip install atheris`, in kernelcore[test]); seeds: the hostile corpus
    python tests/fuzz/hostile_corpus.py /tmp/kc-corpus
    python tests/fuzz/fuzz_pipeline.py program /tmp/kc-corpus -max_total_time=600 -rss_limit_mb=2048 -timeout=20
    python tests/fuzz/fuzz_pipeline.py trace -max_total_time=300

tests/test_hostile.py runs `program_pipeline` over the corpus and a few seconds of mutated inputs as a
smoke test (without atheris: random byte mutations of the corpus).
"""
from __future__ import annotations

import json
import sys
import warnings

import numpy as np

# the budgets a fuzzed run gets: a hostile `while` must not hold a fuzzer for a minute
WHILE_ITERATIONS = 1_000
WHILE_SECONDS = 2.0


def program_pipeline(data: bytes, feed: dict | None = None) -> list[str]:
    """Run `data` through every stage; returns the stages that ended in a kernelcore error. Raises
    anything else."""
    import kernelcore as kc
    from kernelcore.formats import paddle_files
    from kernelcore.cli import program_summary, terminal_safe
    from kernelcore.view.display import program_json
    from kernelcore.ir.support import UnsupportedOpsWarning
    from kernelcore.ops import control_flow

    failed = []
    try:
        with warnings.catch_warnings():  # a mutated op type is expected: the run stage reports it
            warnings.simplefilter("ignore", UnsupportedOpsWarning)
            prog = paddle_files.program_from_bytes(data, source="fuzz.pdmodel")
    except kc.KernelcoreError:
        return ["load"]
    for stage, fn in (("text", lambda: terminal_safe(str(prog))), ("summary", lambda: program_summary(prog)),
                      ("display", lambda: json.dumps(program_json(prog), allow_nan=False)),
                      ("parts", lambda: json.dumps(_all_parts(prog), allow_nan=False)),
                      ("outline reads", lambda: _reads_agree(data, prog))):
        try:
            fn()
        except kc.KernelcoreError:
            failed.append(stage)
    block0 = prog.desc.blocks[0]
    names = [v.name for v in block0.vars]
    if names:
        try:
            kc.prune(prog, names[-1:])
        except kc.KernelcoreError:
            failed.append("prune")
    old = (control_flow.set_max_while_iterations(WHILE_ITERATIONS), control_flow.set_max_while_seconds(WHILE_SECONDS))
    try:
        feeds = feed if feed is not None else _feeds(prog)
        with kc.trace() as tr:
            try:
                kc.Executor().run(prog, feed=feeds, scope=kc.Scope())
            except kc.KernelcoreError:
                failed.append("run")
        kinds = tr.kinds()
        if kinds:
            assert kinds[-1] == "run_end", kinds[-3:]
            if "run" in failed:
                assert "error" in kinds, "a failed run's trace has no error event"
        trace_pipeline(json.dumps(tr.to_json()).encode())
    finally:
        control_flow.set_max_while_iterations(old[0])
        control_flow.set_max_while_seconds(old[1])
    return failed


def _feeds(prog) -> dict:
    """Small arrays for the variables the program's feed ops (or, without feed ops, its first ops) read."""
    out = {}
    for op in prog.desc.blocks[0].ops:
        if op.type == "feed":
            for v in op.outputs:
                for n in v.arguments[:1]:
                    out[n] = np.ones((1,), np.float32)
    return out


def _reads_agree(data: bytes, prog) -> None:
    """What the outline reads of each op, from the twin parse loading makes (as a big file keeps it,
    kernelcore/ir/op_reads.py), is what it reads from the desc."""
    from kernelcore.ir import op_reads
    from kernelcore.ir.proto.wire_twin import parse_checked
    many = len(prog.desc.blocks) > 1
    kept = op_reads.read_program(parse_checked(data), prog.desc)
    assert kept == [op_reads.read_ops(b.ops, many) for b in prog.desc.blocks], "the two readers disagree"


def _all_parts(prog) -> list:
    """The program as a big one is sent (kernelcore/view/program_parts.py): its skeleton, then every group of
    every block opened at once, and a search."""
    from kernelcore.view.program_parts import ProgramParts

    parts = ProgramParts(prog, prog.version)
    out = [parts.skeleton("fuzz")]
    for b, blk in enumerate(parts.blocks):
        out.append(parts.contents(b, [None] + [g["id"] for g in blk.groups]))
    out.append(parts.search("a"))
    return out


def trace_pipeline(data: bytes) -> bool:
    """Load `data` as a trace file's bytes; True if it loaded, False on a kernelcore error."""
    import kernelcore as kc
    from kernelcore.cli import _trace_text
    from kernelcore.view.display import TRACE_EVENT_LIMIT

    try:
        text = data.decode("utf-8")
        obj = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False  # what Trace.load turns into a TraceError; from_json is the part under test
    try:
        tr = kc.Trace.from_json(obj, source="fuzz.json")
    except kc.KernelcoreError:
        return False
    _trace_text(tr, 5)
    json.dumps(tr.to_json(limit=TRACE_EVENT_LIMIT))
    tr.to_chrome()
    return True


def _main() -> None:
    import atheris

    target = sys.argv.pop(1) if len(sys.argv) > 1 and sys.argv[1] in ("program", "trace") else "program"
    with atheris.instrument_imports():
        import kernelcore  # noqa: F401
        import kernelcore.cli  # noqa: F401  - imported lazily elsewhere: instrumented only if imported here
        import kernelcore.view.display  # noqa: F401
    fn = program_pipeline if target == "program" else trace_pipeline
    atheris.Setup(sys.argv, lambda data: fn(bytes(data)))
    atheris.Fuzz()


if __name__ == "__main__":
    _main()
