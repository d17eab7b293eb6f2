"""The `kernelcore` command: show, run and prune program files, and summarize saved traces.

    kernelcore show  PROGRAM [--json]
    kernelcore run   PROGRAM [--params F] [--feed name=file.npy ...] [--random-feeds] [--batch N]
                     [--max-feed-bytes N] [--seed N] [--fetch NAME ...] [--trace T.json] [--chrome-trace C.json]
                     [--retain shapes|none|references] [--place cpu|gpu|strict] [--save-outputs OUT.npz]
    kernelcore prune PROGRAM --target NAME [--target NAME ...] [--feed NAME ...] [-o OUT]
    kernelcore trace-info T.json [--top N]

Errors a user can cause (a missing or corrupt file, an unknown op, a feed of the wrong shape)
print one line, `kernelcore: error: ...`, and exit with status 2.

Names come from files the user may not have written: everything printed to the terminal passes through
`terminal_safe`, so a variable named "\x1b]0;title\x07" prints as that escape text instead of retitling
the terminal.
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from .text_safety import NAME_CHARS_SHOWN, quote_name, safe_name, safe_text, short_name

EXIT_USAGE = 2
# --random-feeds allocates what a file declares: a file of a hundred bytes can declare terabytes. The random
# feeds of one run may hold at most this many bytes unless --max-feed-bytes says more.
DEFAULT_MAX_FEED_BYTES = 1 << 30
_SIZE_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


class CLIError(Exception):
    """A user-caused problem found by the command itself (exit 2, one line)."""


def main(argv=None) -> int:
    import warnings

    from .ir.support import UnsupportedOpsWarning
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            # the commands say it their own way: `show` lists the ops, `run` fails naming them all
            warnings.simplefilter("ignore", UnsupportedOpsWarning)
            return args.func(args) or 0
    except KeyboardInterrupt:
        print("kernelcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kernelcore show big.pdmodel | head`
        return 0
    except (MemoryError, RecursionError) as e:  # a file too large or too deep for what it asked for
        what = "out of memory" if isinstance(e, MemoryError) else "nested too deeply"
        print(f"kernelcore: error: {what} ({type(e).__name__})", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - sorted below: user errors get one line, bugs a traceback
        if not _is_user_error(e):
            raise
        msg = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"kernelcore: error: {terminal_safe(msg) or type(e).__name__}", file=sys.stderr)
        return EXIT_USAGE


def terminal_safe(text: str) -> str:
    """`text` with every character that a terminal would act on written as a Python escape (\\x1b): the
    engine's one rule for text a person reads (kernelcore.text_safety.safe_text)."""
    return safe_text(text)


def _out(text: str) -> None:
    print(terminal_safe(text))


def _is_user_error(e: BaseException) -> bool:
    from .errors import KernelcoreError
    return isinstance(e, (KernelcoreError, CLIError, OSError))


