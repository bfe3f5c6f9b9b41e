#!/usr/bin/env bash
# The GPU command, for a GPU host with no package index. One call of at most 10 minutes (benchmarks/gpu.py; its
# --budget is 540 s less this set-up), its sections in order, each under its own budget (measured on a bare H100
# host, budget): peak matmul (3 s, 15) | step batch 256 and 512 eager, peak memory; 512 out of memory is recorded, not
# accumulated (11 and 7 s, 25 each) | data path (7 s, 20) | data loader: webdataset shards, 8 workers, pairs/s beside
# the step's (17-21 s, 40) | cuda tests: pytest -m cuda tests/test_cuda.py (16-18 s, 40) | demo assets: the world and
# the demo's pretraining (65 s, 120) | demo run: results/demo/baseline/seed0 trained on the GPU, metrics vs the
# committed CPU ones within the declared tolerance (31-33 s, 80) | step batch 256 and 512 compiled (30-39 s, 60 each
# up to 140 with time left over).
# Optionally a second call: `bash benchmarks/gpu.sh --only-notebook --merge FIRST/gpu.json` (notebook 03 on the GPU).
# Results: ${OUT:-build/gpu}/gpu.{json,md}, rewritten after every section, and demo_run/ (the run's result, curve).
#   bash benchmarks/gpu.sh --rehearsal [ARGS]   instead: the full-scale path in miniature (make rehearsal's, on the GPU;
#                                               python -m thesis_lib.full_scale.rehearsal --device cuda ARGS), one call
#   bash benchmarks/gpu.sh --setup-only         the set-up below alone (CI runs it: tests/test_gpu_install.py)
#
# Which Python runs it, the first that applies:
#   1. ${GPU_VENV:-.venv-gpu}, once set up by 3. below (its .installed);
#   2. the venv `make setup` made, ${SETUP_VENV:-.venv}, where it imports torch built with CUDA, this checkout's
#      thesis_lib, papermill and pytest (`make setup TORCH_INDEX_URL=<CUDA index>`, then `.venv/bin/pip install
#      pytest`): used as it is, no wheel folder needed (a cluster's compute node with the login node's venv);
#   3. else, on a bare GPU host without a package index, the host's Python with its own torch and the wheel folder:
# the host's Python (PYTHON, python3) and its torch, torchvision, timm, transformers, scipy, seaborn, scikit-learn and
# statsmodels are used as they are (a CUDA build of torch never comes from the wheel folder). Set-up, once, into
# ${GPU_VENV:-.venv-gpu}:
#   1. `python3 -m venv --system-site-packages`, plus host-site.pth adding the host interpreter's own site-packages:
#      where python3 is itself a venv's (GPU images often ship torch in one), --system-site-packages alone would
#      expose its base interpreter's packages, without torch;
#   2. from the wheel folder ${WHEELS:-wheels} only (pip --no-index): papermill and ipykernel with what they need
#      that the host lacks (notebooks), pytest (the cuda tests; where neither the folder nor the host has it, that
#      section records the error and the others run), and this repository, editable, without dependencies
#      (--no-deps -e .; pip builds it with setuptools from the wheel folder), and a torchrun of its own (the
#      host's runs the host's Python, which lacks thesis_lib, and the recipe's generated scripts call torchrun).
#      thesis_lib's dependency `datasets` is left out: it is imported only to read Hugging Face data, which neither
#      command does.
# The wheel folder is made where PyPI is reachable: `bash benchmarks/gpu_wheels.sh` (python3 -m pip download
# --only-binary=:all: for the GPU host's CPython X.Y on manylinux x86-64 ... -d wheels; about 20 MB), then brought
# along (git ignores it). Its Python version is the GPU host's, not environment.yml's: gpu_wheels.sh records it in
# the folder (python-version) and this script stops, in one line, where the host's Python is another.
# Variables: PYTHON (python3), SETUP_VENV, GPU_VENV, WHEELS, DEVICE (cuda), OUT (build/gpu); other arguments go to
# gpu.py (or, after --rehearsal, to the rehearsal).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
mode=gpu
case "${1:-}" in
  --rehearsal) mode=rehearsal; shift ;;
  --setup-only) mode=setup; shift ;;
