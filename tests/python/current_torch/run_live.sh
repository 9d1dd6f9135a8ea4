#!/bin/sh
# Runs the live PyTorch cross-checks of this folder with the current-torch venv (./run.sh torch-venv creates it).
# Exit 77 (ctest SKIP_RETURN_CODE) when the venv or a torch >= 2.7 is missing.
venv=${GRADKIT_TORCH_VENV:-$HOME/.cache/gradkit/torch-venv}
python=$venv/bin/python
if [ ! -x "$python" ]; then
  echo "skipped: no python at $python (create the venv with ./run.sh torch-venv)"
  exit 77
fi
if ! "$python" -c 'import sys, numpy, pytest, torch
version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
sys.exit(0 if version >= (2, 7) else 1)'; then
  echo "skipped: $python has no numpy/pytest/torch >= 2.7"
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider "$(dirname "$0")"