# ---------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    from . import __version__
    p = argparse.ArgumentParser(prog="kernelcore", description="Show, run and prune PaddlePaddle-style "
                                "program files (.pdmodel / __model__) with kernelcore.")
    p.add_argument("--version", action="version", version=f"kernelcore {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("show", help="print a program file as text (or a JSON summary)")
    s.add_argument("program", help="a .pdmodel / __model__ / serialized ProgramDesc file")
    s.add_argument("--json", action="store_true", help="print a JSON summary instead of the text form")
    s.set_defaults(func=cmd_show)

    r = sub.add_parser("run", help="run a program file and print the fetched outputs' shapes")
    r.add_argument("program")
    r.add_argument("--params", metavar="FILE", help="combined parameter file (default: the program's "
                   "sibling .pdiparams when it exists)")
    r.add_argument("--feed", action="append", default=[], metavar="NAME=FILE.npy",
                   help="feed variable NAME from a .npy file (repeatable)")
    r.add_argument("--random-feeds", action="store_true",
                   help="fill feeds not given with --feed with random data of the declared dtype and shape")
    r.add_argument("--batch", type=int, default=2, metavar="N",
                   help="size used for -1 (unknown) dimensions of random feeds (default 2)")
    r.add_argument("--max-feed-bytes", type=byte_size, default=DEFAULT_MAX_FEED_BYTES, metavar="N",
                   help="the most bytes the random feeds of a run may hold together (default 1G; suffixes K, M, "
                        "G, T are powers of 1024): a file declaring larger inputs is refused, naming the feed")
    r.add_argument("--seed", type=int, default=0, help="seed for random feeds and random ops (default 0)")
    r.add_argument("--fetch", action="append", default=[], metavar="NAME",
                   help="variable to fetch (repeatable; default: the program's fetch ops)")
    r.add_argument("--trace", metavar="T.json", help="save the run's trace (kernelcore's JSON form)")
    r.add_argument("--chrome-trace", metavar="C.json",
                   help="save the trace in Chrome's trace event format (open in ui.perfetto.dev)")
    r.add_argument("--retain", choices=("shapes", "none", "references"), default="shapes",
                   help="what the trace keeps of values (default shapes)")
    r.add_argument("--place", choices=("cpu", "gpu", "strict"), default="cpu",
                   help="where to run (default cpu; strict: the GPU kernels on a NumPy stand-in that refuses "
                        "what CuPy refuses, no GPU needed)")
    r.add_argument("--save-outputs", metavar="OUT.npz", help="save the fetched arrays, keyed by name")
    r.set_defaults(func=cmd_run)

    pr = sub.add_parser("prune", help="keep only the ops the targets need")
    pr.add_argument("program")
    pr.add_argument("--target", action="append", required=True, metavar="NAME",
                    help="a variable to keep computing (repeatable)")
    pr.add_argument("--feed", action="append", default=[], metavar="NAME",
                    help="a variable whose value comes from outside (a cut point; repeatable)")
    pr.add_argument("-o", "--output", metavar="OUT", help="write the pruned program here "
                    "(default: print its text form)")
    pr.set_defaults(func=cmd_prune)

    t = sub.add_parser("trace-info", help="summarize a trace saved by `run --trace`")
    t.add_argument("trace")
    t.add_argument("--top", type=int, default=10, metavar="N", help="op types / op runs to list (default 10)")
    t.set_defaults(func=cmd_trace_info)

    e = sub.add_parser("env", help="what kernelcore runs on here (CPU, BLAS, GPU) and what would make it faster")
    e.add_argument("--json", action="store_true", help="print it as JSON")
    e.set_defaults(func=cmd_env)
    return p


# ---------------------------------------------------------------------------
def cmd_show(args) -> int:
    from .formats.paddle_files import load_program
    prog = load_program(args.program)
    if args.json:
        print(json.dumps(program_summary(prog, args.program), indent=1))  # JSON escapes controls itself
    else:
        _out(str(prog))
        from .ir.support import describe, unsupported_ops
        unsupported = unsupported_ops(prog)
        if unsupported:
            _out(f"\nnot runnable here: {describe(unsupported)}")
    return 0


def program_summary(prog, path=None) -> dict:
    """What `show --json` prints: blocks, op counts, feeds, fetches and persistables."""
    from .ir import dtypes
    from .formats.paddle_files import feed_target_names, fetch_target_names, persistable_names
    from .ir.support import unsupported_ops
    blocks = []
    for b in prog.desc.blocks:
        blocks.append({"idx": b.idx, "parent_idx": b.parent_idx, "vars": len(b.vars), "ops": len(b.ops),
                       "op_types": [op.type for op in b.ops]})
    counts = collections.Counter(op.type for b in prog.desc.blocks for op in b.ops)
    persist = []
    for n in persistable_names(prog):
        v = next(v for b in prog.blocks if b.has_var(n) for v in [b.var(n)])
        persist.append({"name": n, "shape": list(v.shape) if v.shape is not None else None,
                        "dtype": dtypes.type_name(v.dtype) if v.dtype is not None else None})
    return {
        "path": str(path) if path is not None else None,
        "version": prog.desc.version.version if prog.desc.HasField("version") else None,
        "num_blocks": len(blocks),
        "num_ops": sum(b["ops"] for b in blocks),
        "op_type_counts": dict(sorted(counts.items())),
        "feed_names": feed_target_names(prog, strict=False),
        "fetch_names": fetch_target_names(prog, strict=False),
        "persistables": persist,
        "blocks": blocks,
        "unsupported_ops": [u.to_json() for u in unsupported_ops(prog)],
    }


# ---------------------------------------------------------------------------
def cmd_run(args) -> int:
    import kernelcore as kc
    from .formats.paddle_files import (feed_target_names, fetch_target_names, load_params, load_program,
                                       persistable_names)

    prog_path = Path(args.program)
    prog = load_program(prog_path)
    if args.batch < 1:
        raise CLIError(f"--batch must be at least 1, got {args.batch}")
    from .runtime.place import StrictPlace
    place = {"cpu": kc.CPUPlace, "gpu": lambda: kc.GPUPlace(0), "strict": StrictPlace}[args.place]()
    scope = kc.Scope()

    # parameters
    names = persistable_names(prog)
    params_path = Path(args.params) if args.params else _sibling_params(prog_path)
    if args.params and not params_path.is_file():
        raise CLIError(f"{params_path}: no such parameter file")
    lines = [f"program  {prog_path} ({prog.num_blocks} block{'s' * (prog.num_blocks != 1)}, "
             f"{sum(len(b.ops) for b in prog.desc.blocks)} ops)"]
    if params_path is not None and names:
        for n, arr in load_params(params_path, prog).items():
            scope.set(n, place.xp.asarray(arr) if place.kind != "cpu" else arr)  # where the kernels run
        lines.append(f"params   {params_path} ({len(names)} tensors)")
    elif names and prog_path.is_dir():  # Paddle 1.x: one file per parameter next to __model__
        from .formats.paddle_files import load_inference_model
        prog, scope, _, _ = load_inference_model(prog_path, place=place)
        params_path = prog_path
        lines.append(f"params   {prog_path}/<name> ({len(names)} files)")
    elif names:
        raise CLIError(f"{prog_path}: the program has {len(names)} persistable variable(s) "
                       f"({_few(names)}) but no parameter file: pass --params FILE.pdiparams")

    # feeds
    has_feed_ops = bool(feed_target_names(prog, strict=False))
    wanted = feed_target_names(prog) if has_feed_ops else _data_vars(prog)
    feed = {}
    for item in args.feed:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise CLIError(f"--feed takes NAME=FILE.npy, got {item!r}")
        feed[name] = _load_npy(file, name)
    unknown = [n for n in feed if n not in wanted and prog.global_block().find_var_recursive(n) is None]
    if unknown:
        raise CLIError(f"cannot feed {_few(unknown)}: the program has no such variable "
                       f"(its inputs: {_few(wanted) or 'none'})")
    missing = [n for n in wanted if n not in feed]
    if missing and not args.random_feeds:
        raise CLIError(f"no value for the program's input(s) {_few(missing)}: pass --feed NAME=FILE.npy "
                       f"or --random-feeds")
    rng = np.random.default_rng(args.seed)
    for n, (shape, dt) in _random_feed_plan(prog, missing, args.batch, args.max_feed_bytes).items():
        feed[n] = _random_feed(shape, dt, rng)
    for n, v in feed.items():
        how = "random" if n in missing else "file"
        lines.append(f"feed     {safe_name(n)}: {_shape_text(v)} ({how})")

    # fetches
    if args.fetch:
        fetch_list = list(args.fetch)
    elif fetch_target_names(prog, strict=False):
        fetch_list = None  # the program's fetch ops, in col order
    else:
        fetch_list = _sink_vars(prog)
        if not fetch_list:
            raise CLIError(f"{prog_path}: the program has no fetch ops and writes nothing no op reads: "
                           f"pass --fetch NAME")
        lines.append(f"note     no fetch ops; fetching what no op reads: {_few(fetch_list)}")
    fetch_names = fetch_list if fetch_list is not None else fetch_target_names(prog)

    exe = kc.Executor(place)
    exe.seed(args.seed)
    want_trace = bool(args.trace or args.chrome_trace)
    t0 = time.perf_counter()
    with kc.trace(retain=args.retain if want_trace else "none") as tr:
        outs = exe.run(prog, feed=feed, fetch_list=fetch_list, scope=scope)
    wall = time.perf_counter() - t0

    for n, v in zip(fetch_names, outs):
        lines.append(f"fetch    {safe_name(n)}: {_shape_text(v)}{_stats(v)}")
    ops = tr.filter("op_run")
    op_ms = sum(e.dur_ns or 0 for e in ops) / 1e6
    lines.append(f"ran      {len(ops)} op runs on {place} in {wall * 1e3:.2f} ms ({op_ms:.2f} ms in kernels)")
    if want_trace:
        tr.meta.update({"program": str(prog_path), "params": str(params_path) if names else None,
                        "place": str(place), "seed": args.seed, "feeds": sorted(feed),
                        "fetches": list(fetch_names)})
        if args.trace:
            tr.save(args.trace)
            lines.append(f"trace    {args.trace} ({len(tr)} events)")
        if args.chrome_trace:
            tr.save_chrome(args.chrome_trace)
            lines.append(f"chrome   {args.chrome_trace}")
    if args.save_outputs:
        np.savez(args.save_outputs, **{n: np.asarray(v) for n, v in zip(fetch_names, outs)
                                       if hasattr(v, "shape")})
        lines.append(f"outputs  {args.save_outputs}")
    _out("\n".join(lines))
    return 0


def _sibling_params(prog_path: Path) -> Path | None:
    candidates = [prog_path.with_suffix(".pdiparams")]
    if prog_path.name == "__model__":
        candidates.append(prog_path.with_name("__params__"))
    if prog_path.is_dir():
        candidates = [prog_path / "__params__"]
    return next((c for c in candidates if c.is_file()), None)


def _data_vars(prog) -> list[str]:
    """Block 0's inputs when it has no feed ops: variables some op reads before any op writes
    them, that are not persistable (parameters come from the parameter file)."""
    block = prog.global_block()
    written, out = set(), []
    for op in block.desc.ops:
        for v in op.inputs:
            for n in v.arguments:
                if n in written or n in out:
                    continue
                var = block.find_var_recursive(n)
                if var is not None and not var.persistable and var.shape is not None:
                    out.append(n)
        for v in op.outputs:
            written.update(v.arguments)
    return out


def _sink_vars(prog) -> list[str]:
    """Block 0's variables that some op writes and no op (in any block) reads."""
    read = {n for b in prog.desc.blocks for op in b.ops for v in op.inputs for n in v.arguments}
    out = []
    for op in prog.global_block().desc.ops:
        for v in op.outputs:
            for n in v.arguments:
                var = prog.global_block().find_var_recursive(n)
                if n not in read and n not in out and (var is None or not var.persistable):
                    out.append(n)
    return out


def byte_size(text: str) -> int:
    """A byte count for --max-feed-bytes: digits with an optional K, M, G or T (powers of 1024; "4G", "512M",
    "1GiB" and "1GB" all read so)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _SIZE_SUFFIXES else ""
    digits = t[:-1] if unit else t
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"expected a byte count such as 1073741824, 512M or 4G, got {text!r}")
    return int(digits) * _SIZE_SUFFIXES[unit]


def _bytes_text(n: int) -> str:
    """`n` bytes for a person: the exact count and, from a KiB up, the nearest binary unit."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n:,} bytes ({n / size:.4g} {unit})"
    return f"{n:,} bytes"


def _random_feed_plan(prog, names, batch: int, max_bytes: int) -> dict:
    """{name: (shape, NumPy dtype)} of the random feeds for `names`, checked before anything is allocated:
    their declared sizes (in Python integers, so no product of dims overflows) may add up to `max_bytes`."""
    plan, total = {}, 0
    for n in names:
        shape, dt = _random_feed_decl(prog, n, batch)
        elements = math.prod(shape)
        nbytes = elements * dt.itemsize
        total += nbytes
        if total > max_bytes:
            before = f"; with the random feeds before it, {_bytes_text(total)}" if total != nbytes else ""
            raise CLIError(f"random feed {quote_name(n, NAME_CHARS_SHOWN)} would be {dt}{list(shape)}: "
                           f"{elements:,} elements, {_bytes_text(nbytes)}{before}, over the cap of "
                           f"{_bytes_text(max_bytes)} for random feeds (raise it with --max-feed-bytes, e.g. 4G, "
                           f"or pass --feed {safe_name(n)}=FILE.npy)")
        plan[n] = shape, dt
    return plan


def _random_feed_decl(prog, name: str, batch: int) -> tuple:
    """(shape, NumPy dtype) the program declares for feed `name`, -1 dims taken as `batch`."""
    from .ir import dtypes
    var = prog.global_block().find_var_recursive(name)
    if var is None or var.shape is None or var.dtype is None:
        raise CLIError(f"cannot make a random feed for {quote_name(name, NAME_CHARS_SHOWN)}: the program "
                       f"declares no tensor shape and dtype for it")
    shape = tuple(batch if d < 0 else int(d) for d in var.shape)
    try:
        dt = dtypes.to_numpy(var.dtype)
    except TypeError:
        raise CLIError(f"cannot make a random feed for {quote_name(name, NAME_CHARS_SHOWN)}: dtype "
                       f"{dtypes.type_name(var.dtype)} has no NumPy equivalent") from None
    return shape, dt


def _random_feed(shape: tuple, dt: np.dtype, rng) -> np.ndarray:
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 10, size=shape).astype(dt)  # small non-negative: valid as labels and ids
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _load_npy(file: str, name: str) -> np.ndarray:
    from .errors import LoadError
    try:
        arr = np.load(file, allow_pickle=False)
    except OSError as e:
        raise LoadError(f"{file}: cannot read the feed for {name!r} ({e.strerror or e})") from None
    except (ValueError, EOFError) as e:
        raise LoadError(f"{file}: not a .npy array file (feed {name!r}): {e}") from None
    if not isinstance(arr, np.ndarray):  # an .npz archive
        keys = list(arr.keys())
        arr.close()
        if len(keys) != 1:
            raise LoadError(f"{file}: an .npz archive holding {len(keys)} arrays; feed {name!r} takes one "
                            f".npy array (or an .npz holding exactly one)")
        with np.load(file, allow_pickle=False) as z:
            arr = z[keys[0]]
    return arr


