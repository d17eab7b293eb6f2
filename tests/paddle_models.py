"""Models written by Paddle for the parity tests: made once a session by a tests/paddle_oracle script under a
Paddle venv, loaded back by kernelcore, and kernelcore's fetches compared with the ones Paddle computed.

A maker script saves, for each case, `<case>.pdmodel`/`.pdiparams` (save_inference_model), `<case>.json`
(feed_names, fetch_names, op_types, ...) and `<case>.npz` (the feeds by name, Paddle's fetches as fetch_<i>)."""
import json
from pathlib import Path

import numpy as np

import kernelcore as kc
from test_paddle_parity import ORACLE, _need, run_paddle


def make_models(tmp_path_factory, python: Path, version: str, script: str, name: str) -> Path:
    """The folder `script` (under tests/paddle_oracle) writes its models into with the Paddle of `python`;
    skips when that venv is missing or holds another Paddle than `version`."""
    _need(python, version)
    out = tmp_path_factory.mktemp(name)
    run_paddle(python, ORACLE / script, out)
    return out


def load_model(d: Path, case: str):
    """(meta, ref, program, scope, feed names, fetch names) of `case`; its feeds and fetches as Paddle named them."""
    meta = json.loads((d / f"{case}.json").read_text())
    ref = np.load(d / f"{case}.npz")
    prog, scope, feeds, fetches = kc.load_inference_model(d / case)
    assert feeds == meta["feed_names"] and fetches == meta["fetch_names"]
    return meta, ref, prog, scope, feeds, fetches


def check_fetches(outs, ref, case: str, names=None, rtol=1e-4, atol=1e-5) -> None:
    """kernelcore's fetches `outs` are Paddle's (`ref["fetch_<i>"]`): same shapes and dtypes, floats within
    rtol/atol, integers and bools (indices, counts, ids) equal."""
    for i, got in enumerate(outs):
        want = ref[f"fetch_{i}"]
        assert got.shape == want.shape and got.dtype == want.dtype, (case, i, got.shape, want.shape)
        what = f"{case}: fetch {i}" + (f" ({names[i]})" if names else "")
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)
        else:
            np.testing.assert_array_equal(got, want, err_msg=what)
