#!/usr/bin/env bash
# The wheel folder that benchmarks/gpu.sh installs from on a GPU host without a package index. Run it on a machine
# that reaches PyPI, then copy the folder (${WHEELS:-wheels}, about 20 MB) to the host's checkout: git ignores it, so
# a copy of the repository's tracked files does not bring it.
#
# Wheels for CPython ${PY_VERSION:-3.12} on manylinux x86-64 (the GPU hosts' Python; pure-Python wheels are
# py3-none-any and match too) of what gpu.sh installs and everything they depend on: papermill and ipykernel
# (notebook 03), and setuptools + wheel, with which pip builds this repository's editable install in its isolated
# build environment. pip resolves the dependencies as for an empty environment, so some wheels duplicate packages
# the host already has; gpu.sh's pip then installs only the missing ones.
# Variables: PYTHON (python3, with pip), PY_VERSION, WHEELS.
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${PYTHON:-python3}" -m pip download --only-binary=:all: --python-version "${PY_VERSION:-3.12}" \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "${WHEELS:-wheels}" papermill ipykernel setuptools wheel