def _shape_text(v) -> str:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"{v.dtype}[{', '.join(map(str, v.shape))}]"
    return type(v).__name__


def _stats(v) -> str:
    if not hasattr(v, "dtype") or v.size == 0 or v.dtype.kind not in "biuf":
        return ""
    a = np.asarray(v, dtype=np.float64)
    return f"  min {a.min():.4g}  max {a.max():.4g}  mean {a.mean():.4g}"


def _few(names, k: int = 5) -> str:
    names = list(names)
    shown = ", ".join(short_name(n, NAME_CHARS_SHOWN) for n in names[:k])
    return shown + (f", ... ({len(names)} in all)" if len(names) > k else "")


# ---------------------------------------------------------------------------
def cmd_prune(args) -> int:
    from .formats.paddle_files import load_program, save_program
    try:
        from .transforms.prune import prune
    except ImportError as e:
        raise CLIError(f"this kernelcore has no pruning ({e})") from None
    prog = load_program(args.program)
    result = prune(prog, list(args.target), list(args.feed)) if args.feed else prune(prog, list(args.target))
    new = result.program
    before = sum(len(b.ops) for b in prog.desc.blocks)
    after = sum(len(b.ops) for b in new.desc.blocks)
    if args.output:
        save_program(new, args.output)
        _out(f"wrote {args.output}: kept {after} of {before} ops for {_few(args.target)}")
    else:
        _out(str(new))
    return 0


