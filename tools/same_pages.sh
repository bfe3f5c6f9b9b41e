#!/usr/bin/env bash
# What the reader sees, drawn twice from the same stored results: by BASE's code and by this checkout's. Every figure
# (PNG and PDF), the README's results block (between its markers) and docs/results.md, compared byte for byte; the
# module paths a page names are mapped first (MOVED: old → new), since a page that says where the code lives must
# follow it.
#   bash tools/same_pages.sh BASE [PRESET]     (BASE: a commit; PRESET: demo)
# Both draw from BASE's results/ (the starting results), with this machine's world (THESIS_DATA) for the gallery.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bash tools/same_pages.sh BASE [PRESET]}; preset=${2:-demo}
PY=${PYTHON:-.venv/bin/python}; case $PY in /*) ;; *) PY=$PWD/$PY ;; esac
work=$(mktemp -d); trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add --quiet --detach "$work/base" "$base"
cp -R "$work/base/results" "$work/results"
MOVED='s#study/statistics/item_agreement.py#study/runs/item_agreement.py#g; s#study/statistics/#study/claims/#g; s#study/reporting/#study/pages/#g; s#study\.statistics\.#study.claims.#g; s#study\.reporting\.#study.pages.#g; s#study/full_scale/#full_scale/#g; s#study\.full_scale\.#full_scale.#g'
draw() {   # draw TREE OUT: the figures, the README block and docs/results.md by TREE's code into OUT
  local tree=$1 out=$2 pkg=pages; mkdir -p "$out"
  [ -d "$tree/thesis_lib/study/pages" ] || pkg=reporting                  # the package's name before the stages
  cp "$tree/README.md" "$tree/docs/results.md" "$out/"            # restored below: the report rewrites them in place
  (cd "$tree" && export THESIS_PROGRESS=0 THESIS_RESULTS="$work/results" THESIS_FIGURES="$out/figures" MPLBACKEND=Agg
   "$PY" -m "thesis_lib.study.$pkg.figures" --preset "$preset" >"$out/figures.log" 2>&1
   "$PY" -m "thesis_lib.study.$pkg.report" --preset "$preset" --update-readme >"$out/report.log" 2>&1)
  sed -n '/<!-- results:start -->/,/<!-- results:end -->/p' "$tree/README.md" > "$out/README.block.md"  # the block
  cp "$tree/docs/results.md" "$out/results.drawn.md"
  cp "$out/README.md" "$tree/README.md"; cp "$out/results.md" "$tree/docs/results.md"
}
draw "$work/base" "$work/old"
draw "$PWD" "$work/new"
sed -i "$MOVED" "$work/old/README.block.md" "$work/old/results.drawn.md"
status=0
for f in README.block.md results.drawn.md; do
  if cmp -s "$work/old/$f" "$work/new/$f"; then echo "same   $f"; continue; fi
  echo "DIFFER $f"; status=1
  diff "$work/old/$f" "$work/new/$f" > "$work/$f.diff" || true          # (a difference must not end the script)
  head -20 "$work/$f.diff"
done
files() { (cd "$1" && find . -name '*.png' -o -name '*.pdf' | sort); }     # every figure, PNG and PDF
old=$(files "$work/old/figures"); new=$(files "$work/new/figures")
[ "$old" = "$new" ] || { echo "DIFFER the figures drawn: $(diff <(echo "$old") <(echo "$new") | tr '\n' ' ')"; status=1; }
n=0; for f in $old; do n=$((n + 1)); cmp -s "$work/old/figures/$f" "$work/new/figures/$f" || { echo "DIFFER figure $f"; status=1; }; done
echo "$n figure files (PNG, PDF) compared; BASE $(git rev-parse --short "$base"), this checkout $(git rev-parse --short HEAD)$(git diff --quiet || echo ' + uncommitted changes')"
exit $status