esac
PY=${PYTHON:-python3}
VENV=${GPU_VENV:-.venv-gpu}
SETUP_VENV=${SETUP_VENV:-.venv}
WHEELS=${WHEELS:-wheels}
setup_venv=""                                      # why make setup's venv cannot be used ("" : it can)
if [ ! -f "$VENV/.installed" ]; then
  if [ -x "$SETUP_VENV/bin/python" ]; then
    setup_venv=$("$SETUP_VENV/bin/python" - "$PWD" 2>&1 <<'PROBE'
import importlib.util, pathlib, sys
missing = [m for m in ("torch", "thesis_lib", "papermill", "pytest") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"it cannot import {', '.join(missing)}")
import thesis_lib, torch
if torch.version.cuda is None:
    sys.exit(f"its torch {torch.__version__} is not a CUDA build (make setup TORCH_INDEX_URL=<CUDA index>)")
if pathlib.Path(thesis_lib.__file__).resolve().parent.parent != pathlib.Path(sys.argv[1]).resolve():
    sys.exit(f"its thesis_lib is another checkout's ({thesis_lib.__file__})")
PROBE
    ) && VENV=$SETUP_VENV || setup_venv=${setup_venv:-it does not run}
  else
    setup_venv="there is no $SETUP_VENV/bin/python"
  fi
fi
if [ ! -f "$VENV/.installed" ] && [ "$VENV" != "$SETUP_VENV" ]; then
  if [ ! -d "$WHEELS" ]; then
    echo "gpu.sh: no wheel folder '$WHEELS' and no package index here: make it where PyPI is reachable with" \
         "'bash benchmarks/gpu_wheels.sh' (python3 -m pip download ... -d $WHEELS), bring it along, or set WHEELS;" \
         "make setup's venv '$SETUP_VENV' is not usable: ${setup_venv##*$'\n'}" >&2
    exit 2
  fi
  host=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  made=$(cat "$WHEELS/python-version" 2>/dev/null || true)
  if [ -n "$made" ] && [ "$made" != "$host" ]; then
    echo "gpu.sh: the wheel folder '$WHEELS' holds wheels for Python $made ($WHEELS/python-version), this host's $PY" \
         "is $host: make it again where PyPI is reachable with Python $host (PYTHON=python$host bash" \
         "benchmarks/gpu_wheels.sh, or in docker python:$host)" >&2
    exit 2
  fi
  if ! "$PY" -c 'import torch, torchvision, timm, transformers' 2>/dev/null; then
    echo "gpu.sh: $PY cannot import torch, torchvision, timm and transformers; this command uses the host's" >&2
    exit 2
  fi
  if "$PY" -m venv --system-site-packages "$VENV"; then
    PIP=("$VENV/bin/python" -m pip)
  else                                             # no ensurepip: the host's pip installs into the venv
    "$PY" -m venv --system-site-packages --without-pip "$VENV"
    PIP=("$PY" -m pip --python "$VENV/bin/python")
  fi
  purelib=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$PY" -c 'import site; print("\n".join(f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()))' \
    > "$purelib/host-site.pth"
  "${PIP[@]}" install --quiet --no-index --find-links "$WHEELS" papermill ipykernel
  "${PIP[@]}" install --quiet --no-index --find-links "$WHEELS" pytest ||
    echo "gpu.sh: no pytest in '$WHEELS' (made before it was added?): the cuda tests section will fail; remake the" \
         "folder with 'bash benchmarks/gpu_wheels.sh'" >&2
  "${PIP[@]}" install --quiet --no-index --find-links "$WHEELS" --no-deps -e .
  if [ ! -e "$VENV/bin/torchrun" ]; then            # the host's torchrun runs the host's Python, without thesis_lib
    printf '#!/bin/sh\nexec "%s" -m torch.distributed.run "$@"\n' "$(cd "$VENV" && pwd)/bin/python" > "$VENV/bin/torchrun"
    chmod +x "$VENV/bin/torchrun"
  fi
  touch "$VENV/.installed"
fi
case "$mode" in
  setup) if [ "$VENV" = "$SETUP_VENV" ]; then echo "gpu.sh: uses make setup's $VENV as it is (torch with CUDA," \
           "thesis_lib from $PWD, papermill, pytest): no wheel folder needed"
         else echo "gpu.sh: set up $VENV ($VENV/bin/python imports thesis_lib from $PWD)"; fi; exit 0 ;;
  rehearsal) exec "$VENV/bin/python" -m thesis_lib.full_scale.rehearsal --device "${DEVICE:-cuda}" "$@" ;;
esac
exec "$VENV/bin/python" benchmarks/gpu.py --device "${DEVICE:-cuda}" --out "${OUT:-build/gpu}" \
  --budget $((540 - (SECONDS - start))) "$@"     # 540: gpu.py's DEFAULT_BUDGET, less this set-up
