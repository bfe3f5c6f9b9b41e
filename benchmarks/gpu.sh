#!/usr/bin/env bash
# One call on a lent GPU host (at most 9 minutes on one H100): set up .venv from this repository's files
# (pyproject.toml; torch from the host's package index or wheel cache), then measure. Results: ${OUT:-build/gpu}/gpu.{json,md}.
set -euo pipefail
cd "$(dirname "$0")/.."
make setup >/dev/null
exec .venv/bin/python benchmarks/gpu.py --device "${DEVICE:-cuda}" --out "${OUT:-build/gpu}" "$@"
