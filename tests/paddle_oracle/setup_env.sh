#!/usr/bin/env bash
# Create (if missing) a separate virtualenv holding PaddlePaddle, used as a test oracle.
#
#   setup_env.sh [VENV_DIR] [PADDLE_VERSION]
#
# Defaults: VENV_DIR=<repo>/.venv-paddle, PADDLE_VERSION=3.3.1.
# Paddle 2.6.x needs numpy<2; this script adds that pin automatically for 2.x.
#   setup_env.sh .venv-paddle  3.3.1    # legacy-IR programs (FLAGS_enable_pir_api=0), .pdmodel/.pdiparams
#   setup_env.sh .venv-paddle2 2.6.2    # control flow: recurrent / while / conditional_block
# Idempotent: if the venv already has that Paddle version it returns at once.
# Prints the venv's python path as its last line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${1:-$repo/.venv-paddle}"
version="${2:-3.3.1}"
case "$venv" in /*) ;; *) venv="$repo/$venv" ;; esac
py="${PYTHON:-python3}"

pkgs=("paddlepaddle==$version")
case "$version" in
  2.*) pkgs+=("numpy<2") ;;
esac

if [ -x "$venv/bin/python" ]; then
  have="$("$venv/bin/python" - <<'PY' 2>/dev/null || true
from importlib.metadata import version
print(version("paddlepaddle"))
PY
)"
  if [ "$have" = "$version" ]; then
    echo "paddlepaddle $version already in $venv" >&2
    echo "$venv/bin/python"
    exit 0
  fi
else
  "$py" -m venv "$venv"
fi

start=$SECONDS
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${pkgs[@]}" >&2
echo "installed ${pkgs[*]} into $venv in $((SECONDS - start)) s" >&2
echo "$venv/bin/python"
