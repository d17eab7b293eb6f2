"""Paddle's own op signatures for every op type in a directory of PIR programs Paddle wrote (the API sweep's
`p3-pir-*` directory): the operand, attribute and result names Paddle's runtime reports for each
(`Operation.get_input_names()` etc., from its op YAML), as make_pir_models.py records them for its zoo.

    .venv-paddle/bin/python tests/paddle_oracle/pir_signatures.py DIR [OUT]

writes OUT (default DIR/signatures.json): {op name: {"inputs", "attrs", "outputs"}, or null for a builtin op}.
tests/test_pir_op_table_sweep.py checks kernelcore's PIR op table against it (through `ensure`, from kernelcore's
venv).

Paddle aborts (SIGABRT) on a few programs it wrote but cannot reopen, so the programs are read by a worker process
that is started again after the program it died on.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

MAX_RESTARTS = 50


def programs(directory: Path) -> list[Path]:
    """One program per op type it is the first (by name) to hold, from the sweep's manifest when there is one."""
    manifest = directory / "manifest.json"
    if not manifest.exists():
        return sorted(p for p in directory.glob("*.json") if p.name != "signatures.json")
    chosen, seen = [], set()
    for rec in sorted(json.loads(manifest.read_text())["records"], key=lambda r: r.get("file") or ""):
        new = set(rec.get("ops", [])) - seen
        if rec.get("status") == "built" and new:
            chosen.append(directory / f"{rec['file']}.json")
            seen |= new
    return chosen


def worker(files: list[str], log: Path) -> None:
    os.environ.pop("FLAGS_enable_pir_api", None)  # Paddle 3's default: PIR
    import paddle
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    kept = []  # Paddle also aborts destroying some programs that hold an `if`: none is dropped before the exit
    with open(log, "a") as fh:
        for f in files:
            fh.write(json.dumps({"start": f}) + "\n")
            fh.flush()
            try:
                prog, _feeds, _fetches = paddle.static.load_inference_model(str(Path(f).with_suffix("")), exe)
            except Exception:  # noqa: BLE001 - one program Paddle cannot reopen does not stop the rest
                continue
            kept.append(prog)
            fh.write(json.dumps({"sigs": signatures(prog)}) + "\n")
            fh.flush()
    os._exit(0)


def ops_in(block):
    """The ops of `block` and of the blocks nested in them (an if's branches, a while's body)."""
    for op in block.ops:
        yield op
        for sub in op.blocks():
            yield from ops_in(sub)


def signatures(prog) -> dict:
    table = {}
    for op in ops_in(prog.global_block()):
        try:
            table[op.name()] = {"inputs": op.get_input_names(), "attrs": op.get_attr_names(),
                                "outputs": op.get_output_names()}
        except Exception:  # noqa: BLE001 - builtin ops have no YAML: PIR itself fixes their shape
            table[op.name()] = None
    return table


def main(directory: Path, out: Path) -> None:
    todo = [str(p) for p in programs(directory)]
    log = out.with_suffix(".log")
    log.unlink(missing_ok=True)
    env = dict(os.environ, GLOG_minloglevel="2", PYTHONWARNINGS="ignore")
    for _ in range(MAX_RESTARTS):
        subprocess.run([sys.executable, __file__, "--worker", str(log), *todo], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = [json.loads(line).get("start") for line in log.read_text().splitlines()]
        last = next((s for s in reversed(started) if s), None)
        todo = todo[todo.index(last) + 1:] if last in todo else todo
        if not todo:
            break
    table: dict = {}
    for line in log.read_text().splitlines():
        for name, sig in json.loads(line).get("sigs", {}).items():
            table.setdefault(name, sig)
    log.unlink()
    out.write_text(json.dumps(dict(sorted(table.items())), indent=0))
    print(f"{len(table)} op types from {directory}")


def ensure(directory: Path, python: Path) -> dict:
    """The signatures of `directory`'s programs, read by `python` (a Paddle 3 venv's) unless already written there;
    called from kernelcore's venv."""
    out = directory / "signatures.json"
    if not out.exists():
        subprocess.run([str(python), __file__, str(directory)], check=True, capture_output=True, timeout=600)
    return json.loads(out.read_text())


def sweep_signatures() -> dict:
    """The signatures of the API sweep's Paddle 3.3.1 PIR programs (generated and cached by api_sweep.py)."""
    import api_sweep
    key, _label, venv, flag = next(f for f in api_sweep.FORMATS if f[0] == "p3-pir")
    return ensure(api_sweep.generate(key, venv, flag, 1, log=None), venv / "bin" / "python")


if __name__ == "__main__":
    if sys.argv[1] == "--worker":
        worker(sys.argv[3:], Path(sys.argv[2]))
    d = Path(sys.argv[1])
    main(d, Path(sys.argv[2]) if len(sys.argv) > 2 else d / "signatures.json")