# ---------------------------------------------------------------------------
def cmd_env(args) -> int:
    from .runtime_env import format_info, runtime_info
    info = runtime_info()
    print(json.dumps(info, indent=1) if args.json else format_info(info))
    return 0


def cmd_trace_info(args) -> int:
    from .errors import LoadError
    from .observe.trace import Trace
    tr = Trace.load(args.trace)
    try:
        text = _trace_text(tr, args.top)
    except (TypeError, ValueError, AttributeError) as e:  # fields of the wrong type in a hand-edited file
        raise LoadError(f"{args.trace}: malformed trace events ({e})") from None
    _out(text)
    return 0


def _trace_text(tr, top: int) -> str:
    lines = [f"trace    {tr.summary()}", f"retain   {tr.retain}"]
    for k, v in sorted(tr.meta.items()):
        lines.append(f"meta     {safe_name(k)}: {safe_name(str(v))}")
    events = tr.events
    scopes = {e.scope for e in events if e.scope is not None}
    blocks = {e.block for e in events if e.block is not None}
    steps = sum(1 for e in events if e.kind == "step_begin")
    lines.append(f"scopes   {len(scopes)} (in {len(blocks)} block{'s' * (len(blocks) != 1)}); timesteps {steps}")
    errors = [e for e in events if e.kind == "error"]
    for e in errors[:top]:
        lines.append(f"error    {short_name(e.op_type, NAME_CHARS_SHOWN)} (block {e.block}, op #{e.op}): "
                     f"{' '.join(safe_text(str(e.message)).splitlines())}")  # one line per error
    ops = [e for e in events if e.kind == "op_run"]
    if ops:
        by_type: dict = collections.defaultdict(lambda: [0, 0])
        for e in ops:
            by_type[e.op_type][0] += 1
            by_type[e.op_type][1] += int(e.dur_ns or 0)
        total = sum(t for _, t in by_type.values()) or 1
        lines.append("")
        lines.append(f"{'op type':<28} {'runs':>6} {'total ms':>10} {'share':>6}")
        for op_type, (n, t) in sorted(by_type.items(), key=lambda kv: -kv[1][1])[:top]:
            shown = short_name(str(op_type), NAME_CHARS_SHOWN)
            lines.append(f"{shown:<28} {n:>6} {t / 1e6:>10.3f} {100 * t / total:>5.1f}%")
        lines.append("")
        lines.append("slowest op runs:")
        for e in sorted(ops, key=lambda e: -(e.dur_ns or 0))[:top]:
            outs = ", ".join(f"{short_name(name, NAME_CHARS_SHOWN)}{list(shape) if shape is not None else ''}"
                             for _, name, shape, _ in e.outputs)
            op_type = short_name(e.op_type, NAME_CHARS_SHOWN)
            lines.append(f"  {(e.dur_ns or 0) / 1e3:>9.1f} us  {op_type} (block {e.block}, op #{e.op})"
                         f"{' t=' + str(e.timestep) if e.timestep is not None else ''}{' -> ' + outs if outs else ''}")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m kernelcore.cli
    sys.exit(main())
