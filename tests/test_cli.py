"""The `kernelcore` command, run in-process through main([...]) and once as the installed script."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "programs"
MLP = EXAMPLES / "mlp.pdmodel"


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_user_error(capsys, *argv, words=""):
    code, out, err = cli(capsys, *argv)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelcore: error: "), err
    assert "Traceback" not in err
    assert words in lines[0], lines[0]
    return lines[0]


def mlp_reference(x):
    """The MLP in NumPy from the parameters Paddle saved."""
    p = kc.load_params(EXAMPLES / "mlp.pdiparams", kc.load_program(MLP))
    h = np.maximum(x @ p["fc_0.w_0"] + p["fc_0.b_0"], 0)
    h = np.tanh(h @ p["fc_1.w_0"] + p["fc_1.b_0"])
    z = h @ p["fc_2.w_0"] + p["fc_2.b_0"]
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


# ---------------------------------------------------------------------------
def test_show_prints_the_text_form(capsys):
    code, out, _ = cli(capsys, "show", MLP)
    assert code == 0
    assert out.strip() == str(kc.load_program(MLP))


def test_show_json_summary(capsys):
    code, out, _ = cli(capsys, "show", "--json", MLP)
    assert code == 0
    s = json.loads(out)
    assert s["num_blocks"] == 1 and s["num_ops"] == 11
    assert s["feed_names"] == ["x"] and s["fetch_names"] == ["fc_2.tmp_2"]
    assert s["op_type_counts"]["mul"] == 3
    assert s["persistables"][0] == {"name": "fc_0.b_0", "shape": [32], "dtype": "float32"}
    assert s["version"] == 3003001


def test_run_with_random_feeds_loads_the_sibling_params(capsys, tmp_path):
    code, out, _ = cli(capsys, "run", MLP, "--random-feeds", "--seed", 3,
                       "--save-outputs", tmp_path / "o.npz")
    assert code == 0
    assert "params   " in out and "mlp.pdiparams (6 tensors)" in out
    assert "feed     x: float32[8, 13] (random)" in out
    assert "fetch    fc_2.tmp_2: float32[8, 10]" in out
    assert "11 op runs" in out
    x = np.random.default_rng(3).standard_normal((8, 13)).astype(np.float32)
    got = np.load(tmp_path / "o.npz")["fc_2.tmp_2"]
    np.testing.assert_allclose(got, mlp_reference(x), rtol=1e-5, atol=1e-6)


def test_run_with_feed_files_fetches_and_traces(capsys, tmp_path):
    x = np.random.default_rng(0).standard_normal((8, 13)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    trace, chrome, outs = tmp_path / "t.json", tmp_path / "c.json", tmp_path / "o.npz"
    code, out, _ = cli(capsys, "run", MLP, "--params", EXAMPLES / "mlp.pdiparams",
                       "--feed", f"x={tmp_path / 'x.npy'}", "--fetch", "fc_0.tmp_2", "--fetch", "fc_2.tmp_2",
                       "--trace", trace, "--chrome-trace", chrome, "--retain", "references",
                       "--save-outputs", outs)
    assert code == 0, out
    assert "feed     x: float32[8, 13] (file)" in out
    assert "fetch    fc_0.tmp_2: float32[8, 32]" in out
    np.testing.assert_allclose(np.load(outs)["fc_2.tmp_2"], mlp_reference(x), rtol=1e-5, atol=1e-6)

    tr = kc.Trace.load(trace)
    assert [e.op_type for e in tr.filter("op_run")] == [op.type for op in kc.load_program(MLP).global_block().ops]
    assert tr.meta["program"] == str(MLP) and tr.meta["fetches"] == ["fc_0.tmp_2", "fc_2.tmp_2"]
    ch = json.loads(chrome.read_text())
    assert sum(1 for e in ch["traceEvents"] if e.get("ph") == "X") == 11

    code, info, _ = cli(capsys, "trace-info", trace, "--top", 3)
    assert code == 0
    assert "op_run 11" in info and "mul" in info and "slowest op runs" in info
    assert f"program: {MLP}" in info


@pytest.mark.parametrize("retain", ["none", "shapes"])
def test_run_trace_retention(capsys, tmp_path, retain):
    code, _, _ = cli(capsys, "run", MLP, "--random-feeds", "--trace", tmp_path / "t.json", "--retain", retain)
    assert code == 0
    tr = kc.Trace.load(tmp_path / "t.json")
    mul = tr.filter("op_run", op_type="mul")[0]
    assert tr.retain == retain
    assert bool(mul.outputs) == (retain == "shapes")


def test_run_program_without_feed_ops_uses_batch_for_unknown_dims(capsys, tmp_path):
    prog = kc.Program()
    with kc.program_guard(prog):
        block = prog.global_block()
        x = block.create_var("x", shape=[-1, 4], dtype="float32")
        ids = block.create_var("ids", shape=[-1], dtype="int64")
        kc.op.relu(x)
        kc.op.scale(ids, scale=2.0)
    kc.save_program(prog, tmp_path / "p.pdmodel")
    code, out, _ = cli(capsys, "run", tmp_path / "p.pdmodel", "--random-feeds", "--batch", 5)
    assert code == 0, out
    assert "feed     x: float32[5, 4] (random)" in out and "feed     ids: int64[5] (random)" in out
    assert "no fetch ops; fetching what no op reads" in out
    assert "float32[5, 4]" in out.split("note")[1]


def test_prune(capsys, tmp_path):
    out_path = tmp_path / "pruned.pdmodel"
    code, out, _ = cli(capsys, "prune", MLP, "--target", "fc_1.tmp_2", "-o", out_path)
    assert code == 0 and "kept" in out
    pruned = kc.load_program(out_path)
    types = [op.type for op in pruned.global_block().ops]
    assert "softmax" not in types and types.count("mul") == 2 and "tanh" in types
    code, text, _ = cli(capsys, "prune", MLP, "--target", "fc_0.tmp_2")
    assert code == 0 and "relu" in text and "tanh" not in text
    assert_user_error(capsys, "prune", MLP, "--target", "no_such_var", words="no_such_var")
    # a cut point: fc_1.tmp_2 comes from outside, so only the last layer remains, fed by name
    code, _, _ = cli(capsys, "prune", MLP, "--target", "fc_2.tmp_2", "--feed", "fc_1.tmp_2", "-o", out_path)
    assert code == 0
    assert [op.type for op in kc.load_program(out_path).global_block().ops] == \
        ["mul", "elementwise_add", "softmax", "fetch"]
    # the original parameter file holds 6 tensors, the pruned program needs 2: refused, one line
    assert_user_error(capsys, "run", out_path, "--params", EXAMPLES / "mlp.pdiparams", "--random-feeds",
                      words="expected tensor(s)")
    params = kc.load_params(EXAMPLES / "mlp.pdiparams", kc.load_program(MLP))
    kc.save_params(out_path.with_suffix(".pdiparams"), {n: params[n] for n in ("fc_2.w_0", "fc_2.b_0")})
    code, out, _ = cli(capsys, "run", out_path, "--random-feeds")
    assert code == 0, out
    assert "feed     fc_1.tmp_2: float32[8, 16] (random)" in out and "fc_2.tmp_2: float32[8, 10]" in out


# ---------------------------------------------------------------------------
def test_user_errors_print_one_line_and_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.pdmodel"
    bad.write_bytes(b"\x00garbage\xff")
    assert_user_error(capsys, "show", tmp_path / "missing.pdmodel", words="No such file")
    assert_user_error(capsys, "show", bad, words="bad.pdmodel")
    assert_user_error(capsys, "run", bad, words="bad.pdmodel")
    assert_user_error(capsys, "run", MLP, words="--random-feeds")
    assert_user_error(capsys, "run", MLP, "--feed", "x", words="NAME=FILE.npy")
    assert_user_error(capsys, "run", MLP, "--feed", f"x={tmp_path / 'none.npy'}", words="none.npy")
    np.save(tmp_path / "small.npy", np.zeros((3, 13), np.float32))
    assert_user_error(capsys, "run", MLP, "--feed", f"x={tmp_path / 'small.npy'}", words="expected shape [8, 13]")
    assert_user_error(capsys, "run", MLP, "--feed", f"nope={tmp_path / 'small.npy'}", words="nope")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    assert_user_error(capsys, "run", MLP, "--feed", f"x={tmp_path / 'junk.npy'}", words="junk.npy")
    assert_user_error(capsys, "run", MLP, "--random-feeds", "--fetch", "nope", words="nope")
    assert_user_error(capsys, "run", MLP, "--random-feeds", "--batch", 0, words="--batch")
    assert_user_error(capsys, "run", MLP, "--params", tmp_path / "none.pdiparams", words="none.pdiparams")
    (tmp_path / "short.pdiparams").write_bytes((EXAMPLES / "mlp.pdiparams").read_bytes()[:100])
    assert_user_error(capsys, "run", MLP, "--params", tmp_path / "short.pdiparams", words="short.pdiparams")
    assert_user_error(capsys, "trace-info", bad, words="bad.pdmodel")
    assert_user_error(capsys, "run", MLP, "--random-feeds", "--trace", tmp_path / "no" / "dir" / "t.json",
                      words="No such file")


def test_run_a_paddle1_directory_with_one_file_per_parameter(capsys, tmp_path):
    prog, scope, _, _ = kc.load_inference_model(EXAMPLES / "mlp")
    kc.save_program(prog, tmp_path / "__model__")
    for n in kc.formats.paddle_files.persistable_names(prog):
        kc.save_params(tmp_path / n, {n: scope.get(n)})
    code, out, _ = cli(capsys, "run", tmp_path, "--random-feeds")
    assert code == 0, out
    assert "(6 files)" in out and "fc_2.tmp_2: float32[8, 10]" in out


def test_program_without_params_file_says_so(capsys, tmp_path):
    shutil.copy(MLP, tmp_path / "lonely.pdmodel")
    assert_user_error(capsys, "run", tmp_path / "lonely.pdmodel", "--random-feeds", words="--params")


def test_unknown_op_is_a_user_error(capsys, tmp_path):
    prog = kc.load_program(MLP)
    prog.global_block().desc.ops[3].type = "relu_that_does_not_exist"
    prog.touch()
    kc.save_program(prog, tmp_path / "odd.pdmodel")
    shutil.copy(EXAMPLES / "mlp.pdiparams", tmp_path / "odd.pdiparams")
    assert_user_error(capsys, "run", tmp_path / "odd.pdmodel", "--random-feeds", words="relu_that_does_not_exist")
    code, out, _ = cli(capsys, "show", tmp_path / "odd.pdmodel")  # showing it still works
    assert code == 0 and "relu_that_does_not_exist" in out


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["run", str(MLP), "--retain", "everything"])
    assert e.value.code == 2


# -- random feeds are capped by what they would hold -------------------------------------------------------
def _program_declaring(tmp_path, dims, name="x"):
    prog = kc.Program()
    with kc.program_guard(prog):
        x = prog.global_block().create_var(name, shape=list(dims), dtype="float32")
        kc.op.relu(x)
    path = tmp_path / "big.pdmodel"
    kc.save_program(prog, path)
    return path


def test_random_feeds_larger_than_the_cap_are_refused_naming_the_feed(capsys, tmp_path):
    path = _program_declaring(tmp_path, [100_000, 100_000], name="big\x1b")  # 40 GB declared by a tiny file
    assert path.stat().st_size < 200
    line = assert_user_error(capsys, "run", path, "--random-feeds", words="random feed 'big\\x1b'")
    assert "float32[100000, 100000]" in line and "10,000,000,000 elements" in line
    assert "40,000,000,000 bytes (37.25 GiB)" in line and "--max-feed-bytes" in line


def test_random_feed_dims_whose_product_overflows_give_the_same_error(capsys, tmp_path):
    path = _program_declaring(tmp_path, [2**62, 2**62, 8])
    line = assert_user_error(capsys, "run", path, "--random-feeds", words="random feed 'x'")
    assert f"{2**127:,} elements" in line and "--max-feed-bytes" in line


def test_max_feed_bytes_sets_the_cap(capsys, tmp_path):
    path = _program_declaring(tmp_path, [1024, 1024])  # 4 MiB of float32
    assert_user_error(capsys, "run", path, "--random-feeds", "--max-feed-bytes", "4194303", words="over the cap")
    code, out, _ = cli(capsys, "run", path, "--random-feeds", "--max-feed-bytes", "4M")
    assert code == 0 and "feed     x: float32[1024, 1024] (random)" in out


def test_the_cap_counts_every_random_feed_of_the_run(capsys, tmp_path):
    prog = kc.Program()
    with kc.program_guard(prog):
        a = prog.global_block().create_var("a", shape=[1024], dtype="float32")
        b = prog.global_block().create_var("b", shape=[1024], dtype="float32")
        kc.op.elementwise_add(a, b)
    kc.save_program(prog, tmp_path / "two.pdmodel")
    line = assert_user_error(capsys, "run", tmp_path / "two.pdmodel", "--random-feeds", "--max-feed-bytes", "6K",
                             words="random feed 'b'")
    assert "with the random feeds before it, 8,192 bytes" in line


@pytest.mark.parametrize("text, n", [("1073741824", 1 << 30), ("512M", 512 << 20), ("4G", 4 << 30), ("4g", 4 << 30),
                                     ("1GiB", 1 << 30), ("2KB", 2048), ("1T", 1 << 40)])
def test_byte_sizes_read_with_binary_suffixes(text, n):
    from kernelcore.cli import byte_size
    assert byte_size(text) == n


@pytest.mark.parametrize("text", ["", "G", "-1", "1.5G", "4X", "lots"])
def test_byte_sizes_that_are_none_are_usage_errors(capsys, text):
    with pytest.raises(SystemExit) as e:
        main(["run", str(MLP), "--random-feeds", "--max-feed-bytes", text])
    assert e.value.code == 2 and "--max-feed-bytes" in capsys.readouterr().err


def test_a_name_with_a_newline_cannot_forge_a_line_of_the_output(capsys, tmp_path):
    path = _program_declaring(tmp_path, [2], name="x\nfetch    forged: float32[1]")
    code, out, _ = cli(capsys, "run", path, "--random-feeds")
    assert code == 0 and "feed     x\\nfetch    forged: float32[1]: float32[2] (random)" in out
    assert not any(line.startswith("fetch    forged") for line in out.splitlines())


def test_terminal_safe_escapes_the_invisible_and_the_separators():
    from kernelcore.cli import terminal_safe
    assert terminal_safe("a\u061cb\u2028c\u2029d\ufeffe\u200bf") == "a\\u061cb\\u2028c\\u2029d\\ufeffe\\u200bf"


# ---------------------------------------------------------------------------
def _console_script() -> str:
    here = Path(sys.executable).parent / "kernelcore"
    found = str(here) if here.exists() else shutil.which("kernelcore")
    if not found:
        pytest.fail("the `kernelcore` console script is not installed: run `pip install -e .` (./dev does)")
    return found


def test_installed_console_script(tmp_path):
    exe = _console_script()
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    r = subprocess.run([exe, "run", str(MLP), "--random-feeds", "--trace", str(tmp_path / "t.json")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "fetch    fc_2.tmp_2: float32[8, 10]" in r.stdout
    r = subprocess.run([exe, "show", str(tmp_path / "missing.pdmodel")], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.startswith("kernelcore: error: ") and "Traceback" not in r.stderr


def test_run_on_a_gpu_place(capsys, tmp_path):
    if not kc.gpu_available():
        assert_user_error(capsys, "run", MLP, "--random-feeds", "--place", "gpu", words="GPU")
        return
    code, out, _ = cli(capsys, "run", MLP, "--random-feeds", "--place", "gpu", "--save-outputs", tmp_path / "g.npz")
    assert code == 0, out
    cli(capsys, "run", MLP, "--random-feeds", "--save-outputs", tmp_path / "c.npz")
    np.testing.assert_allclose(np.load(tmp_path / "g.npz")["fc_2.tmp_2"], np.load(tmp_path / "c.npz")["fc_2.tmp_2"],
                               rtol=1e-5, atol=1e-6)
