#!/usr/bin/env bash
# Build both Paddle venvs (idempotent) and regenerate every oracle output.
#   run_all.sh [OUTDIR]     (default tests/paddle_oracle/out; writes OUTDIR/p3 and OUTDIR/p2)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$here/out}"
py3="$(bash "$here/setup_env.sh" "$repo/.venv-paddle" 3.3.1 | tail -n1)"
py2="$(bash "$here/setup_env.sh" "$repo/.venv-paddle2" 2.6.2 | tail -n1)"
export GLOG_minloglevel=1   # hide Paddle's "New Executor is Running" info lines
FLAGS_enable_pir_api=0 "$py3" "$here/make_programs.py" "$out/p3"
FLAGS_enable_pir_api=0 "$py3" "$here/check_pdiparams.py" "$out/p3"
"$py2" "$here/make_control_flow.py" "$out/p2"
"$py2" "$here/make_control_flow_grad.py" "$out/p2grad"
"$py2" "$here/make_transformer_models.py" "$out/p2transformer"
FLAGS_enable_pir_api=0 "$py3" "$here/make_rnn_models.py" "$out/rnn3"
"$py2" "$here/make_rnn_models.py" "$out/rnn2"
