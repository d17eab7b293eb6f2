"""Coverage-guided fuzzing of the PIR `.json` reader: whatever bytes arrive, reading ends in a Program or a
kernelcore LoadError, in bounded time and memory; a Program it gives then goes through the whole pipeline of
tests/fuzz/fuzz_pipeline.py (text, display, parts, prune, a traced run), where anything but a kernelcore error
is a finding too.

    # seeds: PIR files Paddle wrote (tests/paddle_oracle/make_pir_models.py) and the hand-made minimal program
    .venv-paddle/bin/python tests/paddle_oracle/make_pir_models.py /tmp/kc-pir mlp ops if_while_true lstm
    python tests/fuzz/fuzz_pir.py /tmp/kc-pir -max_total_time=600 -rss_limit_mb=2048 -timeout=20

Two mutators: atheris's own byte mutations (most break the JSON: the parser's checks), and, for one input in
two, a structural one (`mutate_document`) that swaps one field of a valid document for another JSON value, which
reaches the reader's checks of ids, types, regions and attributes. tests/test_pir_reader.py runs both for a few
hundred seeded inputs as a smoke test.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

JUNK = (None, True, False, 0, -1, 1, 2 ** 63, -2 ** 70, 0.5, float("1e308"), "", "x", "1.relu", "\x1b[31m",
        [], {}, [{"%": 1}], [{"%": -1}], {"%": 0}, {"#": "0.t_dtensor", "D": [{"#": "0.t_f32"}, [2 ** 62] * 8]})


def pir_pipeline(data: bytes) -> str:
    """'load' when the reader refused `data` with LoadError, else the pipeline's failed stages joined."""
    import kernelcore as kc
    from kernelcore.formats.pir_json import pir_program_from_bytes
    from fuzz.fuzz_pipeline import program_pipeline

    try:
        prog = pir_program_from_bytes(data, source="fuzz.json")
    except kc.LoadError:
        return "load"
    return ",".join(program_pipeline(prog.to_bytes()))


def _paths(node, path=()):
    yield path
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, path + (i,))


def mutate_document(doc, rng: random.Random):
    """A copy of `doc` with one field (anywhere) replaced by a junk value or a field from elsewhere in it, or
    one list element dropped or repeated."""
    doc = json.loads(json.dumps(doc))
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    key = path[-1]
    choice = rng.random()
    if isinstance(parent, list) and choice < 0.3:
        if rng.random() < 0.5:
            del parent[key]
        else:
            parent.insert(key, parent[key])
    elif choice < 0.6:
        donor = doc
        for p in rng.choice(paths):
            donor = donor[p]
        parent[key] = json.loads(json.dumps(donor))
    else:
        parent[key] = rng.choice(JUNK)
    return doc


def main(argv) -> None:
    import atheris

    seeds = []
    for arg in argv[1:]:
        p = Path(arg)
        if p.is_dir():
            seeds += [json.loads(f.read_text()) for f in sorted(p.glob("*.json"))
                      if f.read_bytes()[:64].lstrip().startswith(b'{"base_code"')]

    def one(data: bytes) -> None:
        if seeds and data[:1] and data[0] % 2:
            rng = random.Random(data)
            data = json.dumps(mutate_document(rng.choice(seeds), rng)).encode()
        pir_pipeline(data)

    atheris.Setup(argv, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
