#!/usr/bin/env bash
# The wheel folder that benchmarks/gpu.sh installs from on a GPU host without a package index. Run it on a machine
# that reaches PyPI, then copy the folder (${WHEELS:-wheels}, about 20 MB) to the host's checkout: git ignores it, so
# a copy of the repository's tracked files does not bring it.
#
# Wheels for the GPU host's interpreter, CPython X.Y on Linux x86-64 with glibc up to 2.${GLIBC_MINOR:-35} (pure-Python
# wheels are py3-none-any and match too), of what gpu.sh installs and everything they depend on:
# papermill and ipykernel (the notebooks), pytest (gpu.py's cuda tests), and setuptools + wheel, with which pip
# builds this repository's editable install in its isolated build environment. X.Y is the GPU host's Python, the one
# gpu.sh installs into (its PYTHON, python3: `python3 --version` on the host), not environment.yml's (that conda
# environment is another route, `make setup`'s): PY_VERSION names it, and by default it is the version of the Python
# that runs this script, which must be the host's anyway (below). It is written into the folder (python-version), and
# gpu.sh stops in one line on a host whose Python is another. The target is named in full to pip download:
# --python-version, --implementation cp, --abi cpXY / abi3 / none, and every manylinux tag the host accepts
# (manylinux_2_5 ... manylinux_2_${GLIBC_MINOR:-35}, manylinux1/2010/2014, linux): pip takes a wheel only if one of its
# tags is listed, and a package whose Linux wheels carry only, say, manylinux_2_34 would otherwise be missing.
# pip evaluates the *dependencies'* environment markers (sys_platform, platform_machine, python_version) for the
# machine it runs on, not for --platform / --python-version (pypa/pip#11664): run on macOS or Windows, or with
# another Python, Linux-only or version-specific dependencies would silently go missing. So this script runs only
# where the markers come out as on the host: Linux x86-64 with the host's Python X.Y (elsewhere, e.g. for a host with
# Python 3.12:   docker run --rm -v "$PWD":/w -w /w python:3.12 bash benchmarks/gpu_wheels.sh ).
# pip resolves the dependencies as for an empty environment, so some wheels duplicate packages the host already
# has; gpu.sh's pip then installs only the missing ones.
# Variables: PYTHON (python3, with pip), PY_VERSION, GLIBC_MINOR (the host's glibc 2.N: `ldd --version`), WHEELS.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TARGET=${PY_VERSION:-$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')}
GLIBC_MINOR=${GLIBC_MINOR:-35}
here=$("$PY" -c 'import platform, sys; print(sys.platform, platform.machine(), "%d.%d" % sys.version_info[:2])')
if [ "$here" != "linux x86_64 $TARGET" ]; then
  echo "gpu_wheels.sh: this is $here, the GPU host is 'linux x86_64 $TARGET': pip would resolve the dependencies'" \
       "markers for this machine (pypa/pip#11664) and leave Linux-only ones out; run it on Linux x86-64 with Python" \
       "$TARGET (PYTHON=python$TARGET), e.g. docker run --rm -v \"\$PWD\":/w -w /w python:$TARGET bash" \
       "benchmarks/gpu_wheels.sh" >&2
  exit 2
fi
abi=cp${TARGET/./}
platforms=(--platform linux_x86_64 --platform manylinux1_x86_64 --platform manylinux2010_x86_64
           --platform manylinux2014_x86_64)
for ((n = GLIBC_MINOR; n >= 5; n--)); do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
"$PY" -m pip download --only-binary=:all: --python-version "$TARGET" --implementation cp \
  --abi "$abi" --abi abi3 --abi none "${platforms[@]}" -d "${WHEELS:-wheels}" \
  papermill ipykernel pytest setuptools wheel
echo "$TARGET" > "${WHEELS:-wheels}/python-version"          # gpu.sh checks the host's Python against it
echo "gpu_wheels.sh: wheels for CPython $TARGET in ${WHEELS:-wheels}/: for a GPU host whose Python is $TARGET"
